package summary

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/store/badgerstore/badgertest"
)

// TestImportedConversationSummaryCost reports what one summary job costs
// on an imported conversation of RECALL_IMPORTED_TURNS turns (committed
// straight to Badger) with the default summary settings and gpt-4o's
// window: the summariser
// calls and the prompt tokens the upstream reported, for a summariser
// that answers within the limit it is asked for and for one that runs on
// past it (every item it was ever given, the worst case). It asserts no
// timing; TestSummaryCallsAreLinearInTheTranscript asserts the bound. It
// takes tens of seconds, so it runs only when asked, with the number of
// turns:
//
//	RECALL_IMPORTED_TURNS=100000 go test ./summary -run TestImportedConversationSummaryCost -v
func TestImportedConversationSummaryCost(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv("RECALL_IMPORTED_TURNS"))
	if testing.Short() || err != nil || n <= 0 {
		t.Skip("set RECALL_IMPORTED_TURNS=100000 to measure")
	}
	for _, tc := range summariserModes {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]upstreamtest.Option{upstreamtest.WithKeepRequests(0)}, tc.opts...)
			calls, meta := importAndSummarise(t, n, opts...)
			s := meta.Summary
			if s == nil {
				t.Fatalf("no summary landed")
			}
			t.Logf("%d turns: %d summariser calls, %d prompt tokens, %d turns covered, summary of %d tokens",
				n, calls, meta.SummaryPromptTokens, s.Turns, s.Tokens)
		})
	}
}

// importAndSummarise commits n turns to a new conversation of tenant acme
// (default policy, model gpt-4o), runs one explicit summary job and
// returns its summariser calls and the metadata after it.
func importAndSummarise(t *testing.T, n int, opts ...upstreamtest.Option) (int, history.Meta) {
	t.Helper()
	up := upstreamtest.NewTB(t, opts...)
	st := badgertest.Open(t)
	g := config.DefaultGlobal()
	g.Defaults.Upstream.BaseURL = up.URL()
	g.Defaults.Upstream.APIKey = config.Secret("sk-upstream")
	set := acmeTenants(t, g)
	ctx := context.Background()
	k := history.Key{Tenant: "acme", Conversation: "imported"}
	const batch = 1000
	var version uint64
	for from := 0; from < n; from += batch {
		var msgs []history.Message
		for i := from; i < min(from+batch, n); i++ {
			u := fmt.Appendf(nil, `{"role":"user","content":"turn %d: what about item %d of the inventory?"}`, i, i)
			a := fmt.Appendf(nil, `{"role":"assistant","content":"Item %d is in aisle %d, shelf %d."}`, i, i%97, i%13)
			msgs = append(msgs,
				history.Message{Role: "user", Raw: u, Hash: chat.Hash(u), Tokens: 16},
				history.Message{Role: "assistant", Raw: a, Hash: chat.Hash(a), Tokens: 14})
		}
		meta, err := st.Commit(ctx, k, history.Change{Version: version, Model: "gpt-4o", Append: msgs})
		if err != nil {
			t.Fatal(err)
		}
		version = meta.Version
	}
	var calls int
	m, err := New(Config{Store: st, Tenants: staticTenants{set}, OnJobDone: func(d JobDone) { calls += d.Calls }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	meta, err := m.Summarize(ctx, k)
	if err != nil {
		t.Fatalf("summarize, after %d summariser calls: %v", calls, err)
	}
	return calls, meta
}
