package storetest

import (
	"fmt"
	"math"
	"testing"

	"github.com/recallproxy/recall/history"
	// The codecs of the messages testSearchEveryProtocol stores.
	_ "github.com/recallproxy/recall/protocol/messages"
	_ "github.com/recallproxy/recall/protocol/responses"
	"github.com/recallproxy/recall/wire"
)

type hit struct {
	conv string
	seq  uint64
}

func (h hit) String() string { return fmt.Sprintf("%s/%d", h.conv, h.seq) }

func find(t *testing.T, s history.Store, tenant string, q history.SearchQuery) []history.Hit {
	t.Helper()
	if q.Limit == 0 {
		q.Limit = 50
	}
	hits, err := s.Search(ctx, tenant, q)
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

func hitsOf(hits []history.Hit) []hit {
	return each(hits, func(h history.Hit) hit { return hit{h.Conversation, h.Message.Seq} })
}

func sameHits(got []history.Hit, want ...hit) bool {
	g := hitsOf(got)
	if len(g) != len(want) {
		return false
	}
	for i := range g {
		if g[i] != want[i] {
			return false
		}
	}
	return true
}

// BM25 over the searched scope's statistics, on the corpus that
// search's TestBM25ByHand works out on paper:
//
//	seq 1 "the cat sat", seq 2 "the dog", seq 3 "cat cat dog bird"
//
// The statistics are those of the scope: the tenant's when it searches the
// tenant, the conversation's when it searches a conversation.
func testSearchRanking(t *testing.T, s history.Store) {
	k := history.Key{Tenant: "t", Conversation: "s"}
	MustCommit(t, s, k, history.Change{Append: []history.Message{User("The cat sat.", 3), Asst("the DOG", 2), User("cat, cat; dog: bird", 4)}, Now: 1e9})
	type scored struct {
		seq   uint64
		score float64
	}
	tests := []struct {
		query string
		want  []scored
	}{
		{"cat", []scored{{3, 0.5908617053374963}, {1, 0.47000362924573563}}},
		{"Dog", []scored{{2, 0.5442147286003255}, {3, 0.47000362924573563 * 2.2 / 2.5}}},
		{"bird cat", []scored{{3, 0.8631297426503192 + 0.5908617053374963}, {1, 0.47000362924573563}}},
		{"cat cat", []scored{{3, 0.5908617053374963}, {1, 0.47000362924573563}}}, // a query term counts once
		{"sat the", []scored{{1, 0.9808292530117263*1 + 0.47000362924573563}, {2, 0.5442147286003255}}},
		{"unicorn", nil},
		{"...", nil},
	}
	check := func(t *testing.T, hits []history.Hit, want []scored) {
		t.Helper()
		if len(hits) != len(want) {
			t.Fatalf("got %v, want %v", hitsOf(hits), want)
		}
		for i, h := range hits {
			if h.Conversation != "s" || h.Message.Seq != want[i].seq || math.Abs(h.Score-want[i].score) > 1e-9 {
				t.Errorf("hit %d: got %s score %.12f, want s/%d score %.12f", i, hit{h.Conversation, h.Message.Seq}, h.Score, want[i].seq, want[i].score)
			}
		}
	}
	for _, tt := range tests {
		t.Run("tenant "+tt.query, func(t *testing.T) {
			check(t, find(t, s, "t", history.SearchQuery{Text: tt.query}), tt.want)
		})
	}
	// Another conversation changes the tenant's statistics, not the
	// conversation's.
	MustCommit(t, s, history.Key{Tenant: "t", Conversation: "other"}, history.Change{Append: Turns(1, 20), Now: 2e9})
	for _, tt := range tests {
		t.Run("conversation "+tt.query, func(t *testing.T) {
			check(t, find(t, s, "t", history.SearchQuery{Text: tt.query, Conversation: "s"}), tt.want)
		})
	}
	hits := find(t, s, "t", history.SearchQuery{Text: "cat", Limit: 1})
	if !sameHits(hits, hit{"s", 3}) {
		t.Errorf("limit 1: got %v, want s/3", hitsOf(hits))
	}
	m := hits[0].Message
	if m.Role != wire.RoleUser || string(m.Raw) != `{"role":"user","content":"cat, cat; dog: bird"}` || m.Turn != 2 ||
		m.Tokens != 4 || m.Flags != 0 || m.CreatedAt.UnixNano() != 1e9 || m.Hash != User("cat, cat; dog: bird", 4).Hash {
		t.Errorf("got hit message %+v, want the stored seq 3", m)
	}
}

// A search covers the tenant, or one conversation of it, and never another
// tenant's.
func testSearchScope(t *testing.T, s history.Store) {
	for _, k := range []history.Key{{Tenant: "t", Conversation: "a"}, {Tenant: "t", Conversation: "b"}, {Tenant: "u", Conversation: "a"}, {Tenant: "tt", Conversation: "a"}} {
		MustCommit(t, s, k, history.Change{Append: []history.Message{User("where is the fox", 1), Asst("in "+k.Tenant+"/"+k.Conversation, 1)}, Now: 1e9})
	}
	tests := []struct {
		tenant, conv string
		want         []hit
	}{
		{"t", "", []hit{{"a", 1}, {"b", 1}}},
		{"t", "a", []hit{{"a", 1}}},
		{"t", "b", []hit{{"b", 1}}},
		{"t", "c", nil},
		{"u", "", []hit{{"a", 1}}},
		{"tt", "", []hit{{"a", 1}}},
		{"nobody", "", nil},
	}
	for _, tt := range tests {
		hits := find(t, s, tt.tenant, history.SearchQuery{Text: "fox", Conversation: tt.conv})
		if !sameHits(hits, tt.want...) {
			t.Errorf("tenant %q conversation %q: got %v, want %v", tt.tenant, tt.conv, hitsOf(hits), tt.want)
		}
	}
	hits := find(t, s, "u", history.SearchQuery{Text: "fox in"}) // "in u/a" is the shorter: first
	if len(hits) != 2 || string(hits[0].Message.Raw) != `{"role":"assistant","content":"in u/a"}` {
		t.Errorf("tenant u: got %v, want its own two messages", hitsOf(hits))
	}
}

// Superseded, forgotten and erased messages are never found.
func testSearchOnlyActive(t *testing.T, s history.Store) {
	k := history.Key{Tenant: "t", Conversation: "c"}
	MustCommit(t, s, k, history.Change{Append: []history.Message{User("keep llama", 1), Asst("soft llama", 1), User("hard llama", 1), Asst("old llama", 1)}})
	MustCommit(t, s, k, history.Change{Supersede: &history.Boundary{Seq: 3, Turn: 2}, Append: []history.Message{Asst("new llama", 1)}})
	active := All(t, s, k, false)
	MustCommit(t, s, k, history.Change{Forget: history.PlanForget(active, []uint64{2}, false)})
	active = All(t, s, k, false)
	MustCommit(t, s, k, history.Change{Forget: history.PlanForget(active, []uint64{3}, true)})
	hits := find(t, s, "t", history.SearchQuery{Text: "llama"})
	got := hitsOf(hits)
	if len(got) != 2 || !(got[0] == hit{"c", 5} && got[1] == hit{"c", 1} || got[0] == hit{"c", 1} && got[1] == hit{"c", 5}) {
		t.Errorf("got %v, want c/1 and c/5 (the active ones)", got)
	}
	for _, h := range hits {
		if h.Message.Flags != 0 {
			t.Errorf("got hit %d with flags %v, want none", h.Message.Seq, h.Message.Flags)
		}
	}
}

// Equal scores rank newest first: later commits first, and within one
// commit the later message.
func testSearchTies(t *testing.T, s history.Store) {
	a, b, c := history.Key{Tenant: "t", Conversation: "a"}, history.Key{Tenant: "t", Conversation: "b"}, history.Key{Tenant: "t", Conversation: "c"}
	MustCommit(t, s, a, history.Change{Append: []history.Message{User("echo", 1)}, Now: 1e9})
	MustCommit(t, s, a, history.Change{Append: []history.Message{User("echo", 1)}, Now: 2e9})
	MustCommit(t, s, b, history.Change{Append: []history.Message{User("echo", 1)}, Now: 3e9})
	MustCommit(t, s, c, history.Change{Append: []history.Message{User("echo", 1), User("echo", 1)}, Now: 4e9})
	hits := find(t, s, "t", history.SearchQuery{Text: "ECHO"})
	if want := []hit{{"c", 2}, {"c", 1}, {"b", 1}, {"a", 2}, {"a", 1}}; !sameHits(hits, want...) {
		t.Errorf("got %v, want %v", hitsOf(hits), want)
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Score != hits[0].Score {
			t.Errorf("got scores %v and %v, want a tie", hits[0].Score, hits[i].Score)
		}
	}
}

// Every protocol's messages are indexed by the words their codec reads:
// a Responses answer's output_text, a function call's arguments and its
// function_call_output, an Anthropic answer's text and tool_use input and
// its tool_result; a hard forget takes them out of the index again.
func testSearchEveryProtocol(t *testing.T, s history.Store) {
	msg := func(p wire.Protocol, raw string) history.Message {
		m := Msg(wire.For(p).Role([]byte(raw)), raw, 5)
		m.Protocol = p
		return m
	}
	r := history.Key{Tenant: "t", Conversation: "responses"}
	MustCommit(t, s, r, history.Change{Append: []history.Message{
		msg(wire.Responses, `{"type":"message","role":"user","content":[{"type":"input_text","text":"where do capybaras live"}]}`),
		msg(wire.Responses, `{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAAhidden"}`),
		msg(wire.Responses, `{"type":"function_call","id":"fc_1","call_id":"call_1","name":"lookup","arguments":"{\"animal\":\"quokka\"}"}`),
		msg(wire.Responses, `{"type":"function_call_output","call_id":"call_1","output":"habitat wetlands"}`),
		msg(wire.Responses, `{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"They live near marshes.","annotations":[]}]}`),
	}})
	a := history.Key{Tenant: "t", Conversation: "messages"}
	MustCommit(t, s, a, history.Change{Append: []history.Message{
		msg(wire.Messages, `{"role":"user","content":"what does the zebu eat"}`),
		msg(wire.Messages, `{"role":"assistant","content":[{"type":"thinking","thinking":"pondering","signature":"sig"},{"type":"tool_use","id":"toolu_1","name":"fodder","input":{"breed":"gyr"}}]}`),
		msg(wire.Messages, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"grass and hay"}]}]}`),
		msg(wire.Messages, `{"role":"assistant","content":[{"type":"text","text":"A zebu grazes on pasture."}]}`),
	}})
	for _, tt := range []struct {
		query string
		want  []hit
	}{
		{"capybaras", []hit{{"responses", 1}}},
		{"marshes", []hit{{"responses", 5}}},  // output_text
		{"quokka", []hit{{"responses", 3}}},   // a function call's arguments
		{"wetlands", []hit{{"responses", 4}}}, // function_call_output
		{"pasture", []hit{{"messages", 4}}},   // text block
		{"gyr", []hit{{"messages", 2}}},       // tool_use input
		{"hay", []hit{{"messages", 3}}},       // tool_result
		{"pondering gAAAAhidden", nil},        // thinking and reasoning are not words
	} {
		if got := find(t, s, "t", history.SearchQuery{Text: tt.query}); !sameHits(got, tt.want...) {
			t.Errorf("%q: got %v, want %v", tt.query, hitsOf(got), tt.want)
		}
	}
	MustCommit(t, s, a, history.Change{Forget: history.PlanForget(All(t, s, a, false), []uint64{3}, true)})
	MustCommit(t, s, r, history.Change{Forget: history.PlanForget(All(t, s, r, false), []uint64{4}, true)})
	for _, q := range []string{"hay", "wetlands"} {
		if got := find(t, s, "t", history.SearchQuery{Text: q}); len(got) != 0 {
			t.Errorf("%q after a hard forget: got %v, want nothing", q, hitsOf(got))
		}
	}
}
