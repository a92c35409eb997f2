package pgstore_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/search"
	"github.com/recallproxy/recall/store/pgstore"
	"github.com/recallproxy/recall/wire"
)

// TestReplicasRaceOneConversation: two proxy.Servers, each on its own
// Store and window cache over one database (two replicas), take chat
// requests on one conversation at once, with no lease between them. Each
// replica's commit is checked against the version its request was planned
// from, and the loser of a race rebases: every acknowledged turn is stored
// exactly once, as a user message followed by its answer, and a request
// that was not acknowledged left nothing.
func TestReplicasRaceOneConversation(t *testing.T) {
	url := pgtest.DB(t)
	up := upstreamtest.NewTB(t)
	g := config.DefaultGlobal()
	g.Defaults.Upstream.BaseURL = up.URL()
	tenants, err := config.LoadTenants(g, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	var addrs []string
	locks := &lockReads{}
	for range 2 {
		s := open(t, url, pgstore.Options{Tracer: locks})
		srv, err := proxy.New(proxy.Config{Tenants: proxy.StaticTenants{Set: tenants}, Store: history.NewCache(s, 0, 0)})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Shutdown(context.Background()) })
		addrs = append(addrs, ln.Addr().String())
	}

	const clients, each = 6, 8 // three clients a replica
	type outcome struct {
		text   string
		status int
		body   string
	}
	results := make(chan outcome, clients*each)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				text := fmt.Sprintf("question %d from client %d", i, c)
				body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"` + text + `"}]}`
				req, _ := http.NewRequest("POST", "http://"+addrs[c%2]+"/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer sk-race")
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Conversation-ID", "race")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				results <- outcome{text, resp.StatusCode, string(b)}
			}
		}()
	}
	wg.Wait()
	close(results)

	acked := map[string]bool{}
	for r := range results {
		switch {
		case r.status == http.StatusOK:
			acked[r.text] = true
		case r.status == http.StatusInternalServerError && strings.Contains(r.body, `"history_write_failed"`):
			acked[r.text] = false // the rebases ran out: refused, nothing stored
		default:
			t.Errorf("%q: got %d %s, want 200 (or a failed commit)", r.text, r.status, r.body)
		}
	}
	n := 0
	for _, ok := range acked {
		if ok {
			n++
		}
	}
	if locks.n.Load() == 0 {
		t.Error("no commit found the head moved: the replicas never raced")
	}
	if n < clients*each/2 {
		t.Errorf("got %d of %d requests acknowledged, want most", n, clients*each)
	}

	s := open(t, url, pgstore.Options{})
	ns, err := s.Namespaces(testCtx(t), "", "", 10)
	if err != nil || len(ns) != 1 {
		t.Fatalf("got namespaces %v (%v), want one", ns, err)
	}
	var stored []history.Message
	err = s.Messages(testCtx(t), history.Key{Tenant: ns[0], Conversation: "race"}, 0, true, func(m history.Message) bool {
		stored = append(stored, m)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for i, m := range stored {
		if !m.Active() {
			t.Errorf("message %d: got flags %v, want active (nothing superseded)", m.Seq, m.Flags)
		}
		wantRole := wire.RoleUser
		if i%2 == 1 {
			wantRole = wire.RoleAssistant
		}
		if m.Role != wantRole {
			t.Fatalf("message %d: got role %s, want %s (each turn a question and its answer)", m.Seq, m.Role, wantRole)
		}
		if m.Role == wire.RoleUser {
			seen[search.Text(m.Raw)]++
		}
	}
	for text, ok := range acked {
		want := 0
		if ok {
			want = 1
		}
		if seen[text] != want {
			t.Errorf("%q (acknowledged %v): stored %d times, want %d", text, ok, seen[text], want)
		}
	}
	if len(stored) != 2*n {
		t.Errorf("got %d messages stored, want %d (two a turn acknowledged)", len(stored), 2*n)
	}
}

// lockReads counts the commits that read the metadata row FOR UPDATE:
// those whose one-statement commit found the head moved (another
// replica committed since their load).
type lockReads struct{ n atomic.Int64 }

func (l *lockReads) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}
func (l *lockReads) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (l *lockReads) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (l *lockReads) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	if strings.HasSuffix(d.SQL, "FOR UPDATE") {
		l.n.Add(1)
	}
}
func (l *lockReads) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
