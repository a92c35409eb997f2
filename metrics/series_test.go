package metrics

import (
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/recallproxy/recall/history"
)

// TestExchangeSeriesCountEachTenantAndUpstream: the series an exchange
// touches, which Metrics keeps bound a tenant (and, for the upstream's
// tokens, the upstream last counted), count what each tenant, upstream
// and store operation was given, with exchanges of two tenants switching
// between two upstreams from several goroutines at once.
func TestExchangeSeriesCountEachTenantAndUpstream(t *testing.T) {
	m := New(nil)
	tenants := []string{"a", "b"}
	upstreams := []string{"openai", "anthropic", "gemini"}
	const workers, rounds = 4, 300
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				tenant := tenants[(w+i)%len(tenants)]
				up := upstreams[(w*7+i)%len(upstreams)]
				m.Curated(tenant, history.Report{Tokens: 100, SavedTokens: 3, DroppedTurns: 1, TruncatedToolResults: 2, RepairedCalls: 5})
				m.Usage(tenant, up, 10, 4, 1)
				m.StoreOp("load", time.Millisecond)
				m.StoreOp("commit", 2*time.Millisecond)
				m.StoreOp("sync", 3*time.Millisecond)
			}
		})
	}
	wg.Wait()
	// What each tenant and upstream was given, counted the same way.
	exchanges := map[string]int{}
	usage := map[[2]string]int{}
	for w := range workers {
		for i := range rounds {
			tenant := tenants[(w+i)%len(tenants)]
			exchanges[tenant]++
			usage[[2]string{tenant, upstreams[(w*7+i)%len(upstreams)]}]++
		}
	}
	for _, tenant := range tenants {
		n := float64(exchanges[tenant])
		for _, c := range []struct {
			name      string
			got, want float64
		}{
			{"saved", testutil.ToFloat64(m.saved.WithLabelValues(tenant)), 3 * n},
			{"dropped", testutil.ToFloat64(m.dropped.WithLabelValues(tenant)), n},
			{"cut", testutil.ToFloat64(m.cut.WithLabelValues(tenant)), 2 * n},
			{"repaired", testutil.ToFloat64(m.repaired.WithLabelValues(tenant)), 5 * n},
		} {
			if c.got != c.want {
				t.Errorf("tenant %s: %s %v, want %v", tenant, c.name, c.got, c.want)
			}
		}
		if got := testutil.CollectAndCount(m.context, "recall_context_tokens"); got != len(tenants) {
			t.Errorf("recall_context_tokens has %d series, want %d", got, len(tenants))
		}
		for _, up := range upstreams {
			n := float64(usage[[2]string{tenant, up}])
			for kind, per := range map[string]float64{"input": 10, "cached": 4, "output": 1} {
				if got := testutil.ToFloat64(m.tokens.WithLabelValues(tenant, up, kind)); got != per*n {
					t.Errorf("tenant %s upstream %s: %s tokens %v, want %v", tenant, up, kind, got, per*n)
				}
			}
		}
	}
	if got, want := testutil.CollectAndCount(m.store, "recall_store_duration_seconds"), 3; got != want {
		t.Errorf("recall_store_duration_seconds has %d series, want %d (load, commit, sync)", got, want)
	}
	for op, want := range map[string]float64{"load": 0.001, "commit": 0.002, "sync": 0.003} {
		sum := storeSum(t, m, op)
		if n := float64(workers * rounds); sum < want*n*0.999 || sum > want*n*1.001 {
			t.Errorf("store op %s: sum %v s, want %v", op, sum, want*n)
		}
	}
}

// storeSum is the sum of recall_store_duration_seconds{op}.
func storeSum(t *testing.T, m *Metrics, op string) float64 {
	t.Helper()
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "recall_store_duration_seconds" {
			continue
		}
		for _, s := range mf.Metric {
			if s.Label[0].GetValue() == op {
				return s.Histogram.GetSampleSum()
			}
		}
	}
	t.Fatalf("no recall_store_duration_seconds{op=%q}", op)
	return 0
}

// BenchmarkExchangeSeries is the metrics one recorded exchange counts
// through Metrics: what curation made of its context, the upstream's
// tokens, and its load and commit timed.
func BenchmarkExchangeSeries(b *testing.B) {
	m := New(nil)
	r := history.Report{Tokens: 15000, SavedTokens: 0, DroppedTurns: 0}
	b.ReportAllocs()
	for b.Loop() {
		m.Curated("acme", r)
		m.Usage("acme", "openai", 900, 0, 18)
		m.StoreOp("load", 40*time.Microsecond)
		m.StoreOp("commit", 900*time.Microsecond)
	}
}
