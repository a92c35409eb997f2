package proxy_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/proxy"
)

// wsKinds are tenants whose upstream speaks each protocol, keyed by
// their client key, for the WebSocket tests: every turn runs through the
// same handler whatever the upstream.
func wsKinds() e2etest.Options {
	tenant := func(id, protocol string) string {
		return "id: " + id + "\napi_keys: [\"rk-" + id + "\"]\nupstream:\n  base_url: \"{{UPSTREAM}}\"\n  api_key: \"sk-up-" + id + "\"\n  protocol: " + protocol + "\n"
	}
	return e2etest.Options{Tenants: map[string]string{
		"oa.yaml": tenant("oa", "openai"),
		"ch.yaml": tenant("ch", "chat"),
		"an.yaml": tenant("an", "anthropic"),
	}}
}

// wsUpstream is an upstream kind a socket's turns go to: its tenant's
// name and key.
type wsUpstream struct{ name, key, tenant string }

var wsUpstreams = []wsUpstream{
	{"openai", "rk-oa", "oa"},
	{"chat", "rk-ch", "ch"},
	{"anthropic", "rk-an", "an"},
}

// onEachWSUpstream runs f once for each of wsUpstreams, in a subtest of
// its name, on a socket of its own to the conversation prefix+name.
func onEachWSUpstream(t *testing.T, h *harness, prefix string, f func(t *testing.T, u wsUpstream, conv string, c *websocket.Conn)) {
	for _, u := range wsUpstreams {
		t.Run(u.name, func(t *testing.T) {
			conv := prefix + u.name
			f(t, u, conv, dialWS(t, h, "/c/"+conv+"/v1/responses", u.key))
		})
	}
}

// dialWS opens a Responses WebSocket on path with key (and extra
// headers), failing the test if the upgrade is refused.
func dialWS(t *testing.T, h *harness, path, key string, extra ...string) *websocket.Conn {
	t.Helper()
	c, resp, err := dialWSResp(h, path, key, extra...)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial %s: %v (status %d)", path, err, status)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func dialWSResp(h *harness, path, key string, extra ...string) (*websocket.Conn, *http.Response, error) {
	hdr := http.Header{}
	if key != "" {
		hdr.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		hdr.Set(extra[i], extra[i+1])
	}
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	return d.Dial("ws"+strings.TrimPrefix(h.URL, "http")+path, hdr)
}

// wsTurn is what a socket answered one response.create with.
type wsTurn struct {
	events []gjson.Result
	last   gjson.Result // the terminal event
}

func (w wsTurn) types() []string {
	var out []string
	for _, e := range w.events {
		out = append(out, e.Get("type").Str)
	}
	return out
}

// response is the terminal event's Response (none for an error event).
func (w wsTurn) response() gjson.Result { return w.last.Get("response") }

// sendWS sends one response.create (fields merged into it) and reads the
// turn's messages up to its terminal event.
func sendWS(t *testing.T, c *websocket.Conn, fields map[string]any) wsTurn {
	t.Helper()
	ev := map[string]any{"type": "response.create", "model": "gpt-4.1"}
	for k, v := range fields {
		ev[k] = v
	}
	b, _ := json.Marshal(ev)
	if err := c.WriteMessage(websocket.TextMessage, b); err != nil {
		t.Fatalf("send: %v", err)
	}
	return readTurn(t, c)
}

// readTurn reads messages up to a terminal one: response.completed,
// .incomplete, .failed, or an error event.
func readTurn(t *testing.T, c *websocket.Conn) wsTurn {
	t.Helper()
	var w wsTurn
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		typ, msg, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("read after %q: %v", w.types(), err)
		}
		if typ != websocket.TextMessage {
			t.Fatalf("got a message of type %d, want text", typ)
		}
		if !gjson.ValidBytes(msg) {
			t.Fatalf("message is not JSON: %s", msg)
		}
		ev := gjson.ParseBytes(msg)
		w.events = append(w.events, ev)
		switch ev.Get("type").Str {
		case "response.completed", "response.incomplete", "response.failed", "error":
			w.last = ev
			return w
		}
	}
}

