package badgerstore

import (
	"context"
	"strings"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/store/storetest"
)

// summarised opens a store holding one conversation of turns turns whose
// first half a summary of a few kilobytes covers.
func summarised(t testing.TB, turns int) (*Store, history.Key, history.Meta) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	k := history.Key{Tenant: "t", Conversation: "c"}
	var msgs []history.Message
	for range turns {
		msgs = append(msgs, textMsg("user", "walrus question"), textMsg("assistant", "walrus answer"))
	}
	m := storetest.MustCommit(t, s, k, history.Change{Append: msgs})
	m = storetest.MustCommit(t, s, k, history.Change{Version: m.Version, Summary: &history.SummaryChange{Incarnation: m.Incarnation,
		Summary: history.Summary{Text: strings.Repeat("a long summary ", 300), Through: uint64(turns), Turns: turns / 2, At: 7}}})
	return s, k, m
}

// Messages reads a conversation's bounds and flags, never its summary's
// text (a summary job reads its messages right after loading the text,
// and a summary is kilobytes); a listing page after a conversation reads
// its listing entry's place only. Load, which answers the summary, reads
// the text.
func TestMessagesLeaveTheSummaryTextUnread(t *testing.T) {
	s, k, m := summarised(t, 8)
	ctx := context.Background()
	before := summaryTextReads.Load()
	n := 0
	if err := s.Messages(ctx, k, m.Summary.Through, false, func(history.Message) bool { n++; return true }); err != nil {
		t.Fatal(err)
	}
	if n != 8 {
		t.Fatalf("Messages after the summary read %d messages, want 8", n)
	}
	if _, _, err := s.List(ctx, "t", history.ListQuery{After: k.Conversation, Limit: 10}); err != nil {
		t.Fatal(err)
	}
	if got := summaryTextReads.Load() - before; got != 0 {
		t.Errorf("Messages and a page after the conversation read the summary's text %d times, want 0", got)
	}
	snap, err := s.Load(ctx, k, history.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Meta.Summary == nil || snap.Meta.Summary.Text != m.Summary.Text {
		t.Fatalf("Load's summary = %+v, want the stored text", snap.Meta.Summary)
	}
	if got := summaryTextReads.Load() - before; got != 1 {
		t.Errorf("Load read the summary's text %d times, want 1", got)
	}
}

// BenchmarkMessagesAfterSummary is a summary job's read of the turns its
// summary does not cover yet.
func BenchmarkMessagesAfterSummary(b *testing.B) {
	s, k, m := summarised(b, 8)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Messages(ctx, k, m.Summary.Through, false, func(history.Message) bool { return true }); err != nil {
			b.Fatal(err)
		}
	}
}
