package responses

import (
	"testing"

	"github.com/recallproxy/recall/protocol/internal/prototest"
)

// Calls and Results skip the parse of an item that cannot name a
// call_id (most of them): whatever the spelling, they answer what the
// parse reads.
func TestCallsAndResultsHoweverSpelled(t *testing.T) {
	for _, tt := range []struct {
		name, raw      string
		calls, results []string
	}{
		{"a message", `{"role":"user","content":"The trend holds."}`, nil, nil},
		{"a call", `{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}`, []string{"c1"}, nil},
		{"a call's key escaped", `{"type":"function_call","call\u005fid":"c1","name":"f","arguments":"{}"}`, []string{"c1"}, nil},
		{"a call's type escaped", `{"type":"function\u005fcall","call_id":"c1","name":"f","arguments":"{}"}`, []string{"c1"}, nil},
		{"an output", `{"type":"function_call_output","call_id":"c1","output":"ok"}`, nil, []string{"c1"}},
		{"an output spaced", `{ "type" : "function_call_output" , "call_id" : "c1" }`, nil, []string{"c1"}},
		{"the key named in text", `{"role":"user","content":"a \"call_id\" names the call"}`, nil, nil},
		{"a shell call", `{"type":"local_shell_call","call_id":"c1"}`, nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			raw := []byte(tt.raw)
			prototest.IDs(t, Codec{}, raw, tt.calls, tt.results)
		})
	}
}
