package inspect_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/inspect"
)

// batchLog is an ExchangeBatcher that records the batches it is given.
type batchLog struct {
	mu      sync.Mutex
	batches [][]string
}

func (l *batchLog) AppendExchanges(ctx context.Context, k history.Key, recs []history.ExchangeRecord) error {
	return l.AppendExchangeBatch(ctx, []history.KeyedExchanges{{Key: k, Records: recs}})
}

func (l *batchLog) AppendExchangeBatch(_ context.Context, batch []history.KeyedExchanges) error {
	var ids []string
	for _, e := range batch {
		for _, r := range e.Records {
			ids = append(ids, r.ID)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.batches = append(l.batches, ids)
	return nil
}

func (l *batchLog) Exchanges(context.Context, history.Key, string, int) ([]history.ExchangeRecord, error) {
	return nil, nil
}

func (l *batchLog) got() [][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([][]string(nil), l.batches...)
}

// A record does not get a store write of its own: the writer gathers what
// comes within its Delay and writes it in one batch, so that the store
// makes a write round per batch, not per request.
func TestWriterGathersRecordsForItsDelay(t *testing.T) {
	l := &batchLog{}
	armed := make(chan time.Duration, 1)
	fire := make(chan time.Time)
	w, err := inspect.NewWriter(l, inspect.Options{Delay: time.Second, After: func(d time.Duration) <-chan time.Time {
		armed <- d
		return fire
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(context.Background())
	a, b := history.Key{Tenant: "t", Conversation: "a"}, history.Key{Tenant: "t", Conversation: "b"}
	w.Record(a, rec(1))
	select { // the writer took record 1 and waits for more
	case d := <-armed:
		if d != time.Second {
			t.Fatalf("got a wait of %v, want the Delay, 1s", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the writer never waited for more records")
	}
	w.Record(b, rec(2))
	w.Record(a, rec(3))
	if got := l.got(); len(got) != 0 {
		t.Fatalf("got batches %v written before the delay ended, want none", got)
	}
	fire <- time.Time{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got := l.got()
	if len(got) != 1 || len(got[0]) != 3 {
		t.Fatalf("got batches %v, want one of the 3 records", got)
	}
}

// A Flush does not wait for the Delay: what was queued before it is
// written at once.
func TestWriterFlushCutsTheDelayShort(t *testing.T) {
	l := &batchLog{}
	never := make(chan time.Time)
	w, err := inspect.NewWriter(l, inspect.Options{Delay: time.Hour, After: func(time.Duration) <-chan time.Time { return never }})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(context.Background())
	k := history.Key{Tenant: "t", Conversation: "a"}
	w.Record(k, rec(1))
	w.Record(k, rec(2))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Flush(ctx); err != nil {
		t.Fatalf("flush: %v (the writer waited out its delay)", err)
	}
	n := 0
	for _, b := range l.got() {
		n += len(b)
	}
	if n != 2 {
		t.Errorf("got %d records written, want 2", n)
	}
}