// Sequential turns on one socket, over every upstream kind: each turn is
// the event sequence a streamed POST gives (numbered from 0, created
// first, completed last, the Response carrying the answer), and the
// conversation named by the path prefix remembers the first turn when the
// second is sent; both turns are stored.
func TestWebSocketTurnsHaveMemory(t *testing.T) {
	h := newHarness(t, wsKinds())
	onEachWSUpstream(t, h, "ws-memory-", func(t *testing.T, u wsUpstream, conv string, c *websocket.Conn) {
		one := sendWS(t, c, map[string]any{"input": "one"})
		checkTurn(t, one, "echo: one")
		if d := h.WaitDone(conv); !d.Committed {
			t.Fatalf("turn one not committed: %+v", d)
		}
		two := sendWS(t, c, map[string]any{"input": "two"})
		checkTurn(t, two, "echo: two")
		if d := h.WaitDone(conv); !d.Committed {
			t.Fatalf("turn two not committed: %+v", d)
		}
		got := strings.Join(upstreamTexts(h.Up.Last()), "|")
		for _, want := range []string{"one", "echo: one", "two"} {
			if !strings.Contains(got, want) {
				t.Errorf("turn two's upstream request: got %q, want it to hold %q", got, want)
			}
		}
		if n := len(e2etest.Active(h.Stored(u.tenant, conv))); n != 4 {
			t.Errorf("stored: got %d messages, want 4 (two turns)", n)
		}
	})
}

// checkTurn checks a turn's events: numbered 0, 1, ... in order,
// response.created first, response.completed last with the answer.
func checkTurn(t *testing.T, w wsTurn, answer string) {
	t.Helper()
	types := w.types()
	if len(types) < 3 || types[0] != "response.created" || types[len(types)-1] != "response.completed" {
		t.Fatalf("events: got %q, want response.created ... response.completed", types)
	}
	for i, e := range w.events {
		if n := e.Get("sequence_number"); n.Type != gjson.Number || int(n.Int()) != i {
			t.Fatalf("event %d (%s): sequence_number %s, want %d", i, types[i], n.Raw, i)
		}
	}
	r := w.response()
	if r.Get("status").Str != "completed" || !strings.HasPrefix(r.Get("id").Str, "resp_") {
		t.Errorf("response: got %s", r.Raw)
	}
	if got := r.Get(`output.#(type=="message").content.0.text`).Str; got != answer {
		t.Errorf("answer: got %q, want %q", got, answer)
	}
}

// upstreamTexts is each message the upstream got, as its text, whatever
// the protocol.
func upstreamTexts(r upstreamtest.Received) []string {
	var out []string
	for _, raw := range r.Messages {
		m := gjson.ParseBytes(raw)
		if c := m.Get("content"); c.Type == gjson.String {
			out = append(out, c.Str)
		}
		m.Get("content").ForEach(func(_, p gjson.Result) bool {
			if s := p.Get("text"); s.Exists() {
				out = append(out, s.Str)
			}
			return true
		})
	}
	return out
}

// previous_response_id on a socket: a store:false response (stored
// nowhere) is continued from the socket's memory, the upstream then
// getting the first turn with the second; on another socket the same id
// is previous_response_not_found, an error event in OpenAI's WebSocket
// shape, after which that socket still serves a fresh turn. A stored
// response (store defaults to true) continues on any socket, from the
// store.
func TestWebSocketPreviousResponse(t *testing.T) {
	h := newHarness(t, wsKinds())
	for _, u := range wsUpstreams {
		t.Run(u.name, func(t *testing.T) {
			c := dialWS(t, h, "/v1/responses", u.key)
			first := sendWS(t, c, map[string]any{"store": false, "input": "remember cobalt"})
			checkTurn(t, first, "echo: remember cobalt")
			id := first.response().Get("id").Str
			if first.response().Get("store").Bool() {
				t.Errorf("a store:false response says it is stored: %s", first.response().Raw)
			}
			second := sendWS(t, c, map[string]any{"store": false, "previous_response_id": id, "input": "which word"})
			checkTurn(t, second, "echo: which word")
			got := strings.Join(upstreamTexts(h.Up.Last()), "|")
			if want := "remember cobalt|echo: remember cobalt|which word"; got != want {
				t.Errorf("continuation's upstream messages: got %q, want %q", got, want)
			}

			other := dialWS(t, h, "/v1/responses", u.key)
			n := h.Up.Count()
			miss := sendWS(t, other, map[string]any{"store": false, "previous_response_id": id, "input": "again"})
			checkWSError(t, miss, 400, "previous_response_not_found")
			if h.Up.Count() != n {
				t.Errorf("the refused turn reached the upstream")
			}
			checkTurn(t, sendWS(t, other, map[string]any{"store": false, "input": "recovered"}), "echo: recovered")
			checkWSError(t, sendWS(t, other, map[string]any{"store": false, "previous_response_id": "resp_openresponses_missing_1", "input": "x"}),
				400, "previous_response_not_found")

			stored := sendWS(t, c, map[string]any{"input": "kept"})
			checkTurn(t, stored, "echo: kept")
			h.WaitDone(stored.response().Get("conversation.id").Str)
			next := sendWS(t, other, map[string]any{"previous_response_id": stored.response().Get("id").Str, "input": "more"})
			checkTurn(t, next, "echo: more")
			h.WaitDone(stored.response().Get("conversation.id").Str)
			if got := strings.Join(upstreamTexts(h.Up.Last()), "|"); got != "kept|echo: kept|more" {
				t.Errorf("stored continuation's upstream messages: got %q", got)
			}
		})
	}
}

