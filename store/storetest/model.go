package storetest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/search"
	"github.com/recallproxy/recall/wire"
)

// Random commits, supersedes, soft and hard forgets and deletes over a few
// conversations; after each step the store's List and Search must agree
// with what its own Messages and Load say is stored, recomputed by brute
// force: the list in order of activity, and, in one conversation, exactly
// the hits and BM25 scores of its stored records (tenant-wide the same
// hits; a store may use statistics a few commits old there).
func testIndexesMatchTheRecords(t *testing.T, s history.Store) {
	r := rand.New(rand.NewPCG(7, 11))
	words := strings.Fields("apple banana cherry date elder fig grape hazel iris juniper kiwi lemon mango")
	text := func() string {
		n := 1 + r.IntN(6)
		w := make([]string, n)
		for i := range w {
			w[i] = words[r.IntN(len(words))]
		}
		return strings.Join(w, " ")
	}
	convs := []string{"a", "b", "c", "d"}
	now := int64(0)
	for step := range 60 {
		k := history.Key{Tenant: "t", Conversation: convs[r.IntN(len(convs))]}
		now += 1e9
		active := All(t, s, k, false)
		switch op := r.IntN(10); {
		case op < 5 || len(active) == 0:
			var msgs []history.Message
			for range 1 + r.IntN(3) {
				msgs = append(msgs, User(text(), 3), Asst(text(), 3))
			}
			MustCommit(t, s, k, history.Change{Append: msgs, Now: now})
		case op < 6:
			// Keep the active messages up to a random turn boundary.
			i := r.IntN(len(active))
			for i > 0 && active[i].Role != wire.RoleUser {
				i--
			}
			b := history.Boundary{}
			if i > 0 {
				b = history.Boundary{Seq: active[i-1].Seq, Turn: active[i-1].Turn}
			}
			MustCommit(t, s, k, history.Change{Supersede: &b, Append: []history.Message{User(text(), 3)}, Now: now})
		case op < 9:
			var seqs []uint64
			for _, m := range active {
				if r.IntN(3) == 0 {
					seqs = append(seqs, m.Seq)
				}
			}
			if f := history.PlanForget(active, seqs, op == 8); f != nil {
				MustCommit(t, s, k, history.Change{Forget: f, Now: now})
			}
		default:
			if err := s.Delete(ctx, k); err != nil {
				t.Fatal(err)
			}
		}
		checkList(t, s, convs, step)
		q := words[r.IntN(len(words))] + " " + words[r.IntN(len(words))]
		checkSearch(t, s, convs, q, step)
	}
}

func checkList(t *testing.T, s history.Store, convs []string, step int) {
	t.Helper()
	var want []history.Entry
	for _, c := range convs {
		snap, err := s.Load(ctx, history.Key{Tenant: "t", Conversation: c}, history.Query{})
		if err != nil {
			t.Fatal(err)
		}
		if snap.Meta.Version > 0 {
			want = append(want, history.Entry{Conversation: c, Meta: snap.Meta})
		}
	}
	slices.SortFunc(want, func(a, b history.Entry) int { return int(b.Meta.UpdatedAt - a.Meta.UpdatedAt) }) // times are distinct
	if got := listAll(t, s, "t", history.ListQuery{Limit: 2}); !slices.Equal(got, ids(want)) {
		t.Fatalf("step %d: list got %v, want %v", step, got, ids(want))
	}
}

func checkSearch(t *testing.T, s history.Store, convs []string, q string, step int) {
	t.Helper()
	terms := search.QueryTerms(q)
	var tenant []doc
	for _, c := range convs {
		var stored []doc
		for _, m := range All(t, s, history.Key{Tenant: "t", Conversation: c}, true) {
			p, dl := search.Analyze(m.Text())
			stored = append(stored, doc{c, m, p, dl})
		}
		tenant = append(tenant, stored...)
		// One conversation: exact scores over its own records.
		want := rank(stored, terms)
		hits := find(t, s, "t", history.SearchQuery{Text: q, Conversation: c, Limit: 1000})
		if len(hits) != len(want) {
			t.Fatalf("step %d: search %q in %s: got %v, want %v", step, q, c, hitsOf(hits), want)
		}
		for i, h := range hits {
			if h.Message.Seq != want[i].Seq || math.Abs(h.Score-want[i].Score) > 1e-9 {
				t.Fatalf("step %d: search %q in %s: hit %d got %d score %v, want %d score %v", step, q, c, i, h.Message.Seq, h.Score, want[i].Seq, want[i].Score)
			}
		}
	}
	want := rank(tenant, terms)
	got := hitsOf(find(t, s, "t", history.SearchQuery{Text: q, Limit: 1000}))
	var wantHits []hit
	for _, h := range want {
		wantHits = append(wantHits, hit{h.Conversation, h.Seq})
	}
	sortHits := func(h []hit) {
		slices.SortFunc(h, func(a, b hit) int { return strings.Compare(a.String(), b.String()) })
	}
	sortHits(got)
	sortHits(wantHits)
	if fmt.Sprint(got) != fmt.Sprint(wantHits) {
		t.Fatalf("step %d: search %q in the tenant: got %v, want %v", step, q, got, wantHits)
	}
}

// doc is a stored record as the brute-force ranking sees it.
type doc struct {
	conv     string
	msg      history.Message
	postings []search.Posting
	dl       int
}

// rank scores docs by brute force: statistics over every doc, hits among
// the active ones, best first.
func rank(docs []doc, terms []string) []search.Hit {
	st := search.Stats{Docs: len(docs)}
	df := map[string]int{}
	for _, d := range docs {
		st.Terms += d.dl
		for _, p := range d.postings {
			df[p.Term]++
		}
	}
	var hits []search.Hit
	for _, d := range docs {
		if !d.msg.Active() {
			continue
		}
		h := search.Hit{CreatedAt: d.msg.CreatedAt.UnixNano(), Conversation: d.conv, Seq: d.msg.Seq}
		found := false
		for _, term := range terms {
			i := slices.IndexFunc(d.postings, func(p search.Posting) bool { return p.Term == term })
			if i < 0 {
				continue
			}
			found = true
			h.Score += search.Score(search.IDF(st.Docs, df[term]), d.postings[i].TF, d.dl, st.AvgLen())
		}
		if found {
			hits = append(hits, h)
		}
	}
	return search.Top(hits, len(hits))
}
