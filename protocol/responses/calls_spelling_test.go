package responses

import (
	"testing"

	"github.com/recallproxy/recall/protocol/internal/prototest"
)

// Calls and Results skip the parse of an item that cannot name a
// call_id (most of them): whatever the spelling, they answer what the
// parse reads.
func TestCallsAndResultsHoweverSpelled(t *testing.T) {
	prototest.IDTable(t, Codec{}, []prototest.IDCase{
		{Name: "a message", Raw: `{"role":"user","content":"The trend holds."}`},
		{Name: "a call", Raw: `{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}`, Calls: []string{"c1"}},
		{Name: "a call's key escaped", Raw: `{"type":"function_call","call\u005fid":"c1","name":"f","arguments":"{}"}`, Calls: []string{"c1"}},
		{Name: "a call's type escaped", Raw: `{"type":"function\u005fcall","call_id":"c1","name":"f","arguments":"{}"}`, Calls: []string{"c1"}},
		{Name: "an output", Raw: `{"type":"function_call_output","call_id":"c1","output":"ok"}`, Results: []string{"c1"}},
		{Name: "an output spaced", Raw: `{ "type" : "function_call_output" , "call_id" : "c1" }`, Results: []string{"c1"}},
		{Name: "the key named in text", Raw: `{"role":"user","content":"a \"call_id\" names the call"}`},
		{Name: "a shell call", Raw: `{"type":"local_shell_call","call_id":"c1"}`},
	})
}
