package pgstore_test

import (
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/pgstore"
)

// TestMessagesReadAboutWhatTheReaderTakes: a read of a conversation's
// messages that stops after a few (a page of the Conversations API's
// items, an item found by its id) costs the database about a bounded
// number of rows, not the rest of the conversation; a read of all of it
// still gets every message, oldest first, once.
func TestMessagesReadAboutWhatTheReaderTakes(t *testing.T) {
	sent := rowCounter{prefixes: []string{"SELECT seq, body FROM recall_messages"}} // reads of messages
	s := open(t, pgtest.DB(t), pgstore.Options{Tracer: &sent})
	ctx := testCtx(t)
	k := history.Key{Tenant: "t", Conversation: "long"}
	const n = 2000
	if _, err := s.Commit(ctx, k, history.Change{Append: turns(0, n/2)}); err != nil {
		t.Fatal(err)
	}
	for _, after := range []uint64{0, 1000, n - 10} {
		sent.take()
		var got []uint64
		err := s.Messages(ctx, k, after, false, func(m history.Message) bool {
			got = append(got, m.Seq)
			return len(got) < 3
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got[0] != after+1 || got[2] != after+3 {
			t.Errorf("after %d: got seqs %v, want %d to %d", after, got, after+1, after+3)
		}
		if rows := sent.take(); rows > 200 {
			t.Errorf("after %d: the database sent %d rows for 3 messages, want at most 200 (of %d)", after, rows, n-after)
		}
	}
	var seqs []uint64
	if err := s.Messages(ctx, k, 0, false, func(m history.Message) bool {
		seqs = append(seqs, m.Seq)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	for i, seq := range seqs {
		if seq != uint64(i+1) {
			t.Fatalf("whole read: message %d has seq %d, want %d (%d messages)", i, seq, i+1, len(seqs))
		}
	}
	if len(seqs) != n {
		t.Errorf("whole read: %d messages, want %d", len(seqs), n)
	}
	if rows := sent.take(); rows != n {
		t.Errorf("whole read: the database sent %d rows, want %d", rows, n)
	}
}