// checkWSError checks that a turn ended in the WebSocket error event,
// {"type":"error","status","error":{"type","code","message","param"}}.
func checkWSError(t *testing.T, w wsTurn, status int, code string) {
	t.Helper()
	e := w.last
	if len(w.events) != 1 || e.Get("type").Str != "error" || int(e.Get("status").Int()) != status ||
		e.Get("error.code").Str != code || e.Get("error.message").Str == "" || !e.Get("error.type").Exists() {
		t.Fatalf("got %q ending in %s, want one error event with status %d and code %s", w.types(), e.Raw, status, code)
	}
}

// In a named conversation a store:false turn is remembered, but its
// response is not stored: its chain goes on on its socket only, and a
// new socket naming it gets previous_response_not_found (Open Responses'
// websocket-reconnect-store-false-recovery), on every upstream.
func TestWebSocketStoreFalseNamedConversation(t *testing.T) {
	h := newHarness(t, wsKinds())
	for _, u := range wsUpstreams {
		t.Run(u.name, func(t *testing.T) {
			path := "/c/ws-sf-" + u.name + "/v1/responses"
			c := dialWS(t, h, path, u.key)
			first := sendWS(t, c, map[string]any{"store": false, "input": "remember copper"})
			checkTurn(t, first, "echo: remember copper")
			id := first.response().Get("id").Str
			if first.response().Get("store").Bool() {
				t.Errorf("a store:false response says it is stored: %s", first.response().Raw)
			}
			checkTurn(t, sendWS(t, c, map[string]any{"store": false, "previous_response_id": id, "input": "which word"}), "echo: which word")
			if got := strings.Join(upstreamTexts(h.Up.Last()), "|"); got != "remember copper|echo: remember copper|which word" {
				t.Errorf("continuation's upstream messages: got %q", got)
			}
			h.WaitDone("ws-sf-" + u.name)
			if n := len(h.Stored(u.tenant, "ws-sf-"+u.name)); n != 4 {
				t.Errorf("stored %d messages, want the two turns' 4", n)
			}

			other := dialWS(t, h, path, u.key)
			n := h.Up.Count()
			checkWSError(t, sendWS(t, other, map[string]any{"store": false, "previous_response_id": id, "input": "again"}),
				400, "previous_response_not_found")
			if h.Up.Count() != n {
				t.Errorf("the refused turn reached the upstream")
			}
		})
	}
}

// A continuation that fails forgets the response it continued: the next
// turn naming it is previous_response_not_found (Open Responses'
// websocket-failed-continuation-evicts-cache).
func TestWebSocketFailedContinuationForgetsTheResponse(t *testing.T) {
	h := newHarness(t, wsKinds())
	c := dialWS(t, h, "/v1/responses", "rk-oa")
	first := sendWS(t, c, map[string]any{"store": false, "input": "remember ember"})
	checkTurn(t, first, "echo: remember ember")
	id := first.response().Get("id").Str
	failed := sendWS(t, c, map[string]any{"store": false, "previous_response_id": id,
		"input": []any{map[string]any{"type": "function_call_output", "call_id": "call_missing", "output": "x"}}})
	if failed.last.Get("type").Str != "error" && failed.last.Get("type").Str != "response.failed" {
		t.Fatalf("a continuation with an orphan tool output: got %q, want it to fail", failed.types())
	}
	checkWSError(t, sendWS(t, c, map[string]any{"store": false, "previous_response_id": id, "input": "stale"}),
		400, "previous_response_not_found")
}

