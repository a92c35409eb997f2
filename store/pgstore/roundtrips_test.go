package pgstore_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/store/pgstore"
	"github.com/recallproxy/recall/summary"
)

// roundTrips counts the round trips to the database: a statement on its
// own is one, a pipelined batch is one.
type roundTrips struct {
	mu      sync.Mutex
	n       int
	inBatch int      // batches under way (their statements are not counted)
	batched []string // the SQL of every statement sent in a batch
}

// openCounted opens a Store on a database of its own, with rt counting
// its round trips.
func openCounted(t *testing.T) (s *pgstore.Store, rt *roundTrips) {
	t.Helper()
	rt = &roundTrips{}
	return open(t, pgtest.DB(t), pgstore.Options{Tracer: rt}), rt
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
func (r *roundTrips) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	r.mu.Lock()
	r.batched = append(r.batched, d.SQL)
	r.mu.Unlock()
}
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
	r.batched = nil
	return n
}

// batchedLike counts the statements sent in batches since the last take
// whose SQL starts with prefix.
func (r *roundTrips) batchedLike(prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, q := range r.batched {
		if strings.HasPrefix(q, prefix) {
			n++
		}
	}
	return n
}

// TestRoundTripsPerChatRequest counts the database round trips of chat
// requests through a proxy.Server on PostgreSQL with the window cache, as
// cmd/recall serves. No lease. Alone on the database, a request with a
// warm window costs its commit alone (one statement); once a second
// replica opened, a head read too; after that replica closed and the
// next upgrade tick, the commit alone again, once the window's head was
// read again.
func TestRoundTripsPerChatRequest(t *testing.T) {
	rt := &roundTrips{}
	url := pgtest.DB(t)
	ticks := make(chan time.Time)
	soles := make(chan bool, 16)
	s := open(t, url, pgstore.Options{Tracer: rt, UpgradeTicks: ticks, OnSole: func(sole bool) { soles <- sole }})
	if got := <-soles; !got {
		t.Fatal("alone on the database: not the sole writer")
	}
	_, tenants := defaultTenants(t)
	done := make(chan proxy.ExchangeDone, 16)
	addr, _ := serve(t, tenants, s, done)
	client := openai.NewClient(option.WithBaseURL("http://"+addr+"/v1"), option.WithAPIKey("sk-rt"),
		option.WithHeader("X-Conversation-ID", "rt"), option.WithMaxRetries(0))
	requests := func(phase string, want ...int) {
		t.Helper()
		rt.take()
		for i, want := range want {
			_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}})
			if err != nil {
				t.Fatal(err)
			}
			if d := <-done; !d.Committed {
				t.Fatalf("%s, request %d not committed: %v", phase, i, d.Err)
			}
			if got := rt.take(); want >= 0 && got != want {
				t.Errorf("%s, request %d: %d round trips, want %d", phase, i, got, want)
			}
		}
	}
	// The first misses the cache: a load, then the commit.
	requests("alone", 2, 1, 1)

	other, err := pgstore.Open(testCtx(t), url, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := <-soles; got {
		t.Fatal("a second replica opened: still the sole writer")
	}
	// The first takes the conversation's lease in its read and keeps it
	// after its commit (keep.go): the next claims it in memory, and its
	// window is the truth: the commit alone.
	requests("with a second replica", 2, 1, 1)

	// The second replica takes a turn of the conversation (a balancer
	// without sticky sessions): it asks for the kept lease, and gets it
	// once the first replica let it go; from then on neither keeps it,
	// and the first replica's next request reads the head and the turn
	// the other added in one statement (taking the lease), then commits
	// (freeing it). The first hand-over waits (-1: not counted).
	addr2, stop2 := serve(t, tenants, other, done)
	client2 := openai.NewClient(option.WithBaseURL("http://"+addr2+"/v1"), option.WithAPIKey("sk-rt"),
		option.WithHeader("X-Conversation-ID", "rt"), option.WithMaxRetries(0))
	for i := range 2 {
		if _, err := client2.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}}); err != nil {
			t.Fatal(err)
		}
		if d := <-done; !d.Committed {
			t.Fatalf("the second replica's request %d not committed: %v", i, d.Err)
		}
		requests("after a turn through the second replica", []int{-1, 2}[i])
	}
	stop2()

	other.Close()
	ticks <- time.Now() // the first tick after it closed: the upgrade
	select {
	case got := <-soles:
		if !got {
			t.Fatal("after the upgrade tick: not the sole writer")
		}
	case <-testCtx(t).Done():
		t.Fatal("the second replica closed: never the sole writer again")
	}
	requests("alone again", 2, 1)
}

