package badgerstore

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
)

// BenchmarkAppendExchangeBatch is the exchange-record writer's
// transaction: one record for each of n conversations (the load script's
// spread), each already holding 50 records. On one core its time is how
// long the writer holds the core per batch.
func BenchmarkAppendExchangeBatch(b *testing.B) {
	for _, n := range []int{1, 16, 128} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			s, err := Open(b.TempDir(), Options{NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			const convs = 256
			keys := make([]history.Key, convs)
			incs := make([]uint64, convs)
			id := uint64(1)
			rec := func(c int) history.ExchangeRecord {
				id++
				return history.ExchangeRecord{ID: history.NewExchangeID(id), Object: "conversation.exchange", Kind: "chat",
					Ingress: "chat", Upstream: "chat", Model: "gpt-4o-mini", Status: "answered", HTTPStatus: 200,
					Included: []history.Span{{From: 90, To: 100}}, Committed: []history.Span{{From: 101, To: 102}}, Incarnation: incs[c]}
			}
			for c := range keys {
				keys[c] = history.Key{Tenant: "t", Conversation: fmt.Sprintf("conv-%d", c)}
				m, err := s.Commit(ctx, keys[c], history.Change{Append: []history.Message{textMsg("user", "hello"), textMsg("assistant", "hi")}, Now: 1e9})
				if err != nil {
					b.Fatal(err)
				}
				incs[c] = m.Incarnation
				recs := make([]history.ExchangeRecord, 50)
				for i := range recs {
					recs[i] = rec(c)
				}
				if err := s.AppendExchanges(ctx, keys[c], recs); err != nil {
					b.Fatal(err)
				}
			}
			next := 0
			cpu0 := cpuTime()
			b.ResetTimer()
			for b.Loop() {
				batch := make([]history.KeyedExchanges, n)
				for i := range batch {
					c := next % convs
					next++
					batch[i] = history.KeyedExchanges{Key: keys[c], Records: []history.ExchangeRecord{rec(c)}}
				}
				if err := s.AppendExchangeBatch(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			// The process's CPU per record: background work included (the
			// memtable flushes and compactions the records bring).
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N*n)/1e3, "cpu-us/record")
		})
	}
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
