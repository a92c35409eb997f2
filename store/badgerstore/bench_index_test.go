package badgerstore_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/store/badgerstore"
)

// BenchmarkList reads one page of 50 with 100,000 conversations in the
// tenant (and as many in another): the cost follows the page.
func BenchmarkList(b *testing.B) {
	s, err := badgerstore.Open(b.TempDir(), badgerstore.Options{NoSync: true, IndexBacklog: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	turn := turns(1, 1)
	for _, tenant := range []string{"t", "u"} {
		for i := range 100000 {
			k := history.Key{Tenant: tenant, Conversation: "c" + strconv.Itoa(i)}
			if _, err := s.Commit(ctx, k, history.Change{Append: turn, Now: int64(i + 1)}); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := s.Fold(); err != nil { // not while measuring
		b.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		q    history.ListQuery
	}{
		{"first page", history.ListQuery{Limit: 50}},
		{"page after", history.ListQuery{Limit: 50, After: "c50000"}},
		{"oldest first", history.ListQuery{Limit: 50, Oldest: true}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				page, more, err := s.List(ctx, "t", tt.q)
				if err != nil || len(page) != 50 || !more {
					b.Fatalf("got %d entries, more %v, %v", len(page), more, err)
				}
			}
		})
	}
}

// corpus returns n user messages of 8 to 32 words drawn from a vocabulary
// of 5,000 with a Zipf distribution (as in prose: few words are common).
func corpus(n int) []history.Message {
	r := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(r, 1.1, 1, 4999)
	out := make([]history.Message, n)
	var sb strings.Builder
	for i := range out {
		sb.Reset()
		for w := range 8 + r.IntN(25) {
			if w > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString("w" + strconv.FormatUint(zipf.Uint64(), 10))
		}
		out[i] = user(sb.String(), 20)
	}
	return out
}

// BenchmarkSearch ranks 10,000 messages: in one conversation, and across a
// tenant of 100 conversations of 100; indexed (folded), and not yet (a
// search analyses every record: the worst a backlog can make it). The query has a common term (w1, in
// about a third of the messages), a mid one and a rare one.
func BenchmarkSearch(b *testing.B) {
	msgs := corpus(10000)
	for _, tt := range []struct {
		convs  int
		folded bool
	}{{1, true}, {100, true}, {100, false}} {
		b.Run(fmt.Sprintf("conversations=%d/indexed=%v", tt.convs, tt.folded), func(b *testing.B) {
			s, err := badgerstore.Open(b.TempDir(), badgerstore.Options{NoSync: true, IndexBacklog: 1 << 30})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			convs := tt.convs
			per := len(msgs) / convs
			for c := range convs {
				k := history.Key{Tenant: "t", Conversation: "c" + strconv.Itoa(c)}
				for i := 0; i < per; i += 500 {
					mustCommit(b, s, k, history.Change{Append: msgs[c*per+i : c*per+min(i+500, per)]})
				}
			}
			if tt.folded {
				if err := s.Fold(); err != nil {
					b.Fatal(err)
				}
			}
			for _, q := range []struct{ name, text, conv string }{
				{"tenant", "w1 w40 w900", ""},
				{"rare terms", "w40 w900", ""},
				{"one conversation", "w1 w40 w900", "c0"},
			} {
				if convs == 1 && q.conv == "" && q.name == "rare terms" {
					continue
				}
				b.Run(q.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						hits, err := s.Search(ctx, "t", history.SearchQuery{Text: q.text, Conversation: q.conv, Limit: 20})
						if err != nil || len(hits) == 0 {
							b.Fatalf("got %d hits, %v", len(hits), err)
						}
					}
				})
			}
		})
	}
}

// BenchmarkCommitProse commits a turn as the proxy's benchmark does: a
// 40-word question and a 12-sentence answer (about 50 distinct terms to
// index).
func BenchmarkCommitProse(b *testing.B) {
	q := user(`Could you look at the figures from last week again and tell me whether the trend holds? I would also like a short note on what changed since the previous report, and whether we should adjust the forecast for the next quarter.`, 50)
	a := asst(strings.Repeat("The trend holds. ", 12), 40)
	s, err := badgerstore.Open(b.TempDir(), badgerstore.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	k := history.Key{Tenant: "t", Conversation: "c"}
	var version uint64
	b.ReportAllocs()
	for b.Loop() {
		m, err := s.Commit(ctx, k, history.Change{Version: version, Append: []history.Message{q, a}, Now: 1})
		if err != nil {
			b.Fatal(err)
		}
		version = m.Version
	}
}

// BenchmarkFold indexes turns of prose as the folder does: 64
// conversations a round, 4 messages each, durable. Per message.
func BenchmarkFold(b *testing.B) {
	q := user(`Could you look at the figures from last week again and tell me whether the trend holds? I would also like a short note on what changed since the previous report, and whether we should adjust the forecast for the next quarter.`, 50)
	a := asst(strings.Repeat("The trend holds. ", 12), 40)
	s, err := badgerstore.Open(b.TempDir(), badgerstore.Options{IndexBacklog: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	versions := make([]uint64, 64)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		for c := range versions {
			k := history.Key{Tenant: "t", Conversation: "c" + strconv.Itoa(c)}
			for range 2 {
				m, err := s.Commit(ctx, k, history.Change{Version: versions[c], Append: []history.Message{q, a}, Now: 1})
				if err != nil {
					b.Fatal(err)
				}
				versions[c] = m.Version
			}
		}
		b.StartTimer()
		if err := s.Fold(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(versions)*4), "ns/message")
}
