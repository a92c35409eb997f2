package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/proxy"
)

// flakyStore is a store that can be made unreachable, as a database that
// went away: every call then fails with history.ErrUnavailable.
type flakyStore struct {
	history.Store
	down atomic.Bool
}

var errGone = fmt.Errorf("test: %w: connection refused", history.ErrUnavailable)

func (f *flakyStore) Load(ctx context.Context, k history.Key, q history.Query) (history.Snapshot, error) {
	if f.down.Load() {
		return history.Snapshot{}, errGone
	}
	return f.Store.Load(ctx, k, q)
}

func (f *flakyStore) Commit(ctx context.Context, k history.Key, c history.Change) (history.Meta, error) {
	if f.down.Load() {
		return history.Meta{}, errGone
	}
	return f.Store.Commit(ctx, k, c)
}

func (f *flakyStore) ping(context.Context) error {
	if f.down.Load() {
		return errGone
	}
	return nil
}

// TestStoreUnavailable: while the store cannot be reached a chat request
// gets 503 store_unavailable, nothing is recorded and /readyz says not
// ready; once it is back, requests are served and recorded again.
func TestStoreUnavailable(t *testing.T) {
	var flaky *flakyStore
	h := newHarness(t, e2etest.Options{Proxy: func(c *proxy.Config) {
		flaky = &flakyStore{Store: c.Store}
		c.Store, c.Ping = flaky, flaky.ping
	}})
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`
	ready := func() int {
		resp, err := http.Get(h.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}

	flaky.down.Store(true)
	r := h.Post("/v1/chat/completions", "sk-test", "c1", body)
	if r.Status != 503 {
		t.Fatalf("store down: got %d, want 503: %s", r.Status, r.Body)
	}
	checkErrorShape(t, []byte(r.Body), "server_error", "store_unavailable")
	h.WaitDone("c1")
	if got := ready(); got != 503 {
		t.Errorf("store down: /readyz got %d, want 503", got)
	}
	if n := h.Up.Count(); n != 0 {
		t.Errorf("store down: got %d upstream requests, want none", n)
	}

	flaky.down.Store(false)
	if got := ready(); got != 200 {
		t.Errorf("store back: /readyz got %d, want 200", got)
	}
	r = h.Post("/v1/chat/completions", "sk-test", "c1", body)
	if r.Status != 200 {
		t.Fatalf("store back: got %d: %s", r.Status, r.Body)
	}
	if d := h.WaitDone("c1"); !d.Committed {
		t.Fatalf("store back: not recorded: %v", d.Err)
	}
	if got := len(h.Stored(h.PassNamespace("sk-test"), "c1")); got != 2 {
		t.Errorf("got %d stored messages, want 2 (the refused request stored nothing)", got)
	}
}

// countingLeaser is a history.Leaser in memory that records the leases
// taken, and can fail as an unreachable store does.
type countingLeaser struct {
	mu    sync.Mutex
	held  map[string]bool
	taken []string
	fail  bool
}

func (l *countingLeaser) Acquire(ctx context.Context, name string) (func(), error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail {
		return nil, errGone
	}
	if l.held[name] {
		return nil, errors.New("test: lease already held: the exchange did not wait")
	}
	l.held[name] = true
	l.taken = append(l.taken, name)
	return func() { l.mu.Lock(); delete(l.held, name); l.mu.Unlock() }, nil
}

func (l *countingLeaser) TryAcquire(ctx context.Context, name string) (func(), bool, error) {
	r, err := l.Acquire(ctx, name)
	return r, err == nil, err
}

// TestExchangeTakesTheLease: with a Leaser, each exchange holds its
// conversation's lease and releases it; a lease the store cannot give is
// a 503 before the upstream is called.
func TestExchangeTakesTheLease(t *testing.T) {
	l := &countingLeaser{held: map[string]bool{}}
	h := newHarness(t, e2etest.Options{Proxy: func(c *proxy.Config) { c.Leaser = l }})
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`
	for range 2 {
		if r := h.Post("/v1/chat/completions", "sk-test", "c1", body); r.Status != 200 {
			t.Fatalf("got %d: %s", r.Status, r.Body)
		}
		h.WaitDone("c1")
	}
	l.mu.Lock()
	want := history.LeaseName(history.LeaseConversation, history.Key{Tenant: h.PassNamespace("sk-test"), Conversation: "c1"})
	if len(l.taken) != 2 || l.taken[0] != want || l.taken[1] != want || len(l.held) != 0 {
		t.Errorf("got leases taken %v, held %v; want %s twice, none held", l.taken, l.held, want)
	}
	l.fail = true
	l.mu.Unlock()
	r := h.Post("/v1/chat/completions", "sk-test", "c2", body)
	if r.Status != 503 {
		t.Fatalf("lease unavailable: got %d, want 503: %s", r.Status, r.Body)
	}
	checkErrorShape(t, []byte(r.Body), "server_error", "store_unavailable")
	h.WaitDone("c2")
	if n := h.Up.Count(); n != 2 {
		t.Errorf("got %d upstream requests, want 2", n)
	}
}
