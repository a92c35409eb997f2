package retention_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/retention"
	"github.com/recallproxy/recall/store/badgerstore"
	"github.com/recallproxy/recall/wire"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// seed opens a Badger store and writes conversations c0..c(n-1) in
// namespace ns, ci last updated at t0 + i hours.
func seed(t *testing.T, ns string, n int) *badgerstore.Store {
	t.Helper()
	s, err := badgerstore.Open(t.TempDir(), badgerstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	write(t, s, ns, n)
	return s
}

func write(t *testing.T, s history.Store, ns string, n int) {
	t.Helper()
	for i := range n {
		k := history.Key{Tenant: ns, Conversation: fmt.Sprint("c", i)}
		msg := history.Message{Role: wire.RoleUser, Raw: []byte(`{"role":"user","content":"hi"}`), Tokens: 3, Hash: uint64(i + 1)}
		if _, err := s.Commit(context.Background(), k, history.Change{Append: []history.Message{msg}, Now: t0.Add(time.Duration(i) * time.Hour).UnixNano()}); err != nil {
			t.Fatal(err)
		}
	}
}

func ids(t *testing.T, s history.Store, ns string) []string {
	t.Helper()
	page, _, err := s.List(context.Background(), ns, history.ListQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range page {
		out = append(out, e.Conversation)
	}
	slices.Sort(out)
	return out
}

func TestTTLExpiresConversationsUntouchedThatLong(t *testing.T) {
	s := seed(t, "acme", 5) // c0..c4 at t0+0h..t0+4h
	write(t, s, "globex", 5)
	now := t0.Add(4*time.Hour + 30*time.Minute)
	reg := prometheus.NewRegistry()
	r, err := retention.New(retention.Config{
		Store: s,
		Policies: func() []retention.Policy {
			return []retention.Policy{{Tenant: "acme", Namespace: "acme", TTL: 2 * time.Hour}}
		},
		Now:        func() time.Time { return now },
		Registerer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Untouched for more than 2h at 4h30: c0 (4h30), c1 (3h30), c2 (2h30).
	if res := r.Pass(context.Background()); res.Expired != 3 || res.Capped != 0 {
		t.Errorf("pass removed %+v, want 3 expired", res)
	}
	if got := ids(t, s, "acme"); !slices.Equal(got, []string{"c3", "c4"}) {
		t.Errorf("acme keeps %q", got)
	}
	if got := ids(t, s, "globex"); len(got) != 5 {
		t.Errorf("globex, without a policy, keeps %q", got)
	}
	if got := testutil.ToFloat64(r.Removed("acme", "ttl")); got != 3 {
		t.Errorf("removed metric %v, want 3", got)
	}
	// On the registry /metrics serves.
	if n, err := testutil.GatherAndCount(reg, "recall_retention_removed_total", "recall_retention_passes_total"); err != nil || n != 2 {
		t.Errorf("registry has %d of the retention series (%v), want 2", n, err)
	}
	// The clock moves on: the next pass takes the next one.
	now = now.Add(time.Hour)
	if res := r.Pass(context.Background()); res.Expired != 1 {
		t.Errorf("second pass %+v, want 1 expired", res)
	}
}

func TestMaxConversationsRemovesTheLeastRecentlyUsed(t *testing.T) {
	s := seed(t, "acme", 6)
	r, err := retention.New(retention.Config{
		Store:    s,
		Policies: func() []retention.Policy { return []retention.Policy{{Tenant: "acme", Namespace: "acme", Max: 2}} },
		Batch:    3,
		Now:      func() time.Time { return t0 },
	})
	if err != nil {
		t.Fatal(err)
	}
	// Bounded: 3 per pass.
	if res := r.Pass(context.Background()); res.Capped != 3 {
		t.Errorf("first pass %+v, want 3 capped", res)
	}
	if got := ids(t, s, "acme"); !slices.Equal(got, []string{"c3", "c4", "c5"}) {
		t.Errorf("after one pass acme keeps %q", got)
	}
	if res := r.Pass(context.Background()); res.Capped != 1 {
		t.Errorf("second pass %+v, want 1 capped", res)
	}
	if got := ids(t, s, "acme"); !slices.Equal(got, []string{"c4", "c5"}) {
		t.Errorf("acme keeps %q, want the two most recent", got)
	}
	if res := r.Pass(context.Background()); res != (retention.Result{}) {
		t.Errorf("pass at the cap removed %+v", res)
	}
}

// busyLeaser says another process holds every lease.
type busyLeaser struct{ asked []string }

func (b *busyLeaser) Acquire(context.Context, string) (func(), error) { panic("not used") }
func (b *busyLeaser) TryAcquire(_ context.Context, name string) (func(), bool, error) {
	b.asked = append(b.asked, name)
	return nil, false, nil
}

func TestAPassRunsOncePerFleet(t *testing.T) {
	s := seed(t, "acme", 3)
	l := &busyLeaser{}
	r, err := retention.New(retention.Config{
		Store:    s,
		Leaser:   l,
		Policies: func() []retention.Policy { return []retention.Policy{{Tenant: "acme", Namespace: "acme", Max: 1}} },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res := r.Pass(context.Background()); res != (retention.Result{}) {
		t.Errorf("a pass without the lease removed %+v", res)
	}
	if !slices.Equal(l.asked, []string{"retention/acme"}) {
		t.Errorf("leases asked %q", l.asked)
	}
	if got := ids(t, s, "acme"); len(got) != 3 {
		t.Errorf("acme keeps %q", got)
	}
}

// A conversation written between the listing and its removal is kept.
func TestAConversationWrittenMeanwhileIsKept(t *testing.T) {
	s := seed(t, "acme", 3)
	now := t0.Add(10 * time.Hour)
	r, err := retention.New(retention.Config{
		Store: s,
		Policies: func() []retention.Policy {
			return []retention.Policy{{Tenant: "acme", Namespace: "acme", TTL: time.Hour}}
		},
		Now: func() time.Time { return now },
		Lock: func(ctx context.Context, k history.Key) (func(), error) {
			if k.Conversation == "c1" { // a chat request lands first
				snap, err := s.Load(ctx, k, history.Query{})
				if err != nil {
					return nil, err
				}
				msg := history.Message{Role: wire.RoleUser, Raw: []byte(`{"role":"user","content":"back"}`), Tokens: 3}
				if _, err := s.Commit(ctx, k, history.Change{Version: snap.Meta.Version, Append: []history.Message{msg}, Now: now.UnixNano()}); err != nil {
					return nil, err
				}
			}
			return func() {}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res := r.Pass(context.Background()); res.Expired != 2 {
		t.Errorf("pass %+v, want 2 expired", res)
	}
	if got := ids(t, s, "acme"); !slices.Equal(got, []string{"c1"}) {
		t.Errorf("acme keeps %q, want c1", got)
	}
}

// A conversation over the cap that is deleted and made again under the
// same id between the pass's list and its removal (at the same clock
// reading) is another conversation: the pass keeps it.
func TestCapKeepsAConversationMadeAgainSinceTheList(t *testing.T) {
	s := seed(t, "acme", 3) // c0..c2; a cap of 2 removes c0
	ctx := context.Background()
	k := history.Key{Tenant: "acme", Conversation: "c0"}
	remade := false
	r, err := retention.New(retention.Config{
		Store:    s,
		Policies: func() []retention.Policy { return []retention.Policy{{Tenant: "acme", Namespace: "acme", Max: 2}} },
		Now:      func() time.Time { return t0.Add(10 * time.Hour) },
		Lock: func(ctx context.Context, lk history.Key) (func(), error) {
			if lk == k && !remade {
				remade = true
				if err := s.Delete(ctx, k); err != nil {
					return nil, err
				}
				msg := history.Message{Role: wire.RoleUser, Raw: []byte(`{"role":"user","content":"new"}`), Tokens: 3, Hash: 9}
				if _, err := s.Commit(ctx, k, history.Change{Append: []history.Message{msg}, Now: t0.UnixNano()}); err != nil {
					return nil, err
				}
			}
			return func() {}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res := r.Pass(ctx); res.Capped != 0 {
		t.Errorf("pass removed %+v, want nothing", res)
	}
	if !remade {
		t.Fatal("the pass never locked c0")
	}
	if got := ids(t, s, "acme"); !slices.Equal(got, []string{"c0", "c1", "c2"}) {
		t.Errorf("acme keeps %q, want the remade c0 too", got)
	}
}

// A pass-through tenant keeps one namespace per client credential: a
// policy on the namespace prefix applies the rules to each of them, and
// to nothing outside the prefix.
func TestPrefixPolicyCoversEveryCredentialsNamespace(t *testing.T) {
	s := seed(t, "default.pt.aaaa", 3) // c0..c2 at t0+0h..t0+2h
	for _, ns := range []string{"default.pt.bbbb", "default.pt.cccc", "other"} {
		write(t, s, ns, 3)
	}
	r, err := retention.New(retention.Config{
		Store: s,
		Policies: func() []retention.Policy {
			return []retention.Policy{{Tenant: "default", NamespacePrefix: "default.pt.", TTL: 90 * time.Minute}}
		},
		Now:   func() time.Time { return t0.Add(2 * time.Hour) },
		Batch: 2, // more namespaces than a page
	})
	if err != nil {
		t.Fatal(err)
	}
	// At 2h, untouched for more than 90 min: c0 of each credential.
	if res := r.Pass(context.Background()); res.Expired != 3 {
		t.Errorf("pass removed %+v, want 3 expired", res)
	}
	for _, ns := range []string{"default.pt.aaaa", "default.pt.bbbb", "default.pt.cccc"} {
		if got := ids(t, s, ns); !slices.Equal(got, []string{"c1", "c2"}) {
			t.Errorf("%s keeps %q, want c1 and c2", ns, got)
		}
	}
	if got := ids(t, s, "other"); len(got) != 3 {
		t.Errorf("a namespace outside the prefix lost conversations: %q", got)
	}
}