// A bad message is answered with an error event and changes nothing: the
// socket stays open and serves the next turn. A binary message, a message
// that is not JSON, and an event of another type each get theirs.
func TestWebSocketBadMessage(t *testing.T) {
	h := newHarness(t, wsKinds())
	c := dialWS(t, h, "/c/ws-bad/v1/responses", "rk-oa")
	for _, tc := range []struct {
		name string
		typ  int
		msg  string
		code string
	}{
		{"binary", websocket.BinaryMessage, `{"type":"response.create","input":"x"}`, "invalid_event"},
		{"not JSON", websocket.TextMessage, `{"type":"response.create",`, "invalid_json"},
		{"another type", websocket.TextMessage, `{"type":"response.cancel"}`, "invalid_event"},
		{"no type", websocket.TextMessage, `{"model":"gpt-4.1","input":"x"}`, "invalid_event"},
		{"bad body", websocket.TextMessage, `{"type":"response.create","model":"gpt-4.1"}`, "missing_required_parameter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := c.WriteMessage(tc.typ, []byte(tc.msg)); err != nil {
				t.Fatal(err)
			}
			w := readTurn(t, c)
			if w.last.Get("error.code").Str != tc.code {
				t.Fatalf("got %s, want an error event with code %s", w.last.Raw, tc.code)
			}
			checkWSError(t, w, 400, tc.code)
		})
	}
	if n := h.Up.Count(); n != 0 {
		t.Errorf("the upstream got %d requests, want none", n)
	}
	if n := len(h.Stored("oa", "ws-bad")); n != 0 {
		t.Errorf("stored %d messages, want none", n)
	}
	checkTurn(t, sendWS(t, c, map[string]any{"input": "fine"}), "echo: fine")
}

// A client that closes its socket while a turn streams commits nothing:
// it never saw the response complete, and would send the turn again.
func TestWebSocketClientLeavingMidStreamCommitsNothing(t *testing.T) {
	for _, u := range wsUpstreams {
		t.Run(u.name, func(t *testing.T) {
			h := newHarness(t, wsKinds())
			conv := "ws-left-" + u.name
			c := dialWS(t, h, "/c/"+conv+"/v1/responses", u.key)
			stallTurns(t, h, c, "half an answer", "hello")
			c.Close()
			h.Up.Release()
			d := h.WaitDone(conv)
			if d.Committed || d.Status != 499 {
				t.Errorf("got %+v, want status 499, not committed", d)
			}
			if n := len(h.Stored(u.tenant, conv)); n != 0 {
				t.Errorf("stored %d messages, want none", n)
			}
		})
	}
}

// Only GET /v1/responses (under a conversation prefix or not) is served
// as a WebSocket: another path, or another method, is refused with 426
// as before, and an upgrade without a valid key is a 401, before any
// socket opens.
func TestWebSocketUpgradeRefusals(t *testing.T) {
	h := newHarness(t, wsKinds())
	for _, tc := range []struct {
		name, path, key string
		want            int
	}{
		{"chat completions", "/v1/chat/completions", "rk-oa", 426},
		{"messages", "/c/x/v1/messages", "rk-oa", 426},
		{"a stored response", "/v1/responses/resp_1", "rk-oa", 426},
		{"no key", "/v1/responses", "", 401},
		{"a wrong key", "/v1/responses", "rk-nobody", 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, resp, err := dialWSResp(h, tc.path, tc.key)
			if err == nil {
				t.Fatalf("upgrade of %s succeeded, want %d", tc.path, tc.want)
			}
			if resp == nil || resp.StatusCode != tc.want {
				t.Fatalf("got %v, want status %d", resp, tc.want)
			}
		})
	}
	if n := h.Up.Count(); n != 0 {
		t.Errorf("the upstream got %d requests, want none", n)
	}
}

// A socket past its lifetime ends with websocket_connection_limit_reached
// and a close; a new socket carries on.
func TestWebSocketLifetime(t *testing.T) {
	o := wsKinds()
	o.Proxy = func(c *proxy.Config) { c.WebSocketLifetime = 50 * time.Millisecond }
	h := newHarness(t, o)
	c := dialWS(t, h, "/v1/responses", "rk-oa")
	checkWSError(t, readTurn(t, c), 400, "websocket_connection_limit_reached")
	_, _, err := c.ReadMessage()
	var ce *websocket.CloseError
	if !asCloseError(err, &ce) || ce.Code != websocket.CloseNormalClosure {
		t.Errorf("after the limit: got %v, want a normal close", err)
	}
	checkTurn(t, sendWS(t, dialWS(t, h, "/v1/responses", "rk-oa"), map[string]any{"input": "again"}), "echo: again")
}

