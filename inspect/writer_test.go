package inspect_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/inspect"
)

// gatedLog is an ExchangeLog whose writes wait for the gate to open.
type gatedLog struct {
	gate    chan struct{}
	entered chan struct{}
	mu      sync.Mutex
	got     map[history.Key][]string
}

func (l *gatedLog) AppendExchanges(_ context.Context, k history.Key, recs []history.ExchangeRecord) error {
	l.entered <- struct{}{}
	<-l.gate
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range recs {
		l.got[k] = append(l.got[k], r.ID)
	}
	return nil
}

func (l *gatedLog) Exchanges(context.Context, history.Key, string, int) ([]history.ExchangeRecord, error) {
	return nil, nil
}

func rec(n uint64) history.ExchangeRecord {
	return history.ExchangeRecord{ID: history.NewExchangeID(n)}
}

// A store that does not keep up costs records, never the caller's time:
// Record returns at once with the queue full, counts what it drops, and
// Close writes what was queued, per conversation in order.
func TestWriterDropsWhenFullAndFlushesOnClose(t *testing.T) {
	l := &gatedLog{gate: make(chan struct{}), entered: make(chan struct{}, 16), got: map[history.Key][]string{}}
	w, err := inspect.NewWriter(l, inspect.Options{Queue: 2})
	if err != nil {
		t.Fatal(err)
	}
	a, b := history.Key{Tenant: "t", Conversation: "a"}, history.Key{Tenant: "t", Conversation: "b"}
	w.Record(a, rec(1))
	select { // the writer took record 1 and waits on the store
	case <-l.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the writer never wrote")
	}
	done := make(chan struct{})
	go func() {
		w.Record(a, rec(2))
		w.Record(b, rec(3))
		w.Record(a, rec(4)) // the queue (2) is full
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Record blocked on a full queue")
	}
	if got := w.Dropped(); got != 1 {
		t.Errorf("dropped %d records, want 1", got)
	}
	close(l.gate)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[history.Key][]string{a: {rec(1).ID, rec(2).ID}, b: {rec(3).ID}}
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, ids := range want {
		if got := l.got[k]; len(got) != len(ids) || got[0] != ids[0] || got[len(got)-1] != ids[len(ids)-1] {
			t.Errorf("%s: got %v, want %v", k.Conversation, got, ids)
		}
	}
	w.Record(a, rec(5))
	if got := w.Dropped(); got != 2 {
		t.Errorf("a record after Close: dropped %d, want 2", got)
	}
}
