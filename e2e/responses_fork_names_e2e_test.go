package e2e

import (
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/option"

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
			if got := texts(h.Up.Last().Messages); strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("fork's second upstream input: got %q, want %q", got, want)
			}
			if r3 := ask(t, client, "three", r2.ID); r3.Conversation.ID != "named" {
				t.Errorf("chained on the original's latest: in %q, want named", r3.Conversation.ID)
			}
			ask(t, h.Client("rk-oa", f.Conversation.ID), "fork three", "")
			want = append(want, "assistant: echo: fork two", "user: fork three")
			if got := texts(h.Up.Last().Messages); strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("the fork by its own id: got %q, want %q", got, want)
			}
		})
	}
}