// stallTurns sends a response.create on c for each of inputs, the first
// answered by an upstream stream of content that stalls midway, and
// returns once it has stalled (h.Up.Release ends the stall).
func stallTurns(t *testing.T, h *harness, c *websocket.Conn, content string, inputs ...string) {
	t.Helper()
	h.Up.Enqueue(upstreamtest.Reply{Content: content, Fault: upstreamtest.FaultStallMidStream})
	for _, in := range inputs {
		b, _ := json.Marshal(map[string]any{"type": "response.create", "model": "gpt-4.1", "input": in})
		if err := c.WriteMessage(websocket.TextMessage, b); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Up.WaitStalled(ctx, 1); err != nil {
		t.Fatal(err)
	}
}

func asCloseError(err error, ce **websocket.CloseError) bool {
	e, ok := err.(*websocket.CloseError)
	*ce = e
	return ok
}

// One response is in flight at a time: a response.create sent while one
// streams waits and is served after it; one more sent meanwhile is
// refused with response_already_in_flight.
func TestWebSocketOneResponseInFlight(t *testing.T) {
	h := newHarness(t, wsKinds())
	c := dialWS(t, h, "/c/ws-flight/v1/responses", "rk-oa")
	stallTurns(t, h, c, "slow", "first", "second", "third")
	// The third message's refusal comes while the first streams, among
	// its events: the stall ends once it came (the socket's reader may
	// not have read the third message when the first stalls).
	var refused bool
	var done []string
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for len(done) < 2 {
		_, msg, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("read: %v (done %q)", err, done)
		}
		ev := gjson.ParseBytes(msg)
		switch ev.Get("type").Str {
		case "error":
			if ev.Get("error.code").Str != "response_already_in_flight" || refused {
				t.Fatalf("unexpected error event %s", msg)
			}
			refused = true
			h.Up.Release()
		case "response.completed":
			done = append(done, ev.Get(`response.output.#(type=="message").content.0.text`).Str)
		}
	}
	if !refused || done[0] != "slow" || done[1] != "echo: second" {
		t.Errorf("got refused=%v, answers %q; want the third refused, then slow and echo: second", refused, done)
	}
}

// Shutdown lets a socket's turn in flight finish, then closes the socket
// with server_shutting_down and a going-away close, and returns.
func TestWebSocketShutdownFinishesTheTurn(t *testing.T) {
	h := newHarness(t, wsKinds())
	c := dialWS(t, h, "/c/ws-shutdown/v1/responses", "rk-oa")
	stallTurns(t, h, c, "last words", "hello")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- h.Server.Shutdown(ctx) }()
	h.Up.Release()
	w := readTurn(t, c)
	if w.last.Get("type").Str != "response.completed" || w.response().Get(`output.0.content.0.text`).Str != "last words" {
		t.Fatalf("the turn in flight at shutdown: got %q", w.types())
	}
	checkWSError(t, readTurn(t, c), 503, "server_shutting_down")
	_, _, err := c.ReadMessage()
	var ce *websocket.CloseError
	if !asCloseError(err, &ce) || ce.Code != websocket.CloseGoingAway {
		t.Errorf("after shutdown: got %v, want a going-away close", err)
	}
	if err := <-stopped; err != nil {
		t.Errorf("shutdown: %v", err)
	}
	if d := h.WaitDone("ws-shutdown"); !d.Committed {
		t.Errorf("the turn in flight at shutdown was not committed: %+v", d)
	}
}

