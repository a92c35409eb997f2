package pgstore_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/pgstore"
)

// summarised commits turns and a summary of the first of them, whose
// text is long (as a summary of a thousand tokens is), and returns it.
func summarised(t *testing.T, s *pgstore.Store, k history.Key) string {
	t.Helper()
	text := strings.Repeat("The user plans a trip to Lisbon and asks about trains. ", 100)
	m := commit(t, s, k, history.Change{Append: turns(0, 3)})
	commit(t, s, k, history.Change{Summary: &history.SummaryChange{Incarnation: m.Incarnation, Epoch: m.Epoch,
		Summary: history.Summary{Text: text, Through: 2, Turns: 1, Tokens: 900, Model: "m", At: 1}}})
	return text
}

// plainAppend commits a turn against the stored metadata as Recall's
// chat path does (Base set: the one-statement commit when it can).
func plainAppend(t *testing.T, s *pgstore.Store, k history.Key, from int) history.Meta {
	t.Helper()
	snap, err := s.Load(testCtx(t), k, history.Query{})
	if err != nil {
		t.Fatal(err)
	}
	base := snap.Meta
	return commit(t, s, k, history.Change{Base: &base, Now: int64(base.Version+1) * 1e9, Append: turns(from, 1)})
}

// TestSummaryKeptApartFromTheMetadata: the metadata row's meta record
// holds no summary (a plain commit, rewriting meta, does not write the
// summary's kilobytes again); the summary lives in its own column and
// loads with the metadata, through plain commits too.
func TestSummaryKeptApartFromTheMetadata(t *testing.T) {
	s := open(t, pgtest.DB(t), pgstore.Options{})
	k := history.Key{Tenant: "t", Conversation: "apart"}
	text := summarised(t, s, k)
	for i := range 3 {
		plainAppend(t, s, k, 10+i)
	}
	var meta, summary []byte
	if err := s.Pool().QueryRow(testCtx(t), `SELECT meta, summary FROM recall_conversations WHERE tenant = $1 AND conversation = $2`,
		k.Tenant, k.Conversation).Scan(&meta, &summary); err != nil {
		t.Fatal(err)
	}
	if len(meta) >= len(text) || bytes.Contains(meta, []byte("Lisbon")) {
		t.Errorf("the meta record (%d bytes) holds the summary (%d bytes)", len(meta), len(text))
	}
	// What an earlier build would decode the row with: it must refuse it
	// rather than take it for a conversation without a summary.
	if _, err := history.UnmarshalMeta(meta); err == nil {
		t.Error("the meta column written split decodes as a whole record")
	}
	if !bytes.Contains(summary, []byte(text)) {
		t.Errorf("the summary column does not hold the summary: %d bytes", len(summary))
	}
	snap, err := s.Load(testCtx(t), k, history.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Meta.Summary == nil || snap.Meta.Summary.Text != text || snap.Meta.Summary.Through != 2 {
		t.Errorf("loaded summary %+v, want the committed one", snap.Meta.Summary)
	}
}

// TestSummaryInTheMetaRecordStillCounts: a row whose meta record holds
// the summary (written before schema version 7, or by a replica of an
// earlier build) loads with it, wins over a stale summary column, and
// keeps it through a plain commit, which writes the row split.
func TestSummaryInTheMetaRecordStillCounts(t *testing.T) {
	s := open(t, pgtest.DB(t), pgstore.Options{})
	ctx := testCtx(t)
	for _, stale := range []bool{false, true} {
		k := history.Key{Tenant: "t", Conversation: "older-" + map[bool]string{false: "null", true: "stale"}[stale]}
		summarised(t, s, k)
		snap, err := s.Load(ctx, k, history.Query{})
		if err != nil {
			t.Fatal(err)
		}
		m := snap.Meta
		m.Summary = &history.Summary{Text: "Written by an older build.", Through: 4, Turns: 2, Tokens: 7, Model: "m", At: 2}
		whole, err := history.MarshalMeta(&m)
		if err != nil {
			t.Fatal(err)
		}
		column := "NULL"
		if stale {
			column = "summary" // the one summarised wrote, now stale
		}
		if _, err := s.Pool().Exec(ctx, `UPDATE recall_conversations SET meta = $3, summary = `+column+`
WHERE tenant = $1 AND conversation = $2`, k.Tenant, k.Conversation, whole); err != nil {
			t.Fatal(err)
		}
		want := *m.Summary
		check := func(when string) {
			t.Helper()
			snap, err := s.Load(ctx, k, history.Query{})
			if err != nil {
				t.Fatal(err)
			}
			switch got := snap.Meta.Summary; {
			case got == nil:
				t.Errorf("%s (column %s): loaded no summary, want the meta record's", when, column)
			case *got != want:
				t.Errorf("%s (column %s): loaded a summary through %d (%d bytes of text), want the meta record's %+v",
					when, column, got.Through, len(got.Text), want)
			}
		}
		check("as written")
		plainAppend(t, s, k, 20)
		check("after a plain commit")
		var split bool
		if err := s.Pool().QueryRow(ctx, `SELECT summary IS NOT NULL AND get_byte(meta, 0) = 255 FROM recall_conversations
WHERE tenant = $1 AND conversation = $2`, k.Tenant, k.Conversation).Scan(&split); err != nil {
			t.Fatal(err)
		}
		if !split {
			t.Errorf("column %s: the plain commit did not write the row split", column)
		}
	}
}

// TestSummaryColumnIgnoredBesideAnOlderRecord: a replica of an earlier
// build that clears the summary (a hard forget of what it covered)
// writes a whole meta record without one and leaves the summary column
// as it was: the erased summary does not come back from the column.
func TestSummaryColumnIgnoredBesideAnOlderRecord(t *testing.T) {
	s := open(t, pgtest.DB(t), pgstore.Options{})
	ctx := testCtx(t)
	k := history.Key{Tenant: "t", Conversation: "cleared"}
	summarised(t, s, k)
	snap, err := s.Load(ctx, k, history.Query{})
	if err != nil {
		t.Fatal(err)
	}
	m := snap.Meta
	m.Summary = nil
	whole, err := history.MarshalMeta(&m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE recall_conversations SET meta = $3 WHERE tenant = $1 AND conversation = $2`,
		k.Tenant, k.Conversation, whole); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		snap, err := s.Load(ctx, k, history.Query{})
		if err != nil {
			t.Fatal(err)
		}
		if snap.Meta.Summary != nil {
			t.Errorf("%s: loaded the cleared summary back from its column (through %d)", when, snap.Meta.Summary.Through)
		}
	}
	check("as the earlier build left it")
	plainAppend(t, s, k, 30)
	check("after a plain commit")
	var column bool
	if err := s.Pool().QueryRow(ctx, `SELECT summary IS NOT NULL FROM recall_conversations WHERE tenant = $1 AND conversation = $2`,
		k.Tenant, k.Conversation).Scan(&column); err != nil {
		t.Fatal(err)
	}
	if column {
		t.Error("the plain commit, writing the row split, kept the cleared summary's column")
	}
}
