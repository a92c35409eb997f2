package proxy_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/recallproxy/recall/api"
	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/app"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/store/badgerstore"
	"github.com/recallproxy/recall/summary"
	"github.com/recallproxy/recall/tokens"
)

// harness is a real Recall server on a loopback port, in front of the fake
// upstream, over a real Badger store in a temporary directory.
type harness struct {
	t     *testing.T
	up    *upstreamtest.Server
	srv   *proxy.Server
	store *badgerstore.Store
	set   *config.Set
	hist  history.Store        // the store the server uses: the cache over store
	sum   *summary.Manager     // nil unless harnessOptions.summary is set
	jobs  chan summary.JobDone // every summary job attempt, in order
	url   string               // http://127.0.0.1:port
	logs  *syncBuffer
	done  chan proxy.ExchangeDone // every finished exchange, in order
}

// harnessOptions change a harness from its defaults: pass-through mode
// with a 16,000-token budget.
type harnessOptions struct {
	tenants map[string]string // file name -> tenant YAML ("{{UPSTREAM}}" is replaced)
	global  func(*config.Global)
	proxy   func(*proxy.Config)
	// summary, if set, runs a summary.Manager (configured by it) that the
	// server triggers.
	summary func(*summary.Config)
	// api, if set, adjusts the conversation API's configuration.
	api func(*api.Config)
}

type configGlobal = config.Global

