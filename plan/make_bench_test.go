package plan_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/tokens"
)

// BenchmarkMake plans the next request of a conversation of 50 stored
// turns, of which a summary of about 1,000 tokens covers the first 47
// (summary) or none (plain), read from Badger directly (store) or through
// the window cache recall serve puts in front of it (cache): the cost the
// request path pays in plan.Make, summary injection included.
func BenchmarkMake(b *testing.B) {
	summaryText := strings.Repeat("The user, Ada, works on the \"forecast\" model; she prefers short answers.\n", 60)
	for _, withSummary := range []bool{false, true} {
		for _, cached := range []bool{false, true} {
			name := fmt.Sprintf("summary=%v/cache=%v", withSummary, cached)
			b.Run(name, func(b *testing.B) {
				st := diskStore(b)
				ctx := context.Background()
				k := history.Key{Tenant: "t", Conversation: "c"}
				var counter tokens.Counter
				var msgs []history.Message
				for i := range 50 {
					msgs = append(msgs, user(fmt.Sprintf("question %d: could you look at the figures again and tell me whether the trend holds?", i)),
						msg(`{"role":"assistant","content":"`+strings.Repeat("The trend holds. ", 12)+`"}`))
				}
				for i := range msgs {
					msgs[i].Tokens = counter.Message(tokens.O200k, msgs[i].Raw)
				}
				meta, err := st.Commit(ctx, k, history.Change{Append: msgs})
				if err != nil {
					b.Fatal(err)
				}
				if withSummary {
					sc := &history.SummaryChange{Incarnation: meta.Incarnation, Summary: history.Summary{Text: summaryText, Through: 94, Turns: 47, Tokens: 1000}}
					if _, err := st.Commit(ctx, k, history.Change{Version: meta.Version, Summary: sc}); err != nil {
						b.Fatal(err)
					}
				}
				var store history.Store = st
				if cached {
					store = history.NewCache(st, 128<<20, 2<<20)
				}
				in := plan.Input{
					Store: store, Key: k, Model: "gpt-4o", Now: time.Now(), Counter: &counter, Fixed: &hashCounter{c: &counter},
					Policy:       plan.Policy{Mode: history.Auto, Budget: 16000, SummaryMaxTokens: 1000},
					Instructions: []history.Message{msg(`{"role":"system","content":"You are a careful analyst. Answer briefly."}`)},
					New:          []history.Message{user("and what changed since the previous report?")},
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					p, err := plan.Make(ctx, in)
					if err != nil {
						b.Fatal(err)
					}
					if withSummary != (p.Summary != nil) {
						b.Fatalf("got summary %v, want %v", p.Summary != nil, withSummary)
					}
				}
			})
		}
	}
}

// hashCounter counts as the proxy counts instructions, tools and the
// summary: remembered by a hash of the bytes, so a repeated message costs
// a hash, not a tokenisation.
type hashCounter struct {
	c      *tokens.Counter
	counts sync.Map // uint64 -> int
}

func (h *hashCounter) Message(enc tokens.Encoding, raw []byte) int {
	return h.count(enc, raw, false)
}

func (h *hashCounter) Tools(enc tokens.Encoding, raw []byte) int {
	return h.count(enc, raw, true)
}

func (h *hashCounter) count(enc tokens.Encoding, raw []byte, tools bool) int {
	key := xxhash.Sum64(raw) ^ xxhash.Sum64String(string(enc))
	if tools {
		key = ^key
	}
	if n, ok := h.counts.Load(key); ok {
		return n.(int)
	}
	n := h.c.Message(enc, raw)
	if tools {
		n = h.c.Tools(enc, raw)
	}
	h.counts.Store(key, n)
	return n
}
