package proxy_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
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
