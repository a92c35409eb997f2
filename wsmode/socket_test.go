package wsmode_test

import (
	"bytes"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/wsmode"
)

// wait bounds every wait on a signal in these tests.
const wait = 10 * time.Second

// serve mounts a wsmode.Server for cfg on a fasthttp server on
// loopback, upgrading every request on conversation "conv-1", and
// returns the server and its ws:// address.
func serve(t *testing.T, cfg wsmode.Config) (*wsmode.Server, string) {
	t.Helper()
	w, err := wsmode.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(rc *fasthttp.RequestCtx) { _ = w.Upgrade(rc, "conv-1") }}
	go srv.Serve(ln)
	t.Cleanup(func() {
		w.CloseAll()
		<-w.Wait()
		_ = srv.Shutdown()
	})
	return w, "ws://" + ln.Addr().String() + "/v1/responses"
}

// dial opens a socket with a key, and closes it at the test's end.
func dial(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(url, http.Header{"Authorization": {"Bearer rk-1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

// read reads one message, within the tests' bound.
func read(t *testing.T, ws *websocket.Conn) gjson.Result {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(wait))
	_, msg, err := ws.ReadMessage()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return gjson.ParseBytes(msg)
}

func send(t *testing.T, ws *websocket.Conn, msg string) {
	t.Helper()
	if err := ws.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		t.Fatal(err)
	}
}

// events is a streamed turn's answer, as the mounting server sets it:
// Server-Sent Events, told how the socket stopped reading them.
type events struct {
	*bytes.Reader
	closed chan error
}

func (e *events) CloseWithError(err error) error { e.closed <- err; return nil }

// answer sets rc's answer to a streamed response id's events.
func answer(rc *fasthttp.RequestCtx, id string) *events {
	sse := "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"" + id + "\"}}\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"" + id + "\",\"store\":true,\"output\":[]}}\n\n"
	e := &events{Reader: bytes.NewReader([]byte(sse)), closed: make(chan error, 1)}
	rc.SetBodyStream(e, -1)
	return e
}

const create = `{"type":"response.create","model":"m","input":"hi"}`

// A response.create is served by Turn as the streamed POST
// /v1/responses it stands for, on the path's conversation, with the
// upgrade request's headers but none of the handshake's, and each event
// of its stream comes back as one message; the stream is closed as read
// out.
func TestTurnIsAPostAndItsEventsAreMessages(t *testing.T) {
	type seen struct {
		method, conv, auth, upgrade, key, body string
		stream                                 *events
	}
	turns := make(chan seen, 1)
	_, url := serve(t, wsmode.Config{Turn: func(rc *fasthttp.RequestCtx, conv string) {
		turns <- seen{string(rc.Method()), conv, string(rc.Request.Header.Peek("Authorization")),
			string(rc.Request.Header.Peek("Upgrade")), string(rc.Request.Header.Peek("Sec-WebSocket-Key")),
			string(rc.Request.Body()), answer(rc, "resp_1")}
	}})
	ws := dial(t, url)
	send(t, ws, create)
	for _, want := range []string{"response.created", "response.completed"} {
		if got := read(t, ws).Get("type").Str; got != want {
			t.Fatalf("got event %q, want %q", got, want)
		}
	}
	s := <-turns
	if s.method != "POST" || s.conv != "conv-1" || s.auth != "Bearer rk-1" || s.upgrade != "" || s.key != "" {
		t.Errorf("got %s on %q, Authorization %q, Upgrade %q, Sec-WebSocket-Key %q; want POST on conv-1, the key, no handshake header",
			s.method, s.conv, s.auth, s.upgrade, s.key)
	}
	if b := gjson.Parse(s.body); b.Get("type").Exists() || !b.Get("stream").Bool() || b.Get("input").Str != "hi" {
		t.Errorf("got body %s, want the event without its type, streamed", s.body)
	}
	select {
	case err := <-s.stream.closed:
		if err != nil {
			t.Errorf("got the stream closed with %v, want nil (read out)", err)
		}
	case <-time.After(wait):
		t.Fatal("the stream was never closed")
	}
}

// A turn refused before it streams (a buffered error answer) is one
// error event carrying that answer's error; the socket stays open.
func TestRefusedTurnIsAnErrorEvent(t *testing.T) {
	_, url := serve(t, wsmode.Config{Turn: func(rc *fasthttp.RequestCtx, _ string) {
		apierr.Write(rc, apierr.Invalid("invalid_value", "model", "No such model."), apierr.OpenAI)
	}})
	ws := dial(t, url)
	for range 2 {
		send(t, ws, create)
		ev := read(t, ws)
		if ev.Get("type").Str != "error" || ev.Get("status").Int() != 400 || ev.Get("error.code").Str != "invalid_value" {
			t.Fatalf("got %s, want an error event of status 400, code invalid_value", ev.Raw)
		}
	}
}

// A message that is no response.create is refused (invalid_event, or
// invalid_json for one that is not JSON), and Turn is not called.
func TestBadEventIsRefused(t *testing.T) {
	_, url := serve(t, wsmode.Config{Turn: func(*fasthttp.RequestCtx, string) { t.Error("Turn called for a bad event") }})
	ws := dial(t, url)
	for _, tc := range []struct{ msg, want string }{
		{`{"type":"response.cancel"}`, "invalid_event"},
		{`not json`, "invalid_json"},
	} {
		send(t, ws, tc.msg)
		if ev := read(t, ws); ev.Get("error.code").Str != tc.want {
			t.Errorf("%s: got %s, want %s", tc.msg, ev.Raw, tc.want)
		}
	}
	if err := ws.WriteMessage(websocket.BinaryMessage, []byte(create)); err != nil {
		t.Fatal(err)
	}
	if ev := read(t, ws); ev.Get("error.code").Str != "invalid_event" {
		t.Errorf("binary message: got %s, want invalid_event", ev.Raw)
	}
}

// One response is in flight and one waits for it: a third
// response.create is refused at once with response_already_in_flight,
// and the two others are answered in order.
func TestThirdResponseWhileOneIsInFlightIsRefused(t *testing.T) {
	started, release := make(chan struct{}, 2), make(chan struct{})
	n := 0
	_, url := serve(t, wsmode.Config{Turn: func(rc *fasthttp.RequestCtx, _ string) {
		n++
		started <- struct{}{}
		<-release
		answer(rc, "resp_"+string(rune('0'+n)))
	}})
	ws := dial(t, url)
	send(t, ws, create)
	<-started
	send(t, ws, create)
	send(t, ws, create)
	if ev := read(t, ws); ev.Get("error.code").Str != "response_already_in_flight" {
		t.Fatalf("got %s, want response_already_in_flight", ev.Raw)
	}
	close(release)
	var ids []string
	for range 4 {
		if ev := read(t, ws); ev.Get("type").Str == "response.completed" {
			ids = append(ids, ev.Get("response.id").Str)
		}
	}
	if strings.Join(ids, ",") != "resp_1,resp_2" {
		t.Errorf("got responses %v, want resp_1 then resp_2", ids)
	}
}

// Drain lets a turn in flight finish, then closes the socket with the
// error event server_shutting_down and close code 1001; Wait ends once
// it has; a socket opened after Drain is closed at once.
func TestDrainClosesOnceTheTurnInFlightIsAnswered(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	w, url := serve(t, wsmode.Config{Turn: func(rc *fasthttp.RequestCtx, _ string) {
		close(started)
		<-release
		answer(rc, "resp_1")
	}})
	ws := dial(t, url)
	send(t, ws, create)
	<-started
	w.Drain()
	close(release)
	for _, want := range []string{"response.created", "response.completed", "error"} {
		ev := read(t, ws)
		if ev.Get("type").Str != want {
			t.Fatalf("got %s, want an event %s", ev.Raw, want)
		}
		if want == "error" && ev.Get("error.code").Str != "server_shutting_down" {
			t.Errorf("got %s, want server_shutting_down", ev.Raw)
		}
	}
	_ = ws.SetReadDeadline(time.Now().Add(wait))
	if _, _, err := ws.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseGoingAway) {
		t.Errorf("got %v, want a close 1001", err)
	}
	select {
	case <-w.Wait():
	case <-time.After(wait):
		t.Fatal("Wait did not end once the socket closed")
	}
	late := dial(t, url)
	if ev := read(t, late); ev.Get("error.code").Str != "server_shutting_down" {
		t.Errorf("a socket opened while draining got %s, want server_shutting_down", ev.Raw)
	}
}

// A socket past its lifetime ends with websocket_connection_limit_reached
// and a normal close.
func TestSocketEndsAtItsLifetime(t *testing.T) {
	_, url := serve(t, wsmode.Config{Turn: func(*fasthttp.RequestCtx, string) {}, Lifetime: time.Millisecond})
	ws := dial(t, url)
	if ev := read(t, ws); ev.Get("error.code").Str != "websocket_connection_limit_reached" {
		t.Fatalf("got %s, want websocket_connection_limit_reached", ev.Raw)
	}
	_ = ws.SetReadDeadline(time.Now().Add(wait))
	if _, _, err := ws.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Errorf("got %v, want a close 1000", err)
	}
}

