// Package storetest is the conformance suite every history.Store passes:
// the embedded Badger store and the networked ones run the same cases, so
// that they keep conversations, list them and search them the same way.
//
// A store's test calls Run with a function opening a fresh, empty store:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) history.Store {
//			s, err := badgerstore.Open(t.TempDir(), badgerstore.Options{})
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// The suite never sleeps and reads no clock: every commit passes its own
// time (Change.Now), so ordering by activity is decided by the test.
package storetest

import (
	"context"
	"strconv"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/wire"
)

// Run runs every case against stores made by open, each case with a fresh
// one. open must return an empty store and register its cleanup with
// t.Cleanup.
func Run(t *testing.T, open func(t *testing.T) history.Store) {
	cases := []struct {
		name string
		fn   func(t *testing.T, s history.Store)
	}{
		{"RoundTrip", testRoundTrip},
		{"LoadBounds", testLoadBounds},
		{"LoadAfter", testLoadAfter},
		{"LoadSummarized", testLoadSummarized},
		{"Supersede", testSupersede},
		{"ConflictChangesNothing", testConflictChangesNothing},
		{"MessagesAfterAndStop", testMessagesAfterAndStop},
		{"DeleteAndIsolation", testDeleteAndIsolation},
		{"SummaryLanding", testSummaryLanding},
		{"Episodes", testEpisodes},
		{"Session", testSession},
		{"ForgetSoftAndHard", testForget},
		{"Import", testImport},
		{"Delete", testDelete},
		{"ErasureBeatsASummaryInFlight", testErasureBeatsASummaryInFlight},
		{"ListOrder", testListOrder},
		{"ListPaging", testListPaging},
		{"ListFilters", testListFilters},
		{"ListTenants", testListTenants},
		{"Namespaces", testNamespaces},
		{"SearchRanking", testSearchRanking},
		{"SearchScope", testSearchScope},
		{"SearchOnlyActive", testSearchOnlyActive},
		{"SearchTiesNewestFirst", testSearchTies},
		{"SearchEveryProtocol", testSearchEveryProtocol},
		{"IndexesMatchTheRecords", testIndexesMatchTheRecords},
		{"ExchangesOrderAndPaging", testExchangesOrderAndPaging},
		{"ExchangesCap", testExchangesCap},
		{"ExchangesCapBetweenTrims", testExchangesCapBetweenTrims},
		{"ExchangesErased", testExchangesErased},
		{"Threads", testThreads},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open(t)) })
	}
}

var ctx = context.Background()

// Msg returns a message of role with JSON raw and a token count.
func Msg(role, raw string, tokens int) history.Message {
	return history.Message{Role: role, Raw: []byte(raw), Tokens: tokens, Hash: xxhash.Sum64String(raw)}
}

// User returns a user message with text s (JSON-safe).
func User(s string, tokens int) history.Message {
	return Msg(wire.RoleUser, `{"role":"user","content":"`+s+`"}`, tokens)
}

// Asst returns an assistant message with text s (JSON-safe).
func Asst(s string, tokens int) history.Message {
	return Msg(wire.RoleAssistant, `{"role":"assistant","content":"`+s+`"}`, tokens)
}

// Call returns an assistant message calling tool f with id.
func Call(id string, tokens int) history.Message {
	return Msg(wire.RoleAssistant, `{"role":"assistant","content":null,"tool_calls":[{"id":"`+id+`","type":"function","function":{"name":"f","arguments":"{}"}}]}`, tokens)
}

// Result returns the tool result answering call id.
func Result(id string, tokens int) history.Message {
	return Msg(wire.RoleTool, `{"role":"tool","tool_call_id":"`+id+`","content":"ok"}`, tokens)
}

// Turns returns n turns of a user (10 tokens) and an assistant (10 tokens)
// message, "q<i>" and "a<i>", for i from from: appended to an empty
// conversation, turn i has seqs 2i-1 and 2i.
func Turns(from, n int) []history.Message { return TurnsSaying(from, n, "q", "a") }

// TurnsSaying is Turns with the texts question+"<i>" and answer+"<i>".
func TurnsSaying(from, n int, question, answer string) []history.Message {
	var out []history.Message
	for i := from; i < from+n; i++ {
		out = append(out, User(question+strconv.Itoa(i), 10), Asst(answer+strconv.Itoa(i), 10))
	}
	return out
}

// MustCommit commits c on top of the conversation's current version, at
// c.Now or, if zero, at (version+1) seconds.
func MustCommit(t testing.TB, s history.Store, k history.Key, c history.Change) history.Meta {
	t.Helper()
	snap, err := s.Load(ctx, k, history.Query{})
	if err != nil {
		t.Fatal(err)
	}
	c.Version = snap.Meta.Version
	if c.Now == 0 {
		c.Now = int64(snap.Meta.Version+1) * 1e9
	}
	m, err := s.Commit(ctx, k, c)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Land lands sc as a summary job made from the conversation as it is now
// would: with its current Incarnation and Epoch.
func Land(s history.Store, k history.Key, sc history.SummaryChange) (history.Meta, error) {
	snap, err := s.Load(ctx, k, history.Query{})
	if err != nil {
		return history.Meta{}, err
	}
	sc.Incarnation, sc.Epoch = snap.Meta.Incarnation, snap.Meta.Epoch
	return s.Commit(ctx, k, history.Change{Summary: &sc})
}

// All returns the conversation's messages, inactive ones too if all.
func All(t testing.TB, s history.Store, k history.Key, all bool) []history.Message {
	t.Helper()
	var out []history.Message
	if err := s.Messages(ctx, k, 0, all, func(m history.Message) bool { out = append(out, m); return true }); err != nil {
		t.Fatal(err)
	}
	return out
}

func seqs(msgs []history.Message) []uint64 {
	return each(msgs, func(m history.Message) uint64 { return m.Seq })
}

// each returns f of each of xs, in order.
func each[T, U any](xs []T, f func(T) U) []U {
	out := make([]U, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

func span(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}
