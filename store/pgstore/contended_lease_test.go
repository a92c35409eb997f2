package pgstore_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/store/pgstore"
)

// clock is an injected clock, moved by hand.
type clock struct{ ns atomic.Int64 }

func (c *clock) Now() time.Time                  { return time.Unix(0, c.ns.Load()) }
func (c *clock) Add(d time.Duration)             { c.ns.Add(int64(d)) }
func newClock(t time.Time) *clock                { c := &clock{}; c.ns.Store(t.UnixNano()); return c }
func (c *clock) after(d time.Duration) time.Time { return c.Now().Add(d) }

// leaseQuery marks, in a query's context, a statement on the leases.
type leaseQuery struct{}

// leaseTrips counts round trips (roundTrips) and the statements on the
// lease table, and signals each lease release once it returned.
type leaseTrips struct {
	roundTrips
	leases   atomic.Int64
	released chan struct{}
}

func (l *leaseTrips) TraceQueryStart(ctx context.Context, c *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "recall_leases") {
		l.leases.Add(1)
		if strings.HasPrefix(d.SQL, "DELETE") {
			ctx = context.WithValue(ctx, leaseQuery{}, true)
		}
	}
	return l.roundTrips.TraceQueryStart(ctx, c, d)
}

func (l *leaseTrips) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	if ctx.Value(leaseQuery{}) != nil {
		l.released <- struct{}{}
	}
}

// waitReleased waits for a lease release, with a deadline.
func (l *leaseTrips) waitReleased(t *testing.T, name string) {
	t.Helper()
	select {
	case <-l.released:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: the lease was never released", name)
	}
}

// TestLeaseOnlyWhileContended: through a proxy.Server on PostgreSQL with
// the window cache, a chat request on a quiet conversation takes no lease
// (two round trips); once the conversation is marked contended, a request
// reads the mark with the head, takes the conversation's lease, plans
// again under it, commits and releases it (five round trips, two on the
// lease table), and a conversation API change holds it too; once the
// window has passed (the store's clock), no lease again.
func TestLeaseOnlyWhileContended(t *testing.T) {
	clk := newClock(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC))
	rt := &leaseTrips{released: make(chan struct{}, 4)}
	url := pgtest.DB(t)
	s := open(t, url, pgstore.Options{Tracer: rt, Now: clk.Now})
	// A second replica on the database: alone, the first would trust its
	// window cache without reading heads, and no conversation is
	// contended across replicas.
	open(t, url, pgstore.Options{})
	up := upstreamtest.NewTB(t)
	g := config.DefaultGlobal()
	g.Defaults.Upstream.BaseURL = up.URL()
	tenants, err := config.LoadTenants(g, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan proxy.ExchangeDone, 16)
	srv, err := proxy.New(proxy.Config{Tenants: proxy.StaticTenants{Set: tenants}, Store: history.NewCache(s, 0, 0),
		Now: clk.Now, OnExchangeDone: func(d proxy.ExchangeDone) { done <- d }})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())
	client := openai.NewClient(option.WithBaseURL("http://"+ln.Addr().String()+"/v1"), option.WithAPIKey("sk-busy"),
		option.WithHeader("X-Conversation-ID", "busy"), option.WithMaxRetries(0))

	ask := func(name string, wantTrips, wantLease int) {
		t.Helper()
		rt.take()
		rt.leases.Store(0)
		_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello " + name)}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d := <-done; !d.Committed {
			t.Fatalf("%s: not committed: %v", name, d.Err)
		}
		if wantLease > 0 {
			rt.waitReleased(t, name)
		}
		if got := rt.take(); got != wantTrips {
			t.Errorf("%s: got %d round trips, want %d", name, got, wantTrips)
		}
		if got := rt.leases.Load(); got != int64(wantLease) {
			t.Errorf("%s: got %d statements on the lease table, want %d", name, got, wantLease)
		}
	}
	ask("first (cache miss: a load)", 2, 0)
	ask("quiet", 2, 0)

	ns, err := s.Namespaces(testCtx(t), "", "", 10)
	if err != nil || len(ns) != 1 {
		t.Fatalf("got namespaces %v (%v), want one", ns, err)
	}
	k := history.Key{Tenant: ns[0], Conversation: "busy"}
	if err := s.MarkContended(testCtx(t), k, clk.after(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	// Head read (contended), lease take, head read under it, commit,
	// lease release.
	ask("contended", 5, 2)
	// The conversation API's changes hold the lease while it lasts too.
	update := func(name string, wantLease int) {
		t.Helper()
		rt.leases.Store(0)
		req, _ := http.NewRequest("POST", "http://"+ln.Addr().String()+"/v1/conversations/busy", strings.NewReader(`{"metadata":{"topic":"`+name+`"}}`))
		req.Header.Set("Authorization", "Bearer sk-busy")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: got %d %s, want 200", name, resp.StatusCode, b)
		}
		if wantLease > 0 {
			rt.waitReleased(t, name)
		}
		if got := rt.leases.Load(); got != int64(wantLease) {
			t.Errorf("%s: got %d statements on the lease table, want %d", name, got, wantLease)
		}
	}
	update("api change, contended", 2)
	clk.Add(29 * time.Second)
	ask("contended, late in the window", 5, 2)
	clk.Add(2 * time.Second)
	ask("window passed", 2, 0)
	update("api change, window passed", 0)
}

// TestMarkContended: the mark opens a window that the head read and the
// load report until the store's clock passes it; a later mark never
// shortens it; it changes neither the head (a replica's cached window
// stays valid) nor a conversation the store does not hold.
func TestMarkContended(t *testing.T) {
	clk := newClock(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC))
	s := open(t, pgtest.DB(t), pgstore.Options{Now: clk.Now})
	ctx := testCtx(t)
	k := history.Key{Tenant: "acme", Conversation: "c1"}

	if err := s.MarkContended(ctx, history.Key{Tenant: "acme", Conversation: "none"}, clk.after(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if h, err := s.Head(ctx, history.Key{Tenant: "acme", Conversation: "none"}); err != nil || h != (history.Head{}) {
		t.Fatalf("unstored conversation: got head %+v (%v), want the zero head", h, err)
	}

	commit(t, s, k, history.Change{Append: []history.Message{user("hi", 5), asst("hello", 5)}})
	before, err := s.Head(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.MarkContended(ctx, k, clk.after(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkContended(ctx, k, clk.after(10*time.Second)); err != nil { // does not shorten it
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		step time.Duration
		want bool
	}{
		{"marked", 0, true},
		{"past the shorter mark", 20 * time.Second, true},
		{"at the window's end", 10 * time.Second, false},
	} {
		clk.Add(tc.step)
		h, err := s.Head(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if h.Contended != tc.want || !h.Same(before) {
			t.Errorf("%s: got head %+v, want %+v contended %v", tc.name, h, before, tc.want)
		}
		snap, err := s.Load(ctx, k, history.Query{})
		if err != nil {
			t.Fatal(err)
		}
		if snap.Contended != tc.want || snap.Meta.Version != before.Version {
			t.Errorf("%s: load: got contended %v version %d, want %v and %d", tc.name, snap.Contended, snap.Meta.Version, tc.want, before.Version)
		}
	}
}