// CloseAll ends an idle socket at once: the client's read fails, and
// Wait ends.
func TestCloseAllEndsEverySocket(t *testing.T) {
	w, url := serve(t, wsmode.Config{Turn: func(*fasthttp.RequestCtx, string) {}})
	ws := dial(t, url)
	send(t, ws, `{}`) // answered once the socket is served: it is in the set
	read(t, ws)
	w.CloseAll()
	select {
	case <-w.Wait():
	case <-time.After(wait):
		t.Fatal("Wait did not end after CloseAll")
	}
	_ = ws.SetReadDeadline(time.Now().Add(wait))
	if _, _, err := ws.ReadMessage(); err == nil {
		t.Errorf("got a message after CloseAll, want the socket ended")
	}
}

// A turn's connection reports Gone() once the socket's peer left, so
// that the handler does not commit what the client never saw.
func TestTurnSeesThePeerLeave(t *testing.T) {
	started, gone := make(chan struct{}), make(chan bool, 1)
	_, url := serve(t, wsmode.Config{Turn: func(rc *fasthttp.RequestCtx, _ string) {
		g, ok := rc.Conn().(interface{ Gone() bool })
		if !ok {
			gone <- false
			return
		}
		was := g.Gone()
		close(started)
		deadline := time.Now().Add(wait)
		for !g.Gone() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond) // Gone is a question, with no signal to wait on: asked until the deadline
		}
		gone <- !was && g.Gone()
	}})
	ws := dial(t, url)
	send(t, ws, create)
	<-started
	ws.Close()
	if !<-gone {
		t.Error("the turn's connection did not report the peer gone (or reported it before it left)")
	}
}

