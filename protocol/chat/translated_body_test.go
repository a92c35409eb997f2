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

// A fresh body is written straight into dst: into one with room it
// allocates nothing (the messages used to be joined into a body of
// their own first, and copied), and the commas fall right whether
// instructions, messages or both are there.
func TestAppendBodyWritesIntoDst(t *testing.T) {
	sys, user, asst := []byte(`{"role":"system","content":"s"}`), []byte(`{"role":"user","content":"u"}`), []byte(`{"role":"assistant","content":"a"}`)
	req := wire.Request{Protocol: wire.Messages, Body: []byte(`{}`), Model: "m"}
	for _, tt := range []struct {
		name         string
		instr, msgs  [][]byte
		wantMessages string
	}{
		{"messages only", nil, [][]byte{user, asst}, `[` + string(user) + `,` + string(asst) + `]`},
		{"instructions only", [][]byte{sys, sys}, nil, `[` + string(sys) + `,` + string(sys) + `]`},
		{"both", [][]byte{sys}, [][]byte{user, asst}, `[` + string(sys) + `,` + string(user) + `,` + string(asst) + `]`},
	} {
		got, err := Protocol{}.AppendBody(nil, &req, tt.instr, tt.msgs)
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"model":"m","messages":` + tt.wantMessages + `,"stream":false}`; string(got) != want {
			t.Errorf("%s: got  %s\nwant %s", tt.name, got, want)
		}
	}
	dst := make([]byte, 0, 4096)
	instr, msgs := [][]byte{sys}, [][]byte{user, asst, user, asst}
	if allocs := testing.AllocsPerRun(100, func() {
		if _, err := (Protocol{}).AppendBody(dst[:0], &req, instr, msgs); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("AppendBody of a fresh body into a buffer with room: %v allocations, want 0", allocs)
	}
}
