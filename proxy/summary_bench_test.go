package proxy_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/store/badgerstore/badgertest"
	"github.com/recallproxy/recall/summary"
	"github.com/recallproxy/recall/tokens"
)

// BenchmarkChatPathSummaries is BenchmarkChatPath50 with summaries:
//
//   - off: summaries disabled, 50 stored turns sent within the budget;
//   - summarised: each conversation's first 47 turns summarised, so a
//     request loads 3 turns and injects the summary (no jobs run);
//   - compacting: trigger_turns 1, so every request's commit triggers a
//     compaction that runs in the background (2 workers, an instant
//     in-process summariser) while the requests are measured: the cost a
//     running compaction adds to the request path.
func BenchmarkChatPathSummaries(b *testing.B) {
	for _, mode := range []string{"off", "summarised", "compacting"} {
		b.Run(mode, func(b *testing.B) {
			g := config.DefaultGlobal()
			g.Defaults.History.BudgetTokens = 16000
			g.Defaults.Summary.Enabled = mode != "off"
			g.Defaults.Summary.Model = "gpt-4o" // the prefilled turns name none
			if mode == "compacting" {
				g.Defaults.Summary.TriggerTurns, g.Defaults.Summary.KeepTurns = 1, 0
			}
			store := badgertest.Open(b)
			var counter tokens.Counter
			counter.Text(tokens.O200k, "build the encoder before timing")
			up := instantUpstream{"application/json", []byte(benchAnswer)}
			tenants := loadTenants(b, g)
			mgr, err := summary.New(summary.Config{Store: store, Tenants: tenants, Client: up.client(), Counter: &counter})
			if err != nil {
				b.Fatal(err)
			}
			if err := mgr.Start(context.Background()); err != nil {
				b.Logf("start: %v", err)
			}
			b.Cleanup(mgr.Close)
			cfg := proxy.Config{Counter: &counter, Tenants: tenants, Store: store, Client: up.client()}
			if mode == "compacting" {
				cfg.Summaries = mgr
			}
			srv, err := proxy.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			const convs = 64
			prefill(b, store, convs, 50)
			if mode == "summarised" {
				for c := range convs {
					k := history.Key{Tenant: auth.Namespace("default", "sk-bench"), Conversation: fmt.Sprintf("conv-%d", c)}
					if m, err := mgr.Summarize(context.Background(), k); err != nil || m.Summary == nil || m.Summary.Turns != 47 {
						b.Fatalf("summarize: %v, %+v", err, m.Summary)
					}
				}
			}
			runChat(b, srv, convs)
		})
	}
}
