package pgstore_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/store/pgstore"
	"github.com/recallproxy/recall/wire"
)

// defaultTenants starts the fake upstream and loads the default tenants,
// which send to it.
func defaultTenants(t *testing.T) (*upstreamtest.Server, proxy.StaticTenants) {
	t.Helper()
	up := upstreamtest.NewTB(t)
	g := config.DefaultGlobal()
	g.Defaults.Upstream.BaseURL = up.URL()
	tenants, err := config.LoadTenants(g, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	return up, proxy.StaticTenants{Set: tenants}
}

// serve serves a proxy.Server for tenants on s, through the window cache
// as cmd/recall does, on loopback; done, when set, hears the end of
// every exchange. It returns the address and a stop that shuts the
// server down (once; the test's end stops it too).
func serve(t *testing.T, tenants proxy.StaticTenants, s *pgstore.Store, done chan<- proxy.ExchangeDone) (string, func()) {
	t.Helper()
	cfg := proxy.Config{Tenants: tenants, Store: history.NewCache(s, 0, 0)}
	if done != nil {
		cfg.OnExchangeDone = func(d proxy.ExchangeDone) { done <- d }
	}
	srv, err := proxy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	var once sync.Once
	stop := func() { once.Do(func() { srv.Shutdown(context.Background()) }) }
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

// serveReplicas serves two replicas over the database at url, each a
// proxy on its own Store (replica i's opened with options(i)), and
// returns their addresses.
func serveReplicas(t *testing.T, url string, tenants proxy.StaticTenants, options func(i int) pgstore.Options) []string {
	t.Helper()
	var addrs []string
	for i := range 2 {
		addr, _ := serve(t, tenants, open(t, url, options(i)), nil)
		addrs = append(addrs, addr)
	}
	return addrs
}

// sameOptions is an options for serveReplicas: the defaults for both.
func sameOptions(int) pgstore.Options { return pgstore.Options{} }

// post sends a JSON body to path at addr with the API key key and, when
// conv is set, conv as the conversation's id; it returns the answer's
// status and body.
func post(addr, path, key, conv, body string) (int, []byte, error) {
	req, err := http.NewRequest("POST", "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	if conv != "" {
		req.Header.Set("X-Conversation-ID", conv)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// askedOnce has clients send each requests at once, client c to
// addrs[c%len(addrs)], each its next once its last was answered; body
// gives the request of question text. It fails the test unless every
// question was answered 200, and returns the questions asked.
func askedOnce(t *testing.T, addrs []string, path, key string, clients, each int, question func(c, i int) string, body func(text string) string) map[string]bool {
	t.Helper()
	type outcome struct {
		text   string
		status int
		body   []byte
	}
	results := make(chan outcome, clients*each)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				text := question(c, i)
				status, b, err := post(addrs[c%len(addrs)], path, key, "race", body(text))
				if err != nil {
					t.Error(err)
					return
				}
				results <- outcome{text, status, b}
			}
		}()
	}
	wg.Wait()
	close(results)
	asked := map[string]bool{}
	for r := range results {
		asked[r.text] = true
		if r.status != http.StatusOK {
			t.Errorf("%q: got %d %s, want 200", r.text, r.status, r.body)
		}
	}
	if len(asked) != clients*each {
		t.Fatalf("got %d answers, want %d", len(asked), clients*each)
	}
	return asked
}

// storedOnce reads conversation "race" of the one tenant stored at url
// and fails the test unless it holds every question asked exactly once,
// each followed by its answer, nothing superseded. It returns the
// questions in their stored order.
func storedOnce(t *testing.T, url string, asked map[string]bool) []string {
	t.Helper()
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
	var order []string
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
			order = append(order, string(m.Text()))
		}
	}
	seen := map[string]int{}
	for _, q := range order {
		seen[q]++
	}
	for text := range asked {
		if seen[text] != 1 {
			t.Errorf("%q: stored %d times, want 1", text, seen[text])
		}
	}
	if len(stored) != 2*len(asked) {
		t.Errorf("got %d messages stored, want %d (two a turn)", len(stored), 2*len(asked))
	}
	return order
}
