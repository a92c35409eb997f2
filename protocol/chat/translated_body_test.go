package chat

import (
	"testing"

	"github.com/recallproxy/recall/wire"
)

// TestAppendBodyBuildsAFreshBody: a request that did not come in as chat
// completions, or came with no body (Recall's own, the summariser's),
// gets a body of its own, its token cap as max_completion_tokens (never
// the deprecated max_tokens reasoning models refuse) and "stream" said
// either way.
func TestAppendBodyBuildsAFreshBody(t *testing.T) {
	sys := []byte(`{"role":"system","content":"be brief"}`)
	user := []byte(`{"role":"user","content":"hi"}`)
	tests := []struct {
		name string
		req  wire.Request
		want string
	}{
		{"recall's own request", wire.Request{Protocol: wire.ChatCompletions, Model: "m", MaxTokens: 50},
			`{"model":"m","messages":[` + string(sys) + `,` + string(user) + `],"stream":false,"max_completion_tokens":50}`},
		{"translated, streamed, no cap", wire.Request{Protocol: wire.Messages, Body: []byte(`{"max_tokens":9}`), Model: "m", Stream: true},
			`{"model":"m","messages":[` + string(sys) + `,` + string(user) + `],"stream":true,"stream_options":{"include_usage":true}}`},
		{"translated with a cap", wire.Request{Protocol: wire.Gemini, Body: []byte(`{}`), Model: "m", MaxTokens: 7},
			`{"model":"m","messages":[` + string(sys) + `,` + string(user) + `],"stream":false,"max_completion_tokens":7}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Protocol{}.AppendBody(nil, &tt.req, [][]byte{sys}, [][]byte{user})
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