func newHarness(t *testing.T, o harnessOptions) *harness {
	t.Helper()
	h := &harness{t: t, up: upstreamtest.NewTB(t), logs: &syncBuffer{}, done: make(chan proxy.ExchangeDone, 4096)}
	g := config.DefaultGlobal()
	g.Defaults.Upstream.BaseURL = h.up.URL()
	if len(o.tenants) > 0 {
		dir := t.TempDir()
		for name, body := range o.tenants {
			body = strings.ReplaceAll(body, "{{UPSTREAM}}", h.up.URL())
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		g.TenantsDir = dir
	}
	if o.global != nil {
		o.global(&g)
	}
	set, err := config.LoadTenants(g, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("load tenants: %v", err)
	}
	h.set = set
	h.store, err = badgerstore.Open(t.TempDir(), badgerstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	h.hist = history.NewCache(h.store, 0, 0)
	client := proxy.DefaultClient()
	// Idle upstream connections, and fasthttp's goroutines that watch
	// them, go within a second of the harness's end (leak checks).
	client.MaxIdleConnDuration = time.Second
	cfg := proxy.Config{
		Client:  client,
		Tenants: proxy.StaticTenants{Set: set},
		Store:   h.hist, // the cache over Badger, as cmd/recall serves
		Logger:  slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		OnExchangeDone: func(d proxy.ExchangeDone) {
			select {
			case h.done <- d:
			default:
				t.Errorf("exchange-done buffer full: a test forgot to drain it")
			}
		},
	}
	ac := app.Config{API: o.api}
	if o.summary != nil {
		h.jobs = make(chan summary.JobDone, 1024)
		sc := summary.Config{
			Store:   cfg.Store,
			Tenants: cfg.Tenants,
			Logger:  cfg.Logger,
			OnJobDone: func(d summary.JobDone) {
				select {
				case h.jobs <- d:
				default:
					t.Errorf("summary job buffer full")
				}
			},
		}
		o.summary(&sc)
		ac.Summary = &sc
	}
	if o.proxy != nil {
		o.proxy(&cfg)
	}
	ac.Proxy = cfg
	a, err := app.New(ac)
	if err != nil {
		t.Fatal(err)
	}
	h.srv, h.sum = a.Server, a.Summaries
	if h.sum != nil {
		if err := h.sum.Start(context.Background()); err != nil {
			t.Logf("summary start: %v (the store cannot list yet)", err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.url = "http://" + ln.Addr().String()
	go h.srv.Serve(ln)
	t.Cleanup(func() {
		// Closing the client's idle connections first lets the server's
		// shutdown finish at once instead of waiting out keep-alives.
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.srv.Shutdown(ctx); err != nil {
			buf := make([]byte, 1<<20)
			t.Errorf("shutdown: %v; goroutines:\n%s", err, buf[:runtime.Stack(buf, true)])
		}
		if h.sum != nil {
			h.sum.Close()
		}
		h.store.Close()
	})
	return h
}

// waitDone waits for the next finished exchange on conv (a stream's
// commit happens after the client saw its last event), skipping others.
func (h *harness) waitDone(conv string) proxy.ExchangeDone {
	h.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case d := <-h.done:
			if d.Conversation == conv {
				return d
			}
		case <-timeout:
			h.t.Fatalf("no exchange on %s finished within 10s", conv)
		}
	}
}

// client returns an official OpenAI SDK client pointed at Recall, naming
// conversation conv by header (none if conv is "").
func (h *harness) client(key, conv string, opts ...option.RequestOption) openai.Client {
	base := []option.RequestOption{
		option.WithBaseURL(h.url + "/v1"),
		option.WithAPIKey(key),
		option.WithMaxRetries(0),
	}
	if conv != "" {
		base = append(base, option.WithHeader("X-Conversation-ID", conv))
	}
	return openai.NewClient(append(base, opts...)...)
}

// stored returns a conversation's messages as stored, inactive ones too.
func (h *harness) stored(tenant, conv string) []history.Message {
	h.t.Helper()
	var out []history.Message
	err := h.store.Messages(context.Background(), history.Key{Tenant: tenant, Conversation: conv}, 0, true,
		func(m history.Message) bool { out = append(out, m); return true })
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

// active returns the roles and contents of a conversation's active messages.
func active(msgs []history.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Active() {
			out = append(out, render(m.Raw))
		}
	}
	return out
}

// render renders a message as "role:content" or "role:calls=[ids]" or
// "tool(id):content" for compact comparisons.
func render(raw []byte) string {
	var m struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID string `json:"id"`
		} `json:"tool_calls"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return "invalid:" + string(raw)
	}
	var text string
	if err := json.Unmarshal(m.Content, &text); err != nil {
		text = string(m.Content)
	}
	s := m.Role
	if m.ToolCallID != "" {
		s += "(" + m.ToolCallID + ")"
	}
	s += ":" + text
	if len(m.ToolCalls) > 0 {
		ids := make([]string, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			ids[i] = c.ID
		}
		s += " calls=" + strings.Join(ids, ",")
	}
	return s
}

func renderAll(msgs []json.RawMessage) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = render(m)
	}
	return out
}

// passNamespace is the history namespace of a pass-through credential.
func (h *harness) passNamespace(key string) string {
	return auth.Namespace("default", key)
}

type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // closed and replaced on every write
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written != nil {
		close(s.written)
		s.written = nil
	}
	return s.b.Write(p)
}

// waitFor waits until the buffer holds sub, or reports false after 10s.
func (s *syncBuffer) waitFor(sub string) bool {
	deadline := time.After(10 * time.Second)
	for {
		s.mu.Lock()
		if strings.Contains(s.b.String(), sub) {
			s.mu.Unlock()
			return true
		}
		if s.written == nil {
			s.written = make(chan struct{})
		}
		written := s.written
		s.mu.Unlock()
		select {
		case <-written:
		case <-deadline:
			return false
		}
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func equalStrings(a, b []string) bool { return slices.Equal(a, b) }

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// waitJob waits for the next summary job attempt on conv whose outcome is
// not Nothing (jobs that found nothing to do are skipped).
func (h *harness) waitJob(conv string) summary.JobDone {
	h.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case d := <-h.jobs:
			if d.Key.Conversation == conv && d.Outcome != summary.Nothing {
				return d
			}
		case <-timeout:
			h.t.Fatalf("no summary job on %s finished within 10s", conv)
		}
	}
}

// storeUsed returns the store the server reads and writes through.
func (h *harness) storeUsed() history.Store { return h.hist }

// meta returns a conversation's metadata as the server sees it.
func (h *harness) meta(tenant, conv string) history.Meta {
	h.t.Helper()
	snap, err := h.hist.Load(context.Background(), history.Key{Tenant: tenant, Conversation: conv}, history.Query{After: ^uint64(0)})
	if err != nil {
		h.t.Fatal(err)
	}
	return snap.Meta
}

// srvCount counts a message's tokens as Recall does for gpt-4o.
func (h *harness) srvCount(raw []byte) int {
	return counter.Message(tokens.O200k, raw)
}

var counter = &tokens.Counter{}
