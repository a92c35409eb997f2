package api_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/api"
	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/store/badgerstore/badgertest"
)

// blockingStore holds the searches of the tenants block names until
// release is closed or their context ends, and tells entered of each.
type blockingStore struct {
	history.Store
	block   map[string]bool
	entered chan string
	release chan struct{}
}

func (s *blockingStore) Search(ctx context.Context, tenant string, q history.SearchQuery) ([]history.Hit, error) {
	if !s.block[tenant] {
		return s.Store.Search(ctx, tenant, q)
	}
	s.entered <- tenant
	select {
	case <-s.release:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// heavyHandler is a handler over st whose caller is the tenant named by
// the X-Tenant header.
func heavyHandler(t *testing.T, st history.Store, cfg api.Config) *api.Handler {
	t.Helper()
	cfg.Store = st
	cfg.Authenticate = func(rc *fasthttp.RequestCtx) (auth.Caller, error) {
		id := string(rc.Request.Header.Peek("X-Tenant"))
		return auth.Caller{Tenant: &config.Tenant{ID: id}, Namespace: id}, nil
	}
	h, err := api.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// searchAs searches as tenant and returns the finished request.
func searchAs(h *api.Handler, tenant string) *fasthttp.RequestCtx {
	rc := &fasthttp.RequestCtx{}
	rc.Request.Header.SetMethod("GET")
	rc.Request.SetRequestURI(api.Prefix + "search?q=kiwi")
	rc.Request.Header.Set("X-Tenant", tenant)
	h.Handle(rc)
	return rc
}

// waitEntered waits for n searches to reach the store.
func waitEntered(t *testing.T, st *blockingStore, n int) {
	t.Helper()
	for range n {
		select {
		case <-st.entered:
		case <-time.After(10 * time.Second):
			t.Fatal("a search did not reach the store within 10s")
		}
	}
}

func TestHeavyFloodGets429WhileOtherTenantsSearch(t *testing.T) {
	st := &blockingStore{Store: badgertest.Open(t), block: map[string]bool{"a": true, "c": true},
		entered: make(chan string, 16), release: make(chan struct{})}
	h := heavyHandler(t, st, api.Config{MaxHeavy: 3, MaxHeavyPerTenant: 2, HeavyTimeout: time.Minute})

	// Tenant a fills its bound with two searches held in the store.
	done := make(chan *fasthttp.RequestCtx, 8)
	for range 2 {
		go func() { done <- searchAs(h, "a") }()
	}
	waitEntered(t, st, 2)

	// Its third is refused at once, in OpenAI's shape, with Retry-After.
	rc := searchAs(h, "a")
	var e struct {
		Error struct{ Type, Code, Message string } `json:"error"`
	}
	json.Unmarshal(rc.Response.Body(), &e)
	if rc.Response.StatusCode() != 429 || e.Error.Code != "rate_limit_exceeded" || e.Error.Message == "" {
		t.Errorf("got %d %s, want 429 rate_limit_exceeded", rc.Response.StatusCode(), rc.Response.Body())
	}
	if got := string(rc.Response.Header.Peek("Retry-After")); got != "1" {
		t.Errorf("got Retry-After %q, want \"1\"", got)
	}

	// Another tenant's search, within the bounds, is answered meanwhile.
	if rc := searchAs(h, "b"); rc.Response.StatusCode() != 200 {
		t.Errorf("tenant b: got %d %s, want 200", rc.Response.StatusCode(), rc.Response.Body())
	}

	// c takes the last global slot; d waits for one rather than fail,
	// and gets it when a's searches end.
	go func() { done <- searchAs(h, "c") }()
	waitEntered(t, st, 1)
	dDone := make(chan *fasthttp.RequestCtx, 1)
	go func() { dDone <- searchAs(h, "d") }()
	select {
	case rc := <-dDone:
		t.Fatalf("d answered %d while every slot was held, want it to wait", rc.Response.StatusCode())
	case <-st.entered:
		t.Fatal("d reached the store while every slot was held")
	default:
	}
	close(st.release)
	for range 3 {
		if rc := <-done; rc.Response.StatusCode() != 200 {
			t.Errorf("a held search: got %d %s, want 200", rc.Response.StatusCode(), rc.Response.Body())
		}
	}
	wantAnswer(t, dDone, 200, "d, once the others ended,")
	// Every slot is free again: a's bound is whole.
	st.block = nil
	if rc := searchAs(h, "a"); rc.Response.StatusCode() != 200 {
		t.Errorf("a after its searches ended: got %d %s, want 200", rc.Response.StatusCode(), rc.Response.Body())
	}
}

func TestHeavyCallIsCutOffAtItsTimeBudget(t *testing.T) {
	st := &blockingStore{Store: badgertest.Open(t), block: map[string]bool{"a": true},
		entered: make(chan string, 1), release: make(chan struct{})}
	// The store holds the search until its context ends: only the heavy
	// budget, not the hour-long Timeout, can end it.
	h := heavyHandler(t, st, api.Config{Timeout: time.Hour, HeavyTimeout: 20 * time.Millisecond})
	done := make(chan *fasthttp.RequestCtx, 1)
	go func() { done <- searchAs(h, "a") }()
	wantAnswer(t, done, 504, "the search past its budget")
}

// wantAnswer waits, 10s at most, for the call done hands over, and checks
// its status; who names the call in failures.
func wantAnswer(t *testing.T, done <-chan *fasthttp.RequestCtx, status int, who string) {
	t.Helper()
	select {
	case rc := <-done:
		if rc.Response.StatusCode() != status {
			t.Errorf("%s: got %d %s, want %d", who, rc.Response.StatusCode(), rc.Response.Body(), status)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no answer within 10s", who)
	}
}
