package history

import (
	"bytes"
	"context"
	"math"
	"testing"

	_ "github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/wire"
)

// A commit learns what each message it appends lacks (tool calls, tool
// results, cache hints), so that requests replaying it need not scan it.
func TestCommitLearnsWhatMessagesLack(t *testing.T) {
	msgs := []struct {
		name                  string
		role, raw             string
		calls, results, hints bool
	}{
		{"plain", wire.RoleUser, `{"role":"user","content":"hello"}`, false, false, false},
		{"tool calls", wire.RoleAssistant, `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`, true, false, false},
		{"tool result", wire.RoleTool, `{"role":"tool","tool_call_id":"c1","content":"42"}`, false, true, false},
		{"cache hint", wire.RoleUser, `{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}`, false, false, true},
		{"a hint only named", wire.RoleUser, `{"role":"user","content":"what is cache_control?"}`, false, false, false},
	}
	var c Change
	for _, m := range msgs {
		c.Append = append(c.Append, Message{Role: m.role, Raw: []byte(m.raw)})
	}
	_, writes := Apply(Meta{}, c, nil)
	for i, m := range msgs {
		w := &writes[i]
		for _, f := range []struct {
			what string
			bit  absent
			has  bool
		}{{"calls", noCalls, m.calls}, {"results", noResults, m.results}, {"hints", noHints, m.hints}} {
			if got := w.lacks(f.bit); got == f.has {
				t.Errorf("%s: lacks %s %v, want %v", m.name, f.what, got, !f.has)
			}
		}
	}
}

// What a message is known to lack is not looked for again; a Raw
// replaced by one of another length (an edit, a cut) is read afresh.
func TestReplayTrustsWhatAMessageLacks(t *testing.T) {
	plain := []byte(`{"role":"assistant","content":"a plain answer of some length, padded to match"}`)
	rich := []byte(`{"role":"assistant","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}],"tool_calls":[{"id":"c9","type":"function","function":{"name":"f","arguments":"{}"}}]}`)
	m := Message{Role: wire.RoleAssistant, Raw: plain}
	m.learn()
	if !m.lacks(noCalls | noResults | noHints) {
		t.Fatal("a plain message: not known to lack calls, results and hints")
	}

	// The same length, and so taken for the Raw learned from: what it
	// lacks is trusted, never scanned for.
	same := m
	same.Raw = append(rich[:0:0], rich...)
	same.absentLen = uint32(len(same.Raw))
	if got := calls(nil, &same); len(got) != 0 {
		t.Errorf("calls of a message known to have none: got %v, want none looked for", got)
	}
	if got := same.WithoutCacheHints(); !bytes.Equal(got, same.Raw) {
		t.Errorf("hints of a message known to have none: got %s, want Raw as it is", got)
	}

	// Another Raw: read afresh.
	edited := m
	edited.Raw = rich
	if got := calls(nil, &edited); len(got) != 1 || got[0] != "c9" {
		t.Errorf("calls of an edited message: got %v, want [c9]", got)
	}
	if got := edited.WithoutCacheHints(); bytes.Contains(got, []byte("cache_control")) {
		t.Errorf("hints of an edited message: got %s, want them left out", got)
	}
}

// decodedStore holds a conversation and returns it as a store decodes it
// from disk: each Load a new copy of each message, which knows nothing
// of what its Raw lacks.
type decodedStore struct {
	Store // nil: nothing else is called
	meta  Meta
	msgs  []Message
}

func (s *decodedStore) Load(_ context.Context, _ Key, q Query) (Snapshot, error) {
	var tail []Message
	for _, m := range s.msgs {
		if m.Seq > q.After {
			tail = append(tail, Message{Seq: m.Seq, Role: m.Role, Raw: bytes.Clone(m.Raw), Tokens: m.Tokens})
		}
	}
	return Snapshot{Meta: s.meta, Tail: tail, Complete: q.After == 0}, nil
}

// followedStore is a decodedStore another replica writes to too: a cache
// over it checks the head, and reads what the other appended (Follower).
type followedStore struct{ *decodedStore }

func (s followedStore) Head(context.Context, Key) (Head, error) { return HeadOf(&s.meta), nil }

func (s followedStore) Follow(ctx context.Context, k Key, h Head, after uint64, _ *ExchangeLease) (Head, *Snapshot, error) {
	head := HeadOf(&s.meta)
	if head.Same(h) {
		return head, nil, nil
	}
	snap, err := s.Load(ctx, k, Query{After: after, Tokens: math.MaxInt})
	return head, &snap, err
}

// The window cache learns what the messages it reads from the store lack,
// once, so that the requests replaying a conversation read from disk (a
// restart, an eviction, another replica's turns) scan it no more than
// one committed since.
func TestCacheLearnsWhatLoadedMessagesLack(t *testing.T) {
	plain := `{"role":"user","content":"hello"}`
	call := `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`
	result := `{"role":"tool","tool_call_id":"c1","content":"42"}`
	s := &decodedStore{meta: Meta{Version: 1, NextSeq: 4, Messages: 3}, msgs: []Message{
		{Seq: 1, Role: wire.RoleUser, Raw: []byte(plain), Tokens: 5},
		{Seq: 2, Role: wire.RoleAssistant, Raw: []byte(call), Tokens: 20},
		{Seq: 3, Role: wire.RoleTool, Raw: []byte(result), Tokens: 5},
	}}
	c := NewCache(followedStore{s}, 0, 0)
	k := Key{Tenant: "t", Conversation: "c"}
	want := []absent{noCalls | noResults | noHints, noResults | noHints, noCalls | noHints}
	check := func(round string) {
		t.Helper()
		snap, err := c.Load(context.Background(), k, Query{Tokens: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(snap.Tail) != len(want) {
			t.Fatalf("%s: got %d messages, want %d", round, len(snap.Tail), len(want))
		}
		for i, w := range want {
			if m := &snap.Tail[i]; !m.lacks(w) || m.absent != w {
				t.Errorf("%s: message %d: known to lack %03b (for %d bytes of %d), want %03b", round, m.Seq, m.absent, m.absentLen, len(m.Raw), w)
			}
		}
	}
	check("read from the store")
	check("served from memory")
	// Another replica appends a turn: the cache reads it alone.
	s.msgs = append(s.msgs, Message{Seq: 4, Role: wire.RoleUser, Raw: []byte(plain), Tokens: 5},
		Message{Seq: 5, Role: wire.RoleAssistant, Raw: []byte(`{"role":"assistant","content":"an answer"}`), Tokens: 5})
	s.meta = Meta{Version: 2, NextSeq: 6, Messages: 5}
	want = append(want, noCalls|noResults|noHints, noCalls|noResults|noHints)
	check("caught up with another replica")
}
