package summary

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/protocol/chat"
)

// compactTurn is a change that appends one turn of text after meta.
func compactTurn(meta history.Meta, text string) history.Change {
	next := max(meta.NextSeq, 1)
	u := fmt.Appendf(nil, `{"role":"user","content":%q}`, text)
	a := fmt.Appendf(nil, `{"role":"assistant","content":%q}`, "ok "+text)
	return history.Change{Version: meta.Version, Model: "gpt-4o", Now: time.Now().UnixNano(), Append: []history.Message{
		{Seq: next, Role: "user", Raw: u, Hash: chat.Hash(u), Tokens: 10},
		{Seq: next + 1, Role: "assistant", Raw: a, Hash: chat.Hash(a), Tokens: 10},
	}}
}

// Compact (POST /v1/responses/compact) covers every turn, the newest
// keep_turns too and under the trigger, the request's own turn with them,
// with the request's model; the turn and the summary land in one commit.
// A second one with nothing new makes no call.
func TestCompactCoversEveryTurn(t *testing.T) {
	f := newFixture(t, nil) // trigger 4, keep 1
	f.write("c", 1, 2, func(i int) string { return fmt.Sprint("fact ", i) })
	m := f.manager()
	k := history.Key{Tenant: "acme", Conversation: "c"}
	before := f.meta("c")
	meta, err := m.Compact(context.Background(), k, "gpt-4.1-mini", "", compactTurn(before, "fact 3"))
	if err != nil {
		t.Fatal(err)
	}
	if s := meta.Summary; s == nil || s.Through != 6 || s.Turns != 3 || s.Model != "gpt-4.1-mini" {
		t.Fatalf("summary: got %+v, want the three turns (through 6) by the request's model", s)
	}
	if meta.NextSeq != 7 || meta.Version != before.Version+1 {
		t.Errorf("after: next %d version %d, want the turn committed once (7, %d)", meta.NextSeq, meta.Version, before.Version+1)
	}
	calls := f.up.SummaryCalls()
	if len(calls) != 1 || !strings.Contains(string(calls[0].Body), "ok fact 2") || !strings.Contains(string(calls[0].Body), "ok fact 3") {
		t.Fatalf("summariser calls: got %d, want one holding the newest stored turn and the request's", len(calls))
	}
	if _, err := m.Compact(context.Background(), k, "gpt-4.1-mini", "", history.Change{}); err != nil {
		t.Fatal(err)
	}
	if n := len(f.up.SummaryCalls()); n != 1 {
		t.Errorf("a second compaction with nothing new: %d calls, want none more", n)
	}
	if _, err := m.Compact(context.Background(), history.Key{Tenant: "acme", Conversation: "none"}, "m", "", history.Change{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown conversation: got %v, want ErrNotFound", err)
	}
}

// A compaction whose summariser fails, or whose turn was planned from
// another version, commits nothing: neither the turn nor a summary.
func TestFailedCompactCommitsNothing(t *testing.T) {
	f := newFixture(t, nil)
	f.write("c", 1, 1, func(i int) string { return fmt.Sprint("fact ", i) })
	m := f.manager()
	k := history.Key{Tenant: "acme", Conversation: "c"}
	before := f.meta("c")
	f.up.EnqueueSummary(upstreamtest.Reply{Status: 500})
	if _, err := m.Compact(context.Background(), k, "m", "", compactTurn(before, "fact 2")); err == nil {
		t.Fatal("a failed summariser: got no error")
	}
	stale := before
	stale.Version--
	if _, err := m.Compact(context.Background(), k, "m", "", compactTurn(stale, "fact 2")); !errors.Is(err, history.ErrConflict) {
		t.Errorf("a turn of another version: got %v, want ErrConflict", err)
	}
	if a := f.meta("c"); a.NextSeq != before.NextSeq || a.Version != before.Version || a.Summary != nil {
		t.Errorf("after the failures: next %d version %d summary %v, want %d %d none", a.NextSeq, a.Version, a.Summary, before.NextSeq, before.Version)
	}
}
