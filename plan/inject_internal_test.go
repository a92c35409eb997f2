package plan

import (
	"fmt"
	"hash/maphash"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/history"
)

// Conversations whose summaries share a memo slot, or a role that
// changes, each get their own summary's message, also when planned at
// once (run with -race).
func TestInjectedKeepsConversationsAndRolesApart(t *testing.T) {
	// Two conversations that hash to the same slot, with summaries of the
	// same version, coverage and length.
	slot := func(k history.Key) uint64 { return maphash.Comparable(memoSeed, k) & (summaryMemoSlots - 1) }
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
