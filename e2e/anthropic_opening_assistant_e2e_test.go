package e2e

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/e2etest"
)

// A Responses or chat-completions client whose input opens with the
// assistant's messages (its own history, as the Open Responses suite's
// assistant-phase test sends it), bridged to an Anthropic upstream, which
// refuses a first message that is not the user's: the upstream gets a
// placeholder user message first and the client its answer, and the
// stored conversation holds what the client sent, not the placeholder.
func TestAnthropicBridgeOpensWithUser(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	cases := []struct {
		name, path, body string
	}{
		{"responses", "/v1/responses", `{"model":"claude-x","input":[` +
			`{"type":"message","role":"assistant","phase":"commentary","content":"I should answer with the saved number."},` +
			`{"type":"message","role":"assistant","phase":"final_answer","content":"The number is four."},` +
			`{"type":"message","role":"user","content":"Repeat only the number."}]}`},
		{"chat", "/v1/chat/completions", `{"model":"claude-x","messages":[` +
			`{"role":"system","content":"Be brief."},` +
			`{"role":"assistant","content":"The number is four."},` +
			`{"role":"user","content":"Repeat only the number."}]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conv := "opening-" + c.name
			res := h.Post(c.path, "rk-an", conv, c.body)
			if res.Status != 200 {
				t.Fatalf("POST %s: status %d: %s", c.path, res.Status, res.Body)
			}
			if got := answerText(res.Body); got != "echo: Repeat only the number." {
				t.Errorf("answer: got %q, want the fake's echo of the user's message", got)
			}
			h.WaitDone(conv)
			up := h.Up.Last()
			if up.Path != "/v1/messages" {
				t.Fatalf("upstream path: got %s, want /v1/messages", up.Path)
			}
			msgs := gjson.GetBytes(up.Body, "messages").Array()
			if len(msgs) != 3 {
				t.Fatalf("upstream messages: got %s, want the placeholder, the assistant's, the user's", gjson.GetBytes(up.Body, "messages").Raw)
			}
			if got := msgs[0].Raw; got != `{"role":"user","content":[{"type":"text","text":"."}]}` {
				t.Errorf("upstream message 0: got %s, want the placeholder user message", got)
			}
			if msgs[1].Get("role").Str != "assistant" || !strings.Contains(msgs[1].Raw, "The number is four.") {
				t.Errorf("upstream message 1: got %s, want the assistant's", msgs[1].Raw)
			}
			for i, m := range h.Stored("an", conv) {
				if strings.Contains(string(m.Raw), `"text":"."`) {
					t.Errorf("stored message %d: got %s, want no placeholder", i, m.Raw)
				}
			}
		})
	}
}

// answerText is the text of a Response object's or a chat completion's
// answer.
func answerText(body string) string {
	if t := gjson.Get(body, "choices.0.message.content"); t.Exists() {
		return t.Str
	}
	return gjson.Get(body, `output.#(type=="message").content.0.text`).Str
}
