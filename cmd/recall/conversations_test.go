package main

import (
	"bytes"
	"context"
	"flag"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/app"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/store/badgerstore"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata")

// steppingClock advances a minute at every reading, from a fixed time, so
// that stored times and listing order are the same on every run.
type steppingClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *steppingClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Minute)
	return c.t
}

// cliServer starts a real Recall (pass-through tenant, Badger in a
// temporary directory) on a loopback port and returns its address.
func cliServer(t *testing.T) (string, *badgerstore.Store) {
	t.Helper()
	set, err := config.LoadTenants(config.DefaultGlobal(), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	store, err := badgerstore.Open(t.TempDir(), badgerstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	clock := &steppingClock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	a, err := app.New(app.Config{Proxy: proxy.Config{Tenants: proxy.StaticTenants{Set: set}, Store: history.Store(store), Now: clock.now}})
	if err != nil {
		t.Fatal(err)
	}
	srv := a.Server
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		store.Close()
	})
	return "http://" + ln.Addr().String(), store
}

// TestConversationsCLI runs the verbs in order against one server, each
// output compared with its golden file (go test -run TestConversationsCLI
// -update rewrites them).
func TestConversationsCLI(t *testing.T) {
	for _, k := range cliEnv {
		t.Setenv(k, "")
	}
	addr, store := cliServer(t)
	dir := t.TempDir()
	exported := filepath.Join(dir, "trip.jsonl")
	seed := func(conv, body string) {
		t.Helper()
		c := &apiClient{addr: addr, key: "sk-cli", http: httpClient()}
		if _, err := c.do("POST", convPath(conv, "messages"), strings.NewReader(body), "application/json"); err != nil {
			t.Fatalf("seed %s: %v", conv, err)
		}
	}
	conn := []string{"--addr", addr, "--key", "sk-cli"}
	steps := []struct {
		name string
		args []string
		do   func() // before the command
	}{
		{name: "usage", args: []string{"conversations"}},
		{name: "help", args: []string{"conversations", "--help"}},
		{name: "unknown-verb", args: []string{"conversations", "lsit"}},
		{name: "show-no-id", args: append([]string{"conversations", "show"}, conn...)},
		{name: "no-key", args: []string{"conversations", "list", "--addr", addr}},
		{name: "list-empty", args: append([]string{"conversations", "list"}, conn...)},
		{name: "list", args: append([]string{"conversations", "list"}, conn...), do: func() {
			seed("trip", `{"messages":[{"role":"user","content":"Plan a trip to Lisbon, I love kiwi juice"},`+
				`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Lisbon\"}"}}]},`+
				`{"role":"tool","tool_call_id":"call_1","content":"22C and sunny"},`+
				`{"role":"assistant","content":"Lisbon is sunny: pack light."}]}`)
			seed("notes", `{"messages":[{"role":"user","content":"Remember: my kiwi allergy is mild."},{"role":"assistant","content":"Noted."}]}`)
		}},
		{name: "list-json", args: append([]string{"conversations", "list", "--limit", "1", "--json"}, conn...)},
		{name: "show", args: append([]string{"conversations", "show", "trip"}, conn...)},
		{name: "messages", args: append([]string{"conversations", "messages", "trip"}, conn...)},
		{name: "messages-desc", args: append([]string{"conversations", "messages", "trip", "--order", "desc", "--limit", "2"}, conn...)},
		{name: "search", args: append([]string{"conversations", "search", "kiwi"}, conn...)},
		{name: "search-conversation", args: append([]string{"conversations", "search", "--conversation", "trip", "sunny", "Lisbon"}, conn...)},
		{name: "forget", args: append([]string{"conversations", "forget", "trip", "position:3"}, conn...)},
		{name: "messages-forgotten", args: append([]string{"conversations", "messages", "trip", "--include", "forgotten"}, conn...)},
		{name: "forget-bad", args: append([]string{"conversations", "forget", "trip", "newest"}, conn...)},
		{name: "export", args: append([]string{"conversations", "export", "trip"}, conn...)},
		{name: "export-file", args: append([]string{"conversations", "export", "trip", "--output", exported}, conn...)},
		{name: "exchanges", args: append([]string{"conversations", "exchanges", "notes"}, conn...), do: func() {
			// Two records as the proxy would write them (the server here
			// has no upstream to call).
			k := history.Key{Tenant: auth.Namespace("default", "sk-cli"), Conversation: "notes"}
			recs := []history.ExchangeRecord{
				{ID: history.NewExchangeID(1), CreatedAt: 1772355600, Kind: "chat", Ingress: "chat.completions", Upstream: "chat.completions",
					Model: "gpt-4o", Status: "answered", HTTPStatus: 200, Budget: 16000, NewMessages: 1,
					LatencyMS: history.ExchangeLatency{FirstByte: 120, Upstream: 300, Total: 305, Recall: 5},
					Tokens:    history.ExchangeTokens{Instructions: 12, New: 20, Output: 8, EstimatedInput: 35, ReportedInput: 37},
					Included:  []history.Span{}, Dropped: []history.Dropped{}, Cut: []history.CutResult{}, Committed: []history.Span{{From: 1, To: 2}}},
				{ID: history.NewExchangeID(2), CreatedAt: 1772355660, Kind: "chat", Ingress: "responses", Upstream: "chat.completions",
					Model: "gpt-4o", Stream: true, Status: "upstream_error", HTTPStatus: 502, Error: "upstream_unavailable", Budget: 16000, NewMessages: 1,
					Tokens:   history.ExchangeTokens{Instructions: 12, Tools: 100, History: 9, New: 14, EstimatedInput: 138},
					Included: []history.Span{{From: 2, To: 2}}, Dropped: []history.Dropped{{From: 1, To: 1, Reason: "forgotten"}},
					Cut: []history.CutResult{{Seq: 2, CharsBefore: 500, CharsAfter: 100}}, Committed: []history.Span{}},
			}
			if err := store.AppendExchanges(context.Background(), k, recs); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "exchanges-one", args: append([]string{"conversations", "exchanges", "notes", history.NewExchangeID(2)}, conn...)},
		{name: "exchanges-other", args: append([]string{"conversations", "exchanges", "notes", history.NewExchangeID(3)}, conn...)},
		{name: "threads-none", args: append([]string{"conversations", "threads", "trip"}, conn...)},
		{name: "threads", args: append([]string{"conversations", "threads", "notes"}, conn...), do: func() {
			// A subagent's thread and another named by X-Recall-Thread,
			// and a side call, with records as the proxy writes them.
			seed("notes~a1b2", `{"messages":[{"role":"user","content":"Subagent: list the files"},{"role":"assistant","content":"a.go, b.go"}]}`)
			seed("notes~helper", `{"messages":[{"role":"user","content":"Helper: check the spelling"},{"role":"assistant","content":"All fine."}]}`)
			rec := func(n uint64, kind, thread, reason string) history.ExchangeRecord {
				return history.ExchangeRecord{ID: history.NewExchangeID(n), CreatedAt: 1772355720, Kind: kind, Thread: thread, ThreadReason: reason,
					Ingress: "messages", Upstream: "messages", Model: "claude-haiku-4-5", Status: "answered", HTTPStatus: 200, Budget: 16000,
					Included: []history.Span{}, Dropped: []history.Dropped{}, Cut: []history.CutResult{}, Committed: []history.Span{}}
			}
			ns := auth.Namespace("default", "sk-cli")
			for conv, recs := range map[string][]history.ExchangeRecord{
				"notes":      {rec(10, "side", "side", "marker")},
				"notes~a1b2": {rec(11, "chat", "a1b2", "agent_id"), rec(12, "side", "side", "no_tools")},
			} {
				if err := store.AppendExchanges(context.Background(), history.Key{Tenant: ns, Conversation: conv}, recs); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{name: "threads-json", args: append([]string{"conversations", "threads", "notes", "--json"}, conn...)},
		{name: "messages-thread", args: append([]string{"conversations", "messages", "notes", "--thread", "a1b2"}, conn...)},
		{name: "messages-thread-main", args: append([]string{"conversations", "messages", "notes", "--thread", "main"}, conn...)},
		{name: "messages-thread-side", args: append([]string{"conversations", "messages", "notes", "--thread", "side"}, conn...)},
		{name: "messages-thread-bad", args: append([]string{"conversations", "messages", "notes", "--thread", "a/b"}, conn...)},
		{name: "exchanges-thread", args: append([]string{"conversations", "exchanges", "notes", "--thread", "a1b2"}, conn...)},
		{name: "exchanges-thread-one", args: append([]string{"conversations", "exchanges", "notes", history.NewExchangeID(11), "--thread", "a1b2"}, conn...)},
		{name: "delete", args: append([]string{"conversations", "delete", "trip"}, conn...)},
		{name: "show-deleted", args: append([]string{"conversations", "show", "trip"}, conn...)},
		{name: "import", args: append([]string{"conversations", "import", "trip", exported}, conn...)},
		{name: "import-again", args: append([]string{"conversations", "import", "trip", exported}, conn...)},
		{name: "messages-imported", args: append([]string{"conversations", "messages", "trip", "--include", "forgotten"}, conn...)},
		{name: "context", args: append([]string{"conversations", "context", "trip"}, conn...)},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.do != nil {
				st.do()
			}
			var stdout, stderr bytes.Buffer
			code := run(st.args, &stdout, &stderr)
			got := "exit " + strconv.Itoa(code) + "\n--- stdout\n" + stdout.String() + "--- stderr\n" + stderr.String()
			got = strings.ReplaceAll(got, addr, "http://ADDR")
			golden(t, filepath.Join("testdata", "conversations", st.name+".golden"), got)
		})
	}
	// The exported file is the export's stdout.
	b, err := os.ReadFile(exported)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join("testdata", "conversations", "export.golden"))
	if !bytes.Contains(want, b) {
		t.Errorf("--output wrote %s, not the export", b)
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("got:\n%s\nwant (%s):\n%s", got, path, want)
	}
}
