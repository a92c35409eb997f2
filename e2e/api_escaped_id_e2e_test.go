package e2e

import (
	"testing"

	"github.com/recallproxy/recall/internal/e2etest"
)

// TestTheAPIReadsEscapedConversationIDs: a conversation id holding ':' or
// '@' (the README's run:7) is addressed by the API escaped, as the
// inspector's page and every URL library write it: run%3A7.
func TestTheAPIReadsEscapedConversationIDs(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{})
	for _, id := range []string{"run:7", "ada@work"} {
		h.Say(key, id, "hello")
		escaped := map[string]string{"run:7": "run%3A7", "ada@work": "ada%40work"}[id]
		if a := h.API(key, "", "GET", "/recall/v1/conversations/"+escaped, ""); a.Status != 200 {
			t.Errorf("GET %s: %d %s", escaped, a.Status, a.Body)
		}
		if a := h.API(key, "", "GET", "/recall/v1/conversations/"+escaped+"/messages", ""); a.Status != 200 {
			t.Errorf("GET %s/messages: %d %s", escaped, a.Status, a.Body)
		}
	}
}