// A warmup (generate: false) never reaches Turn: its caller is
// authenticated, and it is answered with the events of a response
// without output; a caller refused gets the error event.
func TestWarmupIsAnsweredWithoutTurn(t *testing.T) {
	var refuse atomic.Bool
	_, url := serve(t, wsmode.Config{
		Turn: func(*fasthttp.RequestCtx, string) { t.Error("Turn called for a warmup") },
		Authenticate: func(rc *fasthttp.RequestCtx) error {
			if refuse.Load() {
				return apierr.InvalidAPIKey
			}
			return nil
		},
		Now: func() time.Time { return time.Unix(1700000000, 0) },
	})
	ws := dial(t, url)
	send(t, ws, `{"type":"response.create","model":"m","input":"hi","generate":false}`)
	var last gjson.Result
	for last.Get("type").Str != "response.completed" {
		last = read(t, ws)
		if last.Get("type").Str == "error" {
			t.Fatalf("got %s, want a warmup's events", last.Raw)
		}
	}
	if r := last.Get("response"); !strings.HasPrefix(r.Get("id").Str, "resp_") || r.Get("created_at").Int() != 1700000000 || len(r.Get("output").Array()) != 0 {
		t.Errorf("got %s, want a response of no output created at the clock's time", r.Raw)
	}
	refuse.Store(true)
	send(t, ws, `{"type":"response.create","model":"m","input":"hi","generate":false}`)
	if ev := read(t, ws); ev.Get("status").Int() != 401 {
		t.Errorf("got %s, want the caller refused with 401", ev.Raw)
	}
}

// A handshake the library refuses is answered by Reject, and Upgrade
// reports it.
func TestRefusedHandshakeIsRejected(t *testing.T) {
	var rejected *apierr.Error
	w, err := wsmode.New(wsmode.Config{Turn: func(*fasthttp.RequestCtx, string) {},
		Reject: func(rc *fasthttp.RequestCtx, e *apierr.Error) { rejected = e; apierr.Write(rc, e, apierr.OpenAI) }})
	if err != nil {
		t.Fatal(err)
	}
	var rc fasthttp.RequestCtx
	rc.Request.Header.SetMethod("GET")
	rc.Request.Header.Set("Connection", "Upgrade")
	rc.Request.Header.Set("Upgrade", "websocket")
	rc.Request.Header.Set("Sec-WebSocket-Version", "7")
	if err := w.Upgrade(&rc, ""); err == nil {
		t.Fatal("Upgrade accepted version 7")
	}
	if rejected == nil || rejected.Code != "invalid_websocket_handshake" || rc.Response.StatusCode() != rejected.Status {
		t.Errorf("got %v and status %d, want invalid_websocket_handshake rendered", rejected, rc.Response.StatusCode())
	}
}

// New refuses a Config without Turn.
func TestNewNeedsTurn(t *testing.T) {
	if _, err := wsmode.New(wsmode.Config{}); err == nil {
		t.Error("New accepted a Config without Turn")
	}
}