// TestRoundTripsOfMessages: reading a conversation's messages is one
// round trip (its transaction sent whole), whether the walk reads every
// message, stops early or finds no conversation; and the one connection
// is left outside a transaction each time, so the next read on it sees
// the commits made since.
func TestRoundTripsOfMessages(t *testing.T) {
	rt := &roundTrips{}
	s := open(t, pgtest.DB(t), pgstore.Options{Tracer: rt, MaxConns: 1})
	ctx := testCtx(t)
	k := history.Key{Tenant: "acme", Conversation: "walk"}
	commit(t, s, k, history.Change{Append: turns(0, 3)})
	walk := func(k history.Key, stopAt int) []string {
		t.Helper()
		rt.take()
		var got []string
		err := s.Messages(ctx, k, 0, false, func(m history.Message) bool {
			got = append(got, string(m.Raw))
			return len(got) != stopAt
		})
		if err != nil {
			t.Fatal(err)
		}
		if n := rt.take(); n != 1 {
			t.Errorf("Messages(%s, stop at %d): %d round trips, want 1", k.Conversation, stopAt, n)
		}
		return got
	}
	if got := walk(k, -1); len(got) != 6 {
		t.Fatalf("every message: %d, want 6", len(got))
	}
	if got := walk(k, 2); len(got) != 2 {
		t.Fatalf("stopped at two: %d", len(got))
	}
	if got := walk(history.Key{Tenant: "acme", Conversation: "none"}, -1); len(got) != 0 {
		t.Fatalf("no conversation: %d messages", len(got))
	}
	commit(t, s, k, history.Change{Append: turns(3, 1)})
	if got := walk(k, -1); len(got) != 8 || got[7] != string(asst("answer 3", 10).Raw) {
		t.Fatalf("after a commit: %d messages, last %q", len(got), got[len(got)-1])
	}
}

// TestRoundTripsPerSummaryJob counts the database round trips of a
// summary job through the window cache, as cmd/recall runs one, with
// the conversation's window cached by the turns that triggered it.
// Alone on the database, the job costs the summary's statement alone:
// its lease is held in memory, the metadata and the turns come from the
// entry, and the summary lands on the head it was made from in one
// statement. While a second replica shares the database, it costs the
// lease's take, two head reads (the job's two reads of the window) and
// the landing, which frees the lease in its own statement (four).
func TestRoundTripsPerSummaryJob(t *testing.T) {
	for _, tc := range []struct {
		name   string
		shared bool
		want   int
	}{
		{"alone", false, 1},
		// Shared: the landing takes the conversation's lease for its
		// commit (another replica may keep it: keep.go), and frees it.
		{"shared", true, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if n := summaryJobRoundTrips(t, tc.shared); n != tc.want {
				t.Errorf("the summary job took %d round trips, want %d", n, tc.want)
			}
		})
	}
}

