package pgstore_test

import (
	"errors"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/pgstore"
)

// TestCommitAgainstAStaleBase: a change whose Base is no longer the
// stored metadata never commits against it. A summary landed since (the
// Version unchanged) is kept, the change applied to the stored metadata;
// another turn committed since is a conflict, nothing written. A Base
// still current commits in one statement, and the result is the
// metadata the two-round-trip path makes.
func TestCommitAgainstAStaleBase(t *testing.T) {
	ctx := testCtx(t)
	s, rt := openCounted(t)
	ref := open(t, pgtest.DB(t), pgstore.Options{}) // the same changes, without Base
	k := history.Key{Tenant: "t", Conversation: "c"}
	both := func(c history.Change, base *history.Meta) (history.Meta, error) {
		t.Helper()
		want, err := ref.Commit(ctx, k, c)
		if err != nil {
			t.Fatal(err)
		}
		c.Base = base
		rt.take()
		got, err := s.Commit(ctx, k, c)
		if err != nil {
			return got, err
		}
		if n := rt.take(); base != nil && n != 1 && got.Summaries == base.Summaries {
			t.Errorf("commit on a current Base: %d round trips, want 1", n)
		}
		gb, _ := history.MarshalMeta(&got)
		wb, _ := history.MarshalMeta(&want)
		if string(gb) != string(wb) {
			t.Errorf("got metadata %+v, want %+v (as without Base)", got, want)
		}
		return got, nil
	}

	m0 := history.Meta{}
	m1, err := both(history.Change{Append: turns(0, 1), Now: 1e9, Incarnation: 5}, &m0)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := both(history.Change{Version: m1.Version, Append: turns(1, 1), Now: 2e9}, &m1)
	if err != nil {
		t.Fatal(err)
	}
	sum := history.Change{Summary: &history.SummaryChange{Incarnation: m2.Incarnation, Epoch: m2.Epoch,
		Summary: history.Summary{Text: "they said hello", Through: 2, Turns: 1, Tokens: 4, At: 3e9}}}
	if _, err := both(sum, nil); err != nil {
		t.Fatal(err)
	}
	// m2 is stale now: the summary bumped Summaries, not Version.
	m3, err := both(history.Change{Version: m2.Version, Append: turns(2, 1), Now: 4e9}, &m2)
	if err != nil {
		t.Fatalf("commit on a Base a summary landed after: %v", err)
	}
	if m3.Summary == nil || m3.Summary.Text != "they said hello" || m3.Summaries != 1 || m3.Messages != 6 {
		t.Fatalf("got metadata %+v, want the summary kept and 6 messages", m3)
	}
	// m2 again: another turn landed since.
	_, err = s.Commit(ctx, k, history.Change{Version: m2.Version, Base: &m2, Append: turns(3, 1), Now: 5e9})
	if !errors.Is(err, history.ErrConflict) {
		t.Fatalf("commit on a Base a turn landed after: got %v, want ErrConflict", err)
	}
	snap, err := s.Load(ctx, k, history.Query{MinMessages: 100})
	if err != nil || len(snap.Tail) != 6 || snap.Meta.Version != m3.Version {
		t.Fatalf("got %d messages at version %d (%v), want 6 at %d: the conflict wrote nothing", len(snap.Tail), snap.Meta.Version, err, m3.Version)
	}
}

// TestSummaryOnABase: a summary computed against a Base still current
// lands in one statement; against one a turn moved on since, it lands on
// the stored metadata (the turn kept); one stale against the stored
// summary is refused, nothing written. Each result is the metadata the
// same change makes without Base.
func TestSummaryOnABase(t *testing.T) {
	ctx := testCtx(t)
	s, rt := openCounted(t)
	ref := open(t, pgtest.DB(t), pgstore.Options{})
	k := history.Key{Tenant: "t", Conversation: "sum"}
	both := func(c history.Change, base *history.Meta, trips int) (history.Meta, error) {
		t.Helper()
		want, werr := ref.Commit(ctx, k, c)
		if base != nil {
			c.Version, c.Base = base.Version, base
		}
		rt.take()
		got, err := s.Commit(ctx, k, c)
		if n := rt.take(); trips > 0 && n != trips {
			t.Errorf("%d round trips, want %d", n, trips)
		}
		if (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
			t.Fatalf("got error %v, want %v (as without Base)", err, werr)
		}
		gb, _ := history.MarshalMeta(&got)
		wb, _ := history.MarshalMeta(&want)
		if string(gb) != string(wb) {
			t.Errorf("got metadata %+v, want %+v (as without Base)", got, want)
		}
		return got, err
	}
	summary := func(m history.Meta, base, through uint64, text string) history.Change {
		return history.Change{Now: 9e9, Summary: &history.SummaryChange{Incarnation: m.Incarnation, Epoch: m.Epoch, Base: base,
			Summary: history.Summary{Text: text, Through: through, Turns: int(through / 2), Tokens: 4, At: 3e9}}}
	}
	m1, _ := both(history.Change{Append: turns(0, 2), Now: 1e9, Incarnation: 5}, nil, 0)
	m2, _ := both(history.Change{Version: m1.Version, Append: turns(2, 2), Now: 2e9}, nil, 0)

	m3, err := both(summary(m2, 0, 2, "the first"), &m2, 1)
	if err != nil || m3.Summaries != 1 || m3.Summary.Text != "the first" {
		t.Fatalf("on a current Base: %+v, %v", m3, err)
	}
	// A turn lands after the job read m3.
	m4, _ := both(history.Change{Version: m3.Version, Append: turns(4, 1), Now: 4e9}, nil, 0)
	m5, err := both(summary(m3, 2, 6, "the second"), &m3, 0)
	if err != nil || m5.Summaries != 2 || m5.Summary.Text != "the second" || m5.Messages != m4.Messages {
		t.Fatalf("on a Base a turn moved on: %+v, %v; want the summary and %d messages", m5, err, m4.Messages)
	}
	// Made from the first summary again: stale.
	if _, err := both(summary(m3, 2, 8, "late"), &m3, 0); !errors.Is(err, history.ErrStale) {
		t.Fatalf("a summary made from a replaced one: %v, want ErrStale", err)
	}
	snap, err := s.Load(ctx, k, history.Query{})
	if err != nil || snap.Meta.Summary.Text != "the second" || snap.Meta.Summaries != 2 {
		t.Fatalf("stored: %+v, %v", snap.Meta.Summary, err)
	}
}
