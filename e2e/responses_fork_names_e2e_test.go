package e2e

import (
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/e2etest"
)

// TestForkUnderANameStaysAddressable: a fork made under a conversation
// name (the X-Conversation-ID header or the /c/{id} prefix) is named
// after it (<name>:fork-<hex>). Chaining by the fork's response ids under
// the same name continues the fork; the name's own latest response still
// continues the original; the fork's id names it directly too.
func TestForkUnderANameStaysAddressable(t *testing.T) {
	for _, how := range []string{"header", "path"} {
		t.Run(how, func(t *testing.T) {
			h := e2etest.New(t, threeUpstreams())
			client := h.Client("rk-oa", "named")
			if how == "path" {
				client = h.Client("rk-oa", "", option.WithBaseURL(h.URL+"/c/named/v1/"))
			}
			r1 := ask(t, client, "one", "")
			r2 := ask(t, client, "two", r1.ID)
			f := ask(t, client, "fork", r1.ID)
			if !strings.HasPrefix(f.Conversation.ID, "named:fork-") {
				t.Errorf("fork's conversation: got %q, want named:fork-…", f.Conversation.ID)
			}
			f2 := ask(t, client, "fork two", f.ID)
			if f2.Conversation.ID != f.Conversation.ID {
				t.Errorf("chained on the fork under its name: in %q, want the fork %q", f2.Conversation.ID, f.Conversation.ID)
			}
			want := []string{"user: one", "assistant: echo: one", "user: fork", "assistant: echo: fork", "user: fork two"}
			wantTexts(t, "fork's second upstream input", h.Up.Last().Messages, want)
			if r3 := ask(t, client, "three", r2.ID); r3.Conversation.ID != "named" {
				t.Errorf("chained on the original's latest: in %q, want named", r3.Conversation.ID)
			}
			ask(t, h.Client("rk-oa", f.Conversation.ID), "fork three", "")
			want = append(want, "assistant: echo: fork two", "user: fork three")
			wantTexts(t, "the fork by its own id", h.Up.Last().Messages, want)
		})
	}
}

// TestToolLessResponseInAnAgentsConversationChains: under a name whose
// main thread sends tools (an agent's), a Responses request without tools
// is no turn of that thread (package thread's rule 3), but a request that
// did not ask store:false is stored as OpenAI stores it: in a fork of the
// name of its own, holding only its turn, so that chaining on it under
// the name continues it (Open Responses' previous-response-id run in a
// named conversation beside its tool tests). The agent's thread neither
// gets nor keeps any of it; store:false stays a plain side call.
func TestToolLessResponseInAnAgentsConversationChains(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	const tools = `"tools":[{"type":"function","name":"read","parameters":{"type":"object","properties":{}}}]`
	for _, k := range respondingTenants {
		t.Run(k.name, func(t *testing.T) {
			name := "agent-" + strings.ReplaceAll(k.name, " ", "-")
			path := "/c/" + name + "/v1/responses"
			if st, r := call(t, h, k.key, "POST", path, `{"model":"gpt-4.1","input":"the code word is KIWI",`+tools+`}`); st != 200 {
				t.Fatalf("agent's turn: %d %s", st, r.Raw)
			}
			h.WaitDone(name)
			st, first := call(t, h, k.key, "POST", path, `{"model":"gpt-4.1","input":"remember papaya"}`)
			if st != 200 || first.Get("store").Type != gjson.True {
				t.Fatalf("tool-less request: %d store %s, want 200 stored", st, first.Get("store").Raw)
			}
			if got := strings.Join(texts(h.Up.Last().Messages), "|"); got != "user: remember papaya" {
				t.Errorf("tool-less request's upstream input: got %q, want its own message", got)
			}
			fork := first.Get("conversation.id").Str
			if !strings.HasPrefix(fork, name+":fork-") {
				t.Errorf("tool-less request's conversation: got %q, want %s:fork-…", fork, name)
			}
			h.WaitDone(fork)
			st, second := call(t, h, k.key, "POST", path, `{"model":"gpt-4.1","previous_response_id":"`+first.Get("id").Str+`","input":"which fruit?"}`)
			if st != 200 || second.Get("previous_response_id").Str != first.Get("id").Str || second.Get("conversation.id").Str != fork {
				t.Fatalf("chained on it under the name: %d %s", st, second.Raw)
			}
			if got, want := strings.Join(texts(h.Up.Last().Messages), "|"), "user: remember papaya|assistant: echo: remember papaya|user: which fruit?"; got != want {
				t.Errorf("chained request's upstream input: got %q, want %q", got, want)
			}
			h.WaitDone(fork)
			if st, _ := call(t, h, k.key, "POST", path, `{"model":"gpt-4.1","input":"what is the code word?",`+tools+`}`); st != 200 {
				t.Fatalf("agent's next turn: %d", st)
			}
			if got, want := strings.Join(texts(h.Up.Last().Messages), "|"), "user: the code word is KIWI|assistant: echo: the code word is KIWI|user: what is the code word?"; got != want {
				t.Errorf("agent's next turn's upstream input: got %q, want %q", got, want)
			}
			st, alone := call(t, h, k.key, "POST", path, `{"model":"gpt-4.1","store":false,"input":"a one-off"}`)
			if st != 200 || alone.Get("store").Type != gjson.False || alone.Get("conversation.id").Str == fork {
				t.Errorf("store:false tool-less request: %d store %s in %s, want a plain side call", st, alone.Get("store").Raw, alone.Get("conversation").Raw)
			}
			h.WaitDone(name)
			if n := len(h.Stored(strings.TrimPrefix(k.key, "rk-"), name)); n != 4 {
				t.Errorf("the agent's conversation holds %d messages, want its two turns' 4", n)
			}
		})
	}
}