// summaryJobRoundTrips runs a summary job through the window cache
// after six turns, with a second replica on the database if shared, and
// returns the job's round trips.
func summaryJobRoundTrips(t *testing.T, shared bool) int {
	rt := &roundTrips{}
	soles := make(chan bool, 4)
	url := pgtest.DB(t)
	s := open(t, url, pgstore.Options{Tracer: rt, OnSole: func(sole bool) { soles <- sole }})
	if !<-soles {
		t.Fatal("alone on the database: not the sole writer")
	}
	if shared {
		open(t, url, pgstore.Options{})
		if <-soles {
			t.Fatal("a second replica opened: still the sole writer")
		}
	}
	ctx := testCtx(t)
	up := upstreamtest.NewTB(t)
	g := config.DefaultGlobal()
	g.Defaults.Upstream.BaseURL = up.URL()
	g.Defaults.Upstream.APIKey = config.Secret("sk-upstream")
	g.Defaults.Summary.TriggerTurns, g.Defaults.Summary.KeepTurns = 4, 1
	g.TenantsDir = t.TempDir()
	if err := os.WriteFile(filepath.Join(g.TenantsDir, "acme.yaml"), []byte("id: acme\napi_keys: [sk-acme-client-0123456789]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tenants, err := config.LoadTenants(g, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	cache := history.NewCache(s, 0, 0)
	k := history.Key{Tenant: "acme", Conversation: "sum"}
	done := make(chan summary.JobDone, 4)
	m, err := summary.New(summary.Config{Store: cache, Tenants: proxy.StaticTenants{Set: tenants},
		OnJobDone: func(d summary.JobDone) { done <- d }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Start(ctx); err != nil { // nothing stored yet: no job re-derived
		t.Fatal(err)
	}
	for i := range 6 {
		snap, err := cache.Load(ctx, k, history.Query{})
		if err != nil {
			t.Fatal(err)
		}
		ts := turns(i, 1)
		if _, err := cache.Commit(ctx, k, history.Change{Version: snap.Meta.Version, Base: &snap.Meta, Model: "gpt-4o",
			Now: int64(i+1) * 1e9, Append: ts}); err != nil {
			t.Fatal(err)
		}
	}
	rt.take()
	m.Trigger("acme", k, "gpt-4o", "", false)
	select {
	case d := <-done:
		if d.Outcome != summary.Landed {
			t.Fatalf("job %+v, want landed", d)
		}
	case <-ctx.Done():
		t.Fatal("the job did not run")
	}
	n := rt.take()
	snap, err := s.Load(ctx, k, history.Query{})
	if err != nil || snap.Meta.Summary == nil || snap.Meta.Summaries != 1 {
		t.Fatalf("stored: %+v, %v; want the summary landed", snap.Meta.Summary, err)
	}
	return n
}

// TestRoundTripsPerExchangeShared counts the database round trips of
// each kind of exchange on one replica while a second shares the
// database, through a proxy.Server with the window cache: the
// conversation's lease costs none of its own (taken in the plan's read,
// dropped in the commit). A chat or Responses request with its window
// cached reads the head and commits (two); one chained by
// previous_response_id reads the response's conversation (taking the
// lease) and its turn, then plans from the window and commits (four).
func TestRoundTripsPerExchangeShared(t *testing.T) {
	rt := &roundTrips{}
	url := pgtest.DB(t)
	s := open(t, url, pgstore.Options{Tracer: rt})
	open(t, url, pgstore.Options{}) // the second replica
	_, tenants := defaultTenants(t)
	done := make(chan proxy.ExchangeDone, 16)
	addr, _ := serve(t, tenants, s, done)
	send := func(path, conv, body string) gjson.Result {
		t.Helper()
		status, b, err := post(addr, path, "sk-rt", conv, body)
		if err != nil {
			t.Fatal(err)
		}
		if status != http.StatusOK {
			t.Fatalf("%s: got %d %s", path, status, b)
		}
		return gjson.ParseBytes(b)
	}
	const chat = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`
	const resp = `{"model":"gpt-4o-mini","conversation":"rt-resp","input":"hi"}`
	var last string // the last Responses answer's id
	for _, tc := range []struct {
		name, path, conv string
		body             func() string
		want             int
	}{
		{"chat, first (a load)", "/v1/chat/completions", "rt-chat", func() string { return chat }, 2},
		// The lease the first took is kept (keep.go): claimed in memory,
		// the window the truth, the commit alone.
		{"chat", "/v1/chat/completions", "rt-chat", func() string { return chat }, 1},
		{"responses, first (a load)", "/v1/responses", "", func() string { return resp }, 2},
		{"responses", "/v1/responses", "", func() string { return resp }, 1},
		{"responses, chained", "/v1/responses", "", func() string {
			return `{"model":"gpt-4o-mini","previous_response_id":"` + last + `","input":"hi"}`
		}, 1},
	} {
		rt.take()
		r := send(tc.path, tc.conv, tc.body())
		if d := <-done; !d.Committed {
			t.Fatalf("%s: not committed: %v", tc.name, d.Err)
		}
		if id := r.Get("id").Str; strings.HasPrefix(id, "resp_") {
			last = id
		}
		got := rt.take()
		t.Logf("%s: %d round trips", tc.name, got)
		if got != tc.want {
			t.Errorf("%s: %d round trips, want %d", tc.name, got, tc.want)
		}
	}
}
