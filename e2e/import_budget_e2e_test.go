package e2e

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recallproxy/recall/internal/e2etest"
)

// TestImportedTokenCountsCannotBypassTheBudget imports a 100 KB message
// that claims to be 1 token: Recall counts it itself, so the budget
// drops its turn (gpt-4's 8k window cannot hold it beside the request
// either, see plan's floor) and X-Recall-Context-Tokens counts what was
// sent.
func TestImportedTokenCountsCannotBypassTheBudget(t *testing.T) {
	const budget = 2000
	h := e2etest.New(t, e2etest.Options{Global: withBudget(budget)})
	big := strings.Repeat("lorem ipsum dolor ", 100<<10/18)
	at := time.Now().Add(-time.Hour).Unix()
	line := func(seq int, msg string) string {
		return fmt.Sprintf(`{"object":"conversation.message","seq":%d,"turn":1,"episode":1,"created_at":%d,"tokens":1,"flags":[],"message":%s}`, seq, at, msg)
	}
	file := line(1, `{"role":"user","content":"`+big+`"}`) + "\n" + line(2, `{"role":"assistant","content":"noted"}`) + "\n"
	if a := h.API(key, "", "POST", convBase+"big-1/import", file, "application/x-ndjson"); a.Status != 201 {
		t.Fatalf("import: %d %s", a.Status, a.Body)
	}
	r := h.Post("/v1/chat/completions", key, "big-1", `{"model":"gpt-4","messages":[{"role":"user","content":"and now?"}]}`)
	if r.Status != 200 {
		t.Fatalf("chat: %d %s", r.Status, r.Body)
	}
	h.WaitDone("big-1")
	sent := e2etest.RenderAll(h.Up.Last().Messages)
	if want := []string{"user:and now?"}; !slices.Equal(sent, want) {
		t.Errorf("sent %d messages (%.40q...), want %q: the imported turn is over the budget", len(sent), sent, want)
	}
	got, err := strconv.Atoi(r.Header.Get("X-Recall-Context-Tokens"))
	if err != nil || got > budget {
		t.Errorf("got X-Recall-Context-Tokens %q, want at most the budget %d", r.Header.Get("X-Recall-Context-Tokens"), budget)
	}
	if want := h.CountTokens([]byte(`{"role":"user","content":"and now?"}`)); got < want {
		t.Errorf("got X-Recall-Context-Tokens %d, want at least the sent message's %d", got, want)
	}
}
