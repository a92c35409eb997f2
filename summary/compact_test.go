package summary

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/recallproxy/recall/history"
)

// Compact (POST /v1/responses/compact) covers every turn, the newest
// keep_turns too and under the trigger, with the request's model; a
// second one with nothing new makes no call.
func TestCompactCoversEveryTurn(t *testing.T) {
	f := newFixture(t, nil) // trigger 4, keep 1
	f.write("c", 1, 2, func(i int) string { return fmt.Sprint("fact ", i) })
	m, err := New(Config{Store: f.store, Tenants: staticTenants{f.set}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	k := history.Key{Tenant: "acme", Conversation: "c"}
	meta, err := m.Compact(context.Background(), k, "gpt-4.1-mini", "")
	if err != nil {
		t.Fatal(err)
	}
	if s := meta.Summary; s == nil || s.Through != 4 || s.Turns != 2 || s.Model != "gpt-4.1-mini" {
		t.Fatalf("summary: got %+v, want both turns (through 4) by the request's model", s)
	}
	calls := f.up.SummaryCalls()
	if len(calls) != 1 || !strings.Contains(string(calls[0].Body), "ok fact 2") {
		t.Fatalf("summariser calls: got %d, want one holding the newest turn", len(calls))
	}
	if _, err := m.Compact(context.Background(), k, "gpt-4.1-mini", ""); err != nil {
		t.Fatal(err)
	}
	if n := len(f.up.SummaryCalls()); n != 1 {
		t.Errorf("a second compaction with nothing new: %d calls, want none more", n)
	}
	if _, err := m.Compact(context.Background(), history.Key{Tenant: "acme", Conversation: "none"}, "m", ""); err != ErrNotFound {
		t.Errorf("an unknown conversation: got %v, want ErrNotFound", err)
	}
}
