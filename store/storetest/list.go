package storetest

import (
	"slices"
	"strconv"
	"testing"

	"github.com/recallproxy/recall/history"
)

func ids(page []history.Entry) []string {
	return each(page, func(e history.Entry) string { return e.Conversation })
}

// listAll pages through q.Limit at a time and returns every id, checking
// that more is true on every page but the last.
func listAll(t *testing.T, s history.Store, tenant string, q history.ListQuery) []string {
	t.Helper()
	var out []string
	for range 100 {
		page, more, err := s.List(ctx, tenant, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > q.Limit {
			t.Fatalf("got a page of %d, want at most %d", len(page), q.Limit)
		}
		out = append(out, ids(page)...)
		if !more {
			return out
		}
		if len(page) == 0 {
			t.Fatal("got an empty page with more")
		}
		q.After = page[len(page)-1].Conversation
	}
	t.Fatal("paging does not end")
	return nil
}

// fill commits one turn to conversations c1..cn of tenant, ci at i seconds,
// and returns their ids newest first.
func fill(t *testing.T, s history.Store, tenant string, n int) []string {
	t.Helper()
	var newest []string
	for i := 1; i <= n; i++ {
		id := "c" + strconv.Itoa(i)
		MustCommit(t, s, history.Key{Tenant: tenant, Conversation: id}, history.Change{Append: Turns(i, 1), Now: int64(i) * 1e9})
		newest = slices.Insert(newest, 0, id)
	}
	return newest
}

// List orders by last activity, newest first (or oldest first), the entry
// carrying the stored metadata; a commit moves a conversation to the
// front, a summary landing does not.
func testListOrder(t *testing.T, s history.Store) {
	newest := fill(t, s, "t", 5)
	page, more, err := s.List(ctx, "t", history.ListQuery{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(page), newest) || more {
		t.Fatalf("got %v more %v, want %v and no more", ids(page), more, newest)
	}
	for _, e := range page {
		snap, err := s.Load(ctx, history.Key{Tenant: "t", Conversation: e.Conversation}, history.Query{})
		if err != nil {
			t.Fatal(err)
		}
		if e.Meta.Version != snap.Meta.Version || e.Meta.UpdatedAt != snap.Meta.UpdatedAt || e.Meta.Messages != 2 || e.Meta.FirstHash != snap.Meta.FirstHash {
			t.Errorf("%s: got entry meta %+v, want the stored %+v", e.Conversation, e.Meta, snap.Meta)
		}
	}
	oldest := slices.Clone(newest)
	slices.Reverse(oldest)
	if got := listAll(t, s, "t", history.ListQuery{Limit: 50, Oldest: true}); !slices.Equal(got, oldest) {
		t.Errorf("oldest first: got %v, want %v", got, oldest)
	}

	// A summary lands on c2 (no activity), then a turn on c3.
	if _, err := Land(s, history.Key{Tenant: "t", Conversation: "c2"},
		history.SummaryChange{Summary: history.Summary{Text: "s", Through: 1}}); err != nil {
		t.Fatal(err)
	}
	if got := listAll(t, s, "t", history.ListQuery{Limit: 50}); !slices.Equal(got, newest) {
		t.Errorf("after a summary: got %v, want %v unchanged", got, newest)
	}
	page, _, err = s.List(ctx, "t", history.ListQuery{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if e := page[3]; e.Conversation != "c2" || e.Meta.Summary == nil {
		t.Errorf("after a summary: got entry %+v, want c2 with its summary", e)
	}
	MustCommit(t, s, history.Key{Tenant: "t", Conversation: "c3"}, history.Change{Append: Turns(9, 1), Now: 9e9})
	if got, want := listAll(t, s, "t", history.ListQuery{Limit: 50}), []string{"c3", "c5", "c4", "c2", "c1"}; !slices.Equal(got, want) {
		t.Errorf("after a turn on c3: got %v, want %v", got, want)
	}
}

// Paging with After lists every conversation once, in order, and a
// conversation written between two pages never makes another one repeat
// or go missing.
func testListPaging(t *testing.T, s history.Store) {
	newest := fill(t, s, "t", 7) // c7 c6 ... c1
	for _, limit := range []int{1, 2, 3, 7, 8} {
		if got := listAll(t, s, "t", history.ListQuery{Limit: limit}); !slices.Equal(got, newest) {
			t.Errorf("limit %d: got %v, want %v", limit, got, newest)
		}
		oldest := slices.Clone(newest)
		slices.Reverse(oldest)
		if got := listAll(t, s, "t", history.ListQuery{Limit: limit, Oldest: true}); !slices.Equal(got, oldest) {
			t.Errorf("limit %d oldest first: got %v, want %v", limit, got, oldest)
		}
	}

	page, more, err := s.List(ctx, "t", history.ListQuery{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(page), []string{"c7", "c6", "c5"}) || !more {
		t.Fatalf("first page: got %v more %v", ids(page), more)
	}
	// Between the pages: c2 (on a later page) and c6 (on this one) are
	// written, and move to the front.
	MustCommit(t, s, history.Key{Tenant: "t", Conversation: "c2"}, history.Change{Append: Turns(20, 1), Now: 20e9})
	MustCommit(t, s, history.Key{Tenant: "t", Conversation: "c6"}, history.Change{Append: Turns(21, 1), Now: 21e9})
	rest := listAll(t, s, "t", history.ListQuery{Limit: 3, After: "c5"})
	for _, id := range []string{"c4", "c3", "c1"} { // not written in between: exactly once, in order
		if n := count(rest, id); n != 1 {
			t.Errorf("after a write between pages: got %s %d times in %v, want once", id, n, rest)
		}
	}
	for _, id := range []string{"c7", "c5"} { // on the first page, not written since
		if slices.Contains(rest, id) {
			t.Errorf("after a write between pages: got %s again in %v", id, rest)
		}
	}
	if i, j, k := slices.Index(rest, "c4"), slices.Index(rest, "c3"), slices.Index(rest, "c1"); !(i < j && j < k) {
		t.Errorf("got %v, want c4, c3, c1 in that order", rest)
	}
	if got, want := listAll(t, s, "t", history.ListQuery{Limit: 50}), []string{"c6", "c2", "c7", "c5", "c4", "c3", "c1"}; !slices.Equal(got, want) {
		t.Errorf("from the start again: got %v, want %v", got, want)
	}
	if page, more, err := s.List(ctx, "t", history.ListQuery{Limit: 3, After: "c1"}); err != nil || len(page) != 0 || more {
		t.Errorf("after the last: got %v more %v %v, want an empty last page", ids(page), more, err)
	}
}

func count(ids []string, id string) int {
	n := 0
	for _, x := range ids {
		if x == id {
			n++
		}
	}
	return n
}

// UpdatedBefore, Skip and Keep narrow a list (retention uses them).
func testListFilters(t *testing.T, s history.Store) {
	fill(t, s, "t", 6) // ci updated at i seconds
	// c4 gets a second turn at 6.5 s (4 messages): c4 c6 c5 c3 c2 c1.
	MustCommit(t, s, history.Key{Tenant: "t", Conversation: "c4"}, history.Change{Append: Turns(7, 1), Now: 6.5e9})
	tests := []struct {
		name string
		q    history.ListQuery
		want []string
	}{
		{"updated before", history.ListQuery{Limit: 10, UpdatedBefore: 4e9}, []string{"c3", "c2", "c1"}},
		{"updated before, oldest first", history.ListQuery{Limit: 10, UpdatedBefore: 4e9, Oldest: true}, []string{"c1", "c2", "c3"}},
		{"updated before, paged", history.ListQuery{Limit: 2, UpdatedBefore: 4e9}, []string{"c3", "c2", "c1"}},
		{"updated before the first", history.ListQuery{Limit: 10, UpdatedBefore: 1e9}, nil},
		{"skip", history.ListQuery{Limit: 2, Skip: 2}, []string{"c5", "c3"}},
		{"skip oldest first", history.ListQuery{Limit: 10, Skip: 4, Oldest: true}, []string{"c6", "c4"}},
		{"skip everything", history.ListQuery{Limit: 10, Skip: 6}, nil},
		{"keep", history.ListQuery{Limit: 10, Keep: func(m *history.Meta) bool { return m.Messages > 2 }}, []string{"c4"}},
		{"keep counts toward the limit only what it keeps", history.ListQuery{Limit: 2, Keep: func(m *history.Meta) bool { return m.UpdatedAt%2e9 != 0 }}, []string{"c4", "c5", "c3", "c1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			if tt.q.Skip > 0 { // skip applies to one page
				page, _, err := s.List(ctx, "t", tt.q)
				if err != nil {
					t.Fatal(err)
				}
				got = ids(page)
			} else {
				got = listAll(t, s, "t", tt.q)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// A tenant never lists another's conversations, even one whose name
// extends it.
func testListTenants(t *testing.T, s history.Store) {
	for _, k := range []history.Key{{Tenant: "t", Conversation: "mine"}, {Tenant: "tt", Conversation: "theirs"}, {Tenant: "u", Conversation: "mine"}} {
		MustCommit(t, s, k, history.Change{Append: Turns(1, 1)})
	}
	for tenant, want := range map[string][]string{"t": {"mine"}, "tt": {"theirs"}, "u": {"mine"}, "nobody": nil} {
		if got := listAll(t, s, tenant, history.ListQuery{Limit: 10}); !slices.Equal(got, want) {
			t.Errorf("tenant %q: got %v, want %v", tenant, got, want)
		}
	}
}

// Namespaces lists the namespaces holding a conversation under a prefix,
// in byte order and in pages; a namespace whose last conversation is
// deleted is no longer listed.
func testNamespaces(t *testing.T, s history.Store) {
	for _, ns := range []string{"a", "a.pt.3", "a.pt.1", "a.pt.2", "a.ptx", "b.pt.1", "a.pt.1"} {
		MustCommit(t, s, history.Key{Tenant: ns, Conversation: "c" + strconv.Itoa(len(ns))}, history.Change{Append: Turns(1, 1)})
	}
	MustCommit(t, s, history.Key{Tenant: "a.pt.2", Conversation: "second"}, history.Change{Append: Turns(1, 1)})
	var got []string
	after := ""
	for range 10 {
		page, err := s.Namespaces(ctx, "a.pt.", after, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		got = append(got, page...)
		after = page[len(page)-1]
	}
	if want := []string{"a.pt.1", "a.pt.2", "a.pt.3"}; !slices.Equal(got, want) {
		t.Errorf("namespaces under a.pt.: got %q, want %q", got, want)
	}
	all, err := s.Namespaces(ctx, "", "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "a.pt.1", "a.pt.2", "a.pt.3", "a.ptx", "b.pt.1"}; !slices.Equal(all, want) {
		t.Errorf("every namespace: got %q, want %q", all, want)
	}
	if err := s.Delete(ctx, history.Key{Tenant: "a.pt.3", Conversation: "c6"}); err != nil {
		t.Fatal(err)
	}
	if page, err := s.Namespaces(ctx, "a.pt.", "a.pt.2", 10); err != nil || len(page) != 0 {
		t.Errorf("after deleting a.pt.3's only conversation: got %q, %v; want none", page, err)
	}
}
