package agentday

import (
	"github.com/recallproxy/recall/internal/proctest"
	"github.com/recallproxy/recall/internal/upstreamtest"

	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// TestCodexWebSocket runs Codex CLI (the version pinned in e2e/agents) on
// a provider with supports_websockets, two processes in one conversation,
// the first with a tool round: through Recall on its defaults (in front
// of the strict fake, to which Recall speaks HTTP), and directly against
// the fake's own WebSocket route, the baseline (and, for reference,
// through Recall over HTTP). Through Recall the second
// process remembers the first and runAgent's checks hold (a tool loop
// the fake accepts, nothing doubled, side calls untouched); direct, every
// turn is a response.create message the fake validated. Both ways Codex
// must have used the WebSocket: a relay in front of the base URL sees one
// upgrade per process and no POST /v1/responses (Codex falls back to
// POSTs when a socket fails). It logs each way's wall time and how long
// each process took to its first model call upstream; it asserts no
// timing.
func TestCodexWebSocket(t *testing.T) {
	if testing.Short() {
		t.Skip("-short runs no agents")
	}
	r := proctest.NewNodeRun(t, "e2e/agents", 10*time.Minute)
	ctx := r.Ctx
	binDir := filepath.Join(r.Suite, "node_modules", ".bin")
	if _, err := os.Stat(filepath.Join(binDir, "codex")); err != nil {
		r.Install(t, "install", "--no-save", "--no-audit", "--no-fund")
	}
	recall, fake := r.BuildServers(t)
	fakeAddr := proctest.StartFake(t, ctx, fake, "-control", "-keep", "100000", "-tool-calls-for-tools")
	addr, _ := proctest.ServeRecall(t, ctx, recall, "http://"+fakeAddr+"/v1", "openai")
	recallURL := "http://" + addr
	f := &fakeControl{url: "http://" + fakeAddr}

	// codex is one Codex process on its defaults but for WebSocket on
	// and nothing contacted but the base URL (codexConfig).
	codex := func(base string, websocket bool) agentRun { return codexAgent(binDir, base, websocket) }
	tool := catNotes("call_codex_ws_1")

	// Through Recall: runAgent's checks of memory, the tool loop and side
	// calls.
	viaRecall := newUpgradeCounter(t, recallURL)
	var recallRuns []codexRun
	a := agentCase{
		name: "codex-websocket-recall", recall: recallURL, route: "/v1/responses", key: "sk-codex-ws-recall",
		keyHeader: "Authorization", callID: "call_codex_ws_1", tool: tool, run: codex(viaRecall.url+"/c/%s/v1", true),
		timed: func(start time.Time, took time.Duration, reqs []upstreamtest.Recorded) {
			recallRuns = append(recallRuns, newCodexRun(start, took, reqs, viaRecall.upgradeAfter(start)))
		},
	}
	upgrades := metricSum(t, recallURL, `recall_requests_total{`, `route="responses",status="101"`)
	runAgent(t, ctx, f, a)
	if t.Failed() {
		return
	}
	if n := metricSum(t, recallURL, `recall_requests_total{`, `route="responses",status="101"`) - upgrades; n != 2 {
		t.Errorf("through Recall: Recall upgraded %v WebSockets, want one per process (2)", n)
	}
	viaRecall.check(t, "through Recall", 2)
	for i, r := range recallRuns {
		if r.ws != 0 || r.posts == 0 {
			t.Errorf("through Recall, process %d: the fake got %d messages on a WebSocket and %d POSTs, want POSTs only (Recall speaks HTTP upstream)", i+1, r.ws, r.posts)
		}
	}

	// Through Recall over HTTP, for reference: Codex's POSTs.
	var httpRuns []codexRun
	h := a
	h.name, h.key, h.run = "codex-http-recall", "sk-codex-http-recall", codex(recallURL+"/c/%s/v1", false)
	h.timed = func(start time.Time, took time.Duration, reqs []upstreamtest.Recorded) {
		httpRuns = append(httpRuns, newCodexRun(start, took, reqs, start))
	}
	runAgent(t, ctx, f, h)

	// Direct: the same two processes against the fake's WebSocket route.
	direct := newUpgradeCounter(t, f.url)
	var directRuns []codexRun
	d := agentCase{
		name: "codex-websocket-direct", recall: f.url, route: "/v1/responses", key: "sk-codex-ws-direct",
		keyHeader: "Authorization", callID: "call_codex_ws_1", tool: tool, run: codex(direct.url+"/v1", true),
		timed: func(start time.Time, took time.Duration, reqs []upstreamtest.Recorded) {
			directRuns = append(directRuns, newCodexRun(start, took, reqs, direct.upgradeAfter(start)))
		},
	}
	home := t.TempDir()
	e := agentEnv{conv: "direct", key: d.key, home: home, work: filepath.Join(home, "work")}
	writeFile(t, filepath.Join(e.work, "notes.txt"), agentNotes+"\n")
	writeFile(t, filepath.Join(home, "tmp", ".keep"), "")
	f.reply(t, tool(e))
	runProcess(t, ctx, f, d, e, agentPrompt1)
	runProcess(t, ctx, f, d, e, agentPrompt2)
	direct.check(t, "direct", 2)
	for i, r := range directRuns {
		// The first process's turns: the tool call, then the answer.
		if want := 2 - i; r.posts != 0 || r.turns != want {
			t.Errorf("direct, process %d: the fake got %d POSTs and %d model turns on a WebSocket, want 0 and %d", i+1, r.posts, r.turns, want)
		}
	}

	if len(recallRuns) == 2 && len(directRuns) == 2 {
		// Codex's own start, before it opens the socket, is most of a
		// process's time and varies with the machine's load; from the
		// socket to the exit is what the server serves.
		t.Logf("Codex over WebSocket, two processes: through Recall %v (%v from the sockets), direct %v (%v from the sockets)",
			recallRuns[0].took+recallRuns[1].took, recallRuns[0].took-recallRuns[0].socket+recallRuns[1].took-recallRuns[1].socket,
			directRuns[0].took+directRuns[1].took, directRuns[0].took-directRuns[0].socket+directRuns[1].took-directRuns[1].socket)
		if len(httpRuns) == 2 {
			t.Logf("Codex over HTTP through Recall, for reference: %v", httpRuns[0].took+httpRuns[1].took)
		}
		for i := range 2 {
			t.Logf("process %d through Recall %v", i+1, recallRuns[i])
			t.Logf("process %d direct %v", i+1, directRuns[i])
		}
	}
}

// codexRun is what one Codex process did upstream: how long it ran, how
// long it took to open its WebSocket and to its first model call (a
// response.create with generate false is a warmup, not a call), and how
// many calls the fake got as POSTs and as WebSocket messages (turns:
// those not warmups).
type codexRun struct {
	took, socket, first time.Duration
	posts, ws, turns    int
}

// newCodexRun is the codexRun of a process that started at start, ran
// for took, during which the fake received reqs, and opened its socket
// at upgraded.
func newCodexRun(start time.Time, took time.Duration, reqs []upstreamtest.Recorded, upgraded time.Time) codexRun {
	r := codexRun{took: took.Round(time.Millisecond), socket: upgraded.Sub(start).Round(time.Millisecond), first: -1}
	for _, q := range reqs {
		if q.Path != "/v1/responses" {
			continue
		}
		warmup := gjson.GetBytes(q.Body, "generate").Type == gjson.False
		switch {
		case q.WebSocket:
			r.ws++
		case q.Method == http.MethodPost:
			r.posts++
		}
		if q.WebSocket && !warmup {
			r.turns++
		}
		if !warmup && r.first < 0 {
			r.first = q.At.Sub(start).Round(time.Millisecond)
		}
	}
	return r
}

func (r codexRun) String() string {
	return fmt.Sprintf("%v: socket open after %v, first model call upstream after %v (%v after the socket), %v from the socket to the exit",
		r.took, r.socket, r.first, r.first-r.socket, r.took-r.socket)
}

// upgradeCounter is a relay in front of a base URL that counts what
// Codex sends it: WebSocket upgrades of /v1/responses and POSTs there.
type upgradeCounter struct {
	url   string
	mu    sync.Mutex
	times []time.Time // of the upgrades
	posts int
}

func newUpgradeCounter(t *testing.T, target string) *upgradeCounter {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	c := &upgradeCounter{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/v1/responses") {
			c.mu.Lock()
			switch {
			case r.Method == http.MethodGet && strings.EqualFold(r.Header.Get("Upgrade"), "websocket"):
				c.times = append(c.times, time.Now())
			case r.Method == http.MethodPost:
				c.posts++
			}
			c.mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c.url = srv.URL
	return c
}

// check wants one upgrade per process and no POST /v1/responses.
func (c *upgradeCounter) check(t *testing.T, way string, processes int) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.times) != processes || c.posts != 0 {
		t.Errorf("%s: Codex opened %d WebSockets and sent %d POST /v1/responses, want %d and none", way, len(c.times), c.posts, processes)
	}
}

// upgradeAfter is the time of the first upgrade after start (start if
// none).
func (c *upgradeCounter) upgradeAfter(start time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, at := range c.times {
		if at.After(start) {
			return at
		}
	}
	return start
}
