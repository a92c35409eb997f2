package summary

import (
	"strings"
	"testing"
)

// fitsByBytes bounds a message's transcript line by its JSON's length
// plus 16: it must hold for every shape writeLine renders.
func TestTranscriptLineNoLongerThanItsJSON(t *testing.T) {
	for _, raw := range []string{
		`{"role":"user","content":"hi"}`,
		`{"content":"x"}`,
		`{"role":"assistant","refusal":"x"}`,
		`{"role":"user","content":"\u00e9\u00e9 \"quoted\" \n"}`,
		`{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
		`{"role":"tool","tool_call_id":"c1","content":"` + strings.Repeat("r", 2000) + `"}`,
		`{"role":"assistant","content":"` + strings.Repeat("long ", 2000) + `"}`,
	} {
		var b strings.Builder
		writeLine(&b, []byte(raw))
		if b.Len() > len(raw)+16 {
			t.Errorf("%.60s: the line has %d bytes, the JSON %d: fitsByBytes would undercount", raw, b.Len(), len(raw))
		}
	}
}