// A warmup (generate: false, as Codex sends first on a socket) calls no
// model and stores nothing: it answers a completed response with no
// output, whose id the next turn continues, its input ahead of that
// turn's; that turn is recorded in the conversation as any other.
func TestWebSocketWarmup(t *testing.T) {
	h := newHarness(t, wsKinds())
	onEachWSUpstream(t, h, "ws-warmup-", func(t *testing.T, u wsUpstream, conv string, c *websocket.Conn) {
		n := h.Up.Count()
		warm := sendWS(t, c, map[string]any{"generate": false, "input": []any{
			map[string]any{"type": "message", "role": "user", "content": "context first"}}})
		if got := strings.Join(warm.types(), " "); got != "response.created response.in_progress response.completed" {
			t.Fatalf("warmup events: got %q", got)
		}
		r := warm.response()
		if r.Get("status").Str != "completed" || len(r.Get("output").Array()) != 0 || r.Get("store").Bool() {
			t.Errorf("warmup response: got %s, want completed, no output, not stored", r.Raw)
		}
		if h.Up.Count() != n {
			t.Errorf("the warmup reached the upstream")
		}
		if got := len(h.Stored(u.tenant, conv)); got != 0 {
			t.Errorf("the warmup stored %d messages", got)
		}
		turn := sendWS(t, c, map[string]any{"previous_response_id": r.Get("id").Str, "input": "hello"})
		want := "echo: hello"
		if u.name == "anthropic" {
			want = "echo: context first\nhello" // two user messages in a row are one for Messages
		}
		checkTurn(t, turn, want)
		if d := h.WaitDone(conv); !d.Committed {
			t.Fatalf("the turn after the warmup was not committed: %+v", d)
		}
		if got := strings.Join(upstreamTexts(h.Up.Last()), "|"); got != "context first|hello" {
			t.Errorf("upstream messages: got %q, want the warmup's input, then the turn's", got)
		}
		if got := len(e2etest.Active(h.Stored(u.tenant, conv))); got != 3 {
			t.Errorf("stored %d messages, want 3 (the warmup's input, the prompt, the answer)", got)
		}
	})
}

// A turn that continues the socket's last response by
// previous_response_id, sending only its new items (as Codex does on a
// socket), gets that response's leading developer and system items back:
// OpenAI's previous_response_id carries them, and Recall stores no
// instructions. Items of its own in their place win.
func TestWebSocketContinuationKeepsInstructions(t *testing.T) {
	h := newHarness(t, wsKinds())
	onEachWSUpstream(t, h, "ws-instr-", func(t *testing.T, u wsUpstream, conv string, c *websocket.Conn) {
		first := sendWS(t, c, map[string]any{"input": []any{
			map[string]any{"type": "message", "role": "developer", "content": "answer tersely"},
			map[string]any{"type": "message", "role": "user", "content": "one"}}})
		checkTurn(t, first, "echo: one")
		h.WaitDone(conv)
		second := sendWS(t, c, map[string]any{"previous_response_id": first.response().Get("id").Str, "input": "two"})
		checkTurn(t, second, "echo: two")
		h.WaitDone(conv)
		if body := h.Up.Last().Body; !strings.Contains(string(body), "answer tersely") {
			t.Errorf("the continuation's upstream request lost the developer item: %s", body)
		}
		third := sendWS(t, c, map[string]any{"previous_response_id": second.response().Get("id").Str, "input": []any{
			map[string]any{"type": "message", "role": "developer", "content": "answer at length"},
			map[string]any{"type": "message", "role": "user", "content": "three"}}})
		checkTurn(t, third, "echo: three")
		h.WaitDone(conv)
		if body := string(h.Up.Last().Body); strings.Contains(body, "answer tersely") || !strings.Contains(body, "answer at length") {
			t.Errorf("a continuation with developer items of its own: got %s", body)
		}
	})
}

// The conversation is named as over HTTP: by the upgrade request's
// X-Conversation-ID header, or by a message's conversation.
func TestWebSocketConversationHeader(t *testing.T) {
	h := newHarness(t, wsKinds())
	c := dialWS(t, h, "/v1/responses", "rk-oa", "X-Conversation-ID", "ws-header")
	w := sendWS(t, c, map[string]any{"input": "one"})
	checkTurn(t, w, "echo: one")
	if d := h.WaitDone("ws-header"); !d.Committed {
		t.Fatalf("not committed: %+v", d)
	}
	if got := w.response().Get("conversation.id").Str; got != "ws-header" {
		t.Errorf("response's conversation: got %q, want ws-header", got)
	}
	other := dialWS(t, h, "/v1/responses", "rk-oa")
	checkTurn(t, sendWS(t, other, map[string]any{"conversation": "ws-header", "input": "two"}), "echo: two")
	h.WaitDone("ws-header")
	if got := strings.Join(upstreamTexts(h.Up.Last()), "|"); got != "one|echo: one|two" {
		t.Errorf("upstream messages: got %q", got)
	}
}
