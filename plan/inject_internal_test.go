package plan

import (
	"fmt"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/history"
)

// Conversations whose summaries share a memo set, or a role that
// changes, each get their own summary's message, also when planned at
// once (run with -race).
func TestInjectedKeepsConversationsAndRolesApart(t *testing.T) {
	// Two conversations that hash to the same set, with summaries of the
	// same version, coverage and length.
	slot := memoSet
	a := history.Key{Tenant: "t", Conversation: "a"}
	var b history.Key
	for i := 0; b.Conversation == ""; i++ {
		if k := (history.Key{Tenant: "t", Conversation: fmt.Sprint("b", i)}); slot(k) == slot(a) {
			b = k
		}
	}
	meta := func(text string) *history.Meta {
		return &history.Meta{Incarnation: 7, Summaries: 1, Summary: &history.Summary{Text: text, Through: 4, Turns: 2}}
	}
	ma, mb := meta("The user is Ada."), meta("The user is Bob.")
	check := func(k history.Key, m *history.Meta, role string) error {
		raw := injected(k, m, role)
		if got := gjson.GetBytes(raw, "content").Str; got != SummaryPrefix+m.Summary.Text {
			return fmt.Errorf("%s: got %q, want %q", k.Conversation, got, SummaryPrefix+m.Summary.Text)
		}
		if got := gjson.GetBytes(raw, "role").Str; got != role {
			return fmt.Errorf("%s: got role %q, want %q", k.Conversation, got, role)
		}
		return nil
	}
	for _, step := range []struct {
		k    history.Key
		m    *history.Meta
		role string
	}{{a, ma, "system"}, {b, mb, "system"}, {a, ma, "system"}, {a, ma, "developer"}, {a, ma, "system"}} {
		if err := check(step.k, step.m, step.role); err != nil {
			t.Error(err)
		}
	}

	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := range 4 {
		k, m := a, ma
		if i%2 == 1 {
			k, m = b, mb
		}
		wg.Go(func() {
			for range 200 {
				if err := check(k, m, "system"); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Conversations whose summaries share a set of the memo each keep their
// message while the set has a way for them: planned in turns, none is
// escaped again. Direct-mapped, they evicted one another on every
// request.
func TestInjectedKeepsASetsConversations(t *testing.T) {
	first := history.Key{Tenant: "t", Conversation: "c0"}
	set := memoSet(first)
	for i := range set {
		set[i].Store(nil) // what other tests left there
	}
	keys := []history.Key{first}
	for i := 1; len(keys) < memoWays; i++ {
		if k := (history.Key{Tenant: "t", Conversation: fmt.Sprint("c", i)}); memoSet(k) == set {
			keys = append(keys, k)
		}
	}
	metas := make([]*history.Meta, len(keys))
	made := make([][]byte, len(keys))
	for i, k := range keys {
		metas[i] = &history.Meta{Incarnation: 1, Summaries: 1, Summary: &history.Summary{Text: "About " + k.Conversation + ".", Through: 4}}
		made[i] = injected(k, metas[i], "system")
	}
	for round := range 3 {
		for i, k := range keys {
			if got := injected(k, metas[i], "system"); &got[0] != &made[i][0] {
				t.Errorf("round %d: %s's summary was escaped again", round, k.Conversation)
			}
		}
	}

	// A new summary replaces the conversation's own entry, not another's.
	metas[0] = &history.Meta{Incarnation: 1, Summaries: 2, Summary: &history.Summary{Text: "Newer.", Through: 6}}
	made[0] = injected(keys[0], metas[0], "system")
	for i, k := range keys {
		if got := injected(k, metas[i], "system"); &got[0] != &made[i][0] {
			t.Errorf("after a new summary: %s's summary was escaped again", k.Conversation)
		}
	}
}
