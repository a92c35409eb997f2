package pgstore_test

import (
	"context"
	"net"
	"os"
	"sync"
	"testing"

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

// roundTrips counts the round trips to the database: a statement on its
// own is one, a pipelined batch is one.
type roundTrips struct {
	mu      sync.Mutex
	n       int
	inBatch int // batches under way (their statements are not counted)
}

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.mu.Lock()
	if r.inBatch == 0 {
		r.n++
	}
	r.mu.Unlock()
	return ctx
}
func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.mu.Lock()
	r.n++
	r.inBatch++
	r.mu.Unlock()
	return ctx
}
func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {
	r.mu.Lock()
	r.inBatch--
	r.mu.Unlock()
}

func (r *roundTrips) take() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.n
	r.n = 0
	return n
}

// TestRoundTripsPerChatRequest counts the database round trips of chat
// requests through a proxy.Server on PostgreSQL with the window cache, as
// cmd/recall serves: a head read (or a load when the cache misses) and a
// commit in one statement. No lease.
func TestRoundTripsPerChatRequest(t *testing.T) {
	rt := &roundTrips{}
	s := open(t, pgtest.DB(t), pgstore.Options{Tracer: rt})
	up := upstreamtest.NewTB(t)
	g := config.DefaultGlobal()
	g.Defaults.Upstream.BaseURL = up.URL()
	tenants, err := config.LoadTenants(g, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan proxy.ExchangeDone, 16)
	srv, err := proxy.New(proxy.Config{Tenants: proxy.StaticTenants{Set: tenants}, Store: history.NewCache(s, 0, 0),
		OnExchangeDone: func(d proxy.ExchangeDone) { done <- d }})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())
	client := openai.NewClient(option.WithBaseURL("http://"+ln.Addr().String()+"/v1"), option.WithAPIKey("sk-rt"),
		option.WithHeader("X-Conversation-ID", "rt"), option.WithMaxRetries(0))
	rt.take()
	for i, want := range []int{2, 2, 2} { // the first misses the cache: a load instead of a head read
		_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}})
		if err != nil {
			t.Fatal(err)
		}
		if d := <-done; !d.Committed {
			t.Fatalf("request %d not committed: %v", i, d.Err)
		}
		if got := rt.take(); got != want {
			t.Errorf("request %d: %d round trips, want %d", i, got, want)
		}
	}
}
