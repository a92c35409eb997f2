package upstreamtest

import (
	"testing"

	"github.com/tidwall/gjson"
)

// With WithDescribe the default answer names what the fake received, so a
// first run of Recall shows the earlier turns it injected.
func TestDescribeSaysWhatWasReceived(t *testing.T) {
	for _, tt := range []struct {
		name     string
		opts     []Option
		messages string
		want     string
	}{
		{"plain echo", nil, `[{"role":"user","content":"hi"}]`, "echo: hi"},
		{"one message", []Option{WithDescribe()}, `[{"role":"user","content":"hi"}]`, "echo: hi [received 1 message: user]"},
		{"a history", []Option{WithDescribe()},
			`[{"role":"system","content":"s"},{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]`,
			"echo: c [received 4 messages: system, user, assistant, user]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := NewTB(t, tt.opts...)
			resp := post(t, s, "/chat/completions", `{"model":"gpt-4o","messages":`+tt.messages+`}`)
			if got := gjson.GetBytes(readAll(t, resp), "choices.0.message.content").Str; got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
