package pgstore_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/pgstore"
)

// rowsSent counts the rows the database sent for reads of messages, by
// their statements' command tags (the rows a result held, whether the
// reader took them or its close drained them).
type rowsSent struct {
	mu sync.Mutex
	n  int64
}

func (r *rowsSent) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}
func (r *rowsSent) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *rowsSent) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (r *rowsSent) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	if strings.HasPrefix(d.SQL, "SELECT seq, body FROM recall_messages") {
		r.mu.Lock()
		r.n += d.CommandTag.RowsAffected()
		r.mu.Unlock()
	}
}
func (r *rowsSent) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (r *rowsSent) take() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.n
	r.n = 0
	return n
}

// TestMessagesReadAboutWhatTheReaderTakes: a read of a conversation's
// messages that stops after a few (a page of the Conversations API's
// items, an item found by its id) costs the database about a bounded
// number of rows, not the rest of the conversation; a read of all of it
// still gets every message, oldest first, once.
func TestMessagesReadAboutWhatTheReaderTakes(t *testing.T) {
	var sent rowsSent
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
