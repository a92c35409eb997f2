package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/protocol/responses"
	"github.com/recallproxy/recall/respstate"
	"github.com/recallproxy/recall/wire"
)

// The Responses API's WebSocket mode (DESIGN.md section 15): GET
// /v1/responses (and /c/{conversation}/v1/responses) upgraded, each
// response.create message served as the streamed POST /v1/responses it
// stands for, by the same handler (serveSeam) on a request made for it
// from the upgrade request's headers and the message; the events it
// streams go back one message each. One response is in flight at a time;
// the socket keeps its last response to continue one Recall did not
// store from memory, as OpenAI's connection-local cache does.

// defaultWebSocketLifetime is how long a socket lives, as OpenAI's do.
const defaultWebSocketLifetime = 60 * time.Minute

var pathResponses = []byte("/v1/responses")

// upgrade serves a WebSocket upgrade: of GET /v1/responses, for an
// authenticated caller, into a socket of Responses turns; any other is
// answered 426, so that a client that tries WebSocket first falls back to
// HTTP at once.
func (s *Server) upgrade(rc *fasthttp.RequestCtx) {
	conv, path, e := routePath(rc.Request.URI().PathOriginal())
	switch {
	case e != nil || !rc.IsGet() || !bytes.Equal(path, pathResponses):
		s.reject(rc, "other", apierr.WebSocket)
		return
	case s.closing.Load():
		s.reject(rc, "responses", apierr.ShuttingDown)
		return
	}
	c, err := s.authenticate(rc)
	if err != nil {
		s.reject(rc, "responses", classify(err))
		return
	}
	k := &socket{s: s, conv: conv, gone: make(chan struct{})}
	rc.Request.Header.CopyTo(&k.header)
	for _, h := range upgradeHeaders {
		k.header.Del(h)
	}
	if err := s.upgrader.Upgrade(rc, k.serve); err != nil {
		s.metrics.CountRequest(c.cfg.ID, "responses", rc.Response.StatusCode())
		return
	}
	s.metrics.CountRequest(c.cfg.ID, "responses", fasthttp.StatusSwitchingProtocols)
}

// upgradeHeaders are the upgrade request's headers that name the
// WebSocket handshake: a turn's request is a plain POST, and none of them
// goes upstream.
var upgradeHeaders = []string{
	fasthttp.HeaderConnection, fasthttp.HeaderUpgrade, "Sec-WebSocket-Key", "Sec-WebSocket-Version",
	"Sec-WebSocket-Extensions", "Sec-WebSocket-Protocol",
}

// newUpgrader is the server's WebSocket handshake: the library's checks
// (GET, the version, the key, a same-origin Origin if there is one), its
// refusals in OpenAI's error shape, and no compression (the events are
// small and compressing each costs more than it saves on a loopback or a
// LAN).
func newUpgrader() *websocket.FastHTTPUpgrader {
	return &websocket.FastHTTPUpgrader{
		Error: func(rc *fasthttp.RequestCtx, status int, reason error) {
			rc.SetConnectionClose()
			writeError(rc, &apierr.Error{Status: status, Type: "invalid_request_error", Code: "invalid_websocket_handshake",
				Message: "The WebSocket handshake was refused: " + reason.Error() + "."})
		},
	}
}

// socket is one WebSocket connection's state: the request each turn
// starts from, its last response, and whether its peer is still there.
type socket struct {
	s    *Server
	ws   *websocket.Conn
	conv string // the path prefix's conversation
	// header is the upgrade request's, without the handshake's headers:
	// every turn's request carries it (the key, X-Conversation-ID, the
	// agent's headers).
	header fasthttp.RequestHeader
	// wmu serialises writes: the turn's events, and the reader's
	// refusals of events sent while a response is in flight.
	wmu sync.Mutex
	// gone is closed once the reader stops: the peer closed, left, or
	// sent what ends a socket.
	gone chan struct{}
	// last is the last response that finished; a response.create naming
	// it while Recall has not stored it continues it from Items.
	last *responses.Turn
}

// serve runs a socket until its peer leaves, its lifetime ends, or the
// server shuts down: one reader goroutine takes the messages (and sees
// the peer leave while a turn streams), and this one serves them in
// order.
func (k *socket) serve(ws *websocket.Conn) {
	s := k.s
	k.ws = ws
	if !s.sockets.add(k) {
		k.close(websocket.CloseGoingAway, apierr.ShuttingDown)
		return
	}
	defer s.sockets.remove(k)
	ws.SetReadLimit(int64(s.cfg.MaxBodyBytes))
	// A message takes a slot until its turn is answered: one in flight
	// and one waiting for it; a message that finds none is refused.
	frames, slots := make(chan []byte, 2), make(chan struct{}, 2)
	reader := make(chan struct{})
	go func() {
		defer close(reader)
		defer close(k.gone)
		for {
			typ, msg, err := ws.ReadMessage()
			if err != nil {
				return
			}
			if typ != websocket.TextMessage {
				k.write(apierr.WebSocketEvent(apierr.BadEvent))
				continue
			}
			select {
			case slots <- struct{}{}:
				frames <- msg
			default:
				k.write(apierr.WebSocketEvent(apierr.ResponseInFlight))
			}
		}
	}()
	defer func() {
		// Unblock the reader (fasthttp takes the connection back once
		// serve returns) and wait for it.
		_ = ws.NetConn().SetReadDeadline(time.Now())
		<-reader
	}()
	life := time.NewTimer(s.cfg.WebSocketLifetime)
	defer life.Stop()
	for {
		select {
		case msg := <-frames:
			k.turn(msg)
			<-slots
			continue
		default:
		}
		select {
		case msg := <-frames:
			k.turn(msg)
			<-slots
		case <-k.gone:
			return
		case <-life.C:
			k.close(websocket.CloseNormalClosure, apierr.ConnectionLimit)
			return
		case <-s.sockets.draining:
			k.close(websocket.CloseGoingAway, apierr.ShuttingDown)
			return
		}
	}
}

// close sends e as an error event and a close message with code.
func (k *socket) close(code int, e *apierr.Error) {
	k.write(apierr.WebSocketEvent(e))
	k.wmu.Lock()
	defer k.wmu.Unlock()
	_ = k.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, e.Code), time.Now().Add(time.Second))
}

// write sends one message, within the stream idle timeout: a client that
// takes nothing for that long is gone.
func (k *socket) write(msg []byte) error {
	k.wmu.Lock()
	defer k.wmu.Unlock()
	_ = k.ws.SetWriteDeadline(time.Now().Add(k.s.cfg.StreamIdleTimeout))
	return k.ws.WriteMessage(websocket.TextMessage, msg)
}

// turn serves one response.create message: the streamed POST it stands
// for, served by serveSeam on a request of its own, its events sent as
// messages; a failure before the stream began is an error event. It
// keeps the response that finished as the socket's last, and forgets the
// last when a turn continuing it failed (its chain cannot go on).
func (k *socket) turn(msg []byte) {
	s := k.s
	body, previous, err := responses.CreateBody(msg)
	if err != nil {
		k.write(apierr.WebSocketEvent(classify(err)))
		return
	}
	continues := previous != "" && k.last != nil && previous == k.last.ID
	switch {
	case continues && !k.last.Stored:
		body, err = responses.Continue(body, k.last)
	case continues:
		body, err = responses.Reinstruct(body, k.last)
	}
	if err != nil {
		k.write(apierr.WebSocketEvent(apierr.BadJSON))
		return
	}
	if len(body) > s.cfg.MaxBodyBytes {
		k.write(apierr.WebSocketEvent(apierr.TooLarge))
		return
	}
	rc := k.request(body)
	var failed bool
	switch {
	case responses.Warmup(body):
		failed = k.warmup(rc, body)
	default:
		s.busy.Add(1)
		s.serveSeam(rc, k.conv, protocols[wire.Responses])
		s.busy.Add(-1)
		if stream, ok := rc.Response.BodyStream().(*streamBody); ok {
			var werr error
			failed, werr = k.relay(stream, body)
			if werr != nil {
				werr = fmt.Errorf("proxy: websocket write: %w", werr)
			}
			_ = stream.CloseWithError(werr) // nil: every event went out
			break
		}
		// Refused or failed before any event: the answer a POST would
		// have had, as an error event.
		failed = true
		k.write(apierr.WebSocketEventOf(rc.Response.StatusCode(), rc.Response.Body()))
	}
	if failed && continues {
		k.last = nil
	}
}

// warmup answers a response.create with generate: false (OpenAI's
// warmup of a turn): the caller authenticated and the body checked as a
// turn's are, no upstream call, nothing stored, and the events of a
// response with no output, whose id a later turn continues from the
// socket's memory (its input items ahead of that turn's).
func (k *socket) warmup(rc *fasthttp.RequestCtx, body []byte) (failed bool) {
	if _, err := k.s.authenticate(rc); err != nil {
		k.write(apierr.WebSocketEvent(classify(err)))
		return true
	}
	req, err := responses.Ingress{}.ParseRequest(body)
	if err != nil {
		k.write(apierr.WebSocketEvent(classify(err)))
		return true
	}
	now := k.s.cfg.Now()
	req.ResponseID, req.Created, req.Store = "resp_"+respstate.NewConversationID()[len("conv_"):], now.Unix(), false
	failed, _ = k.relay(bytes.NewReader(responses.AppendWarmup(nil, req, now.Unix())), body)
	return failed
}

// relay sends a turn's streamed events, one message each, until the
// stream ends or a write fails (werr). A response that finished becomes
// k.last; failed reports one that ended in an error.
func (k *socket) relay(stream io.Reader, body []byte) (failed bool, werr error) {
	er := chat.NewEventReader(stream, k.s.cfg.MaxResponseBytes)
	for {
		ev, err := er.Next()
		if len(ev.Data) > 0 {
			if d, f, r := responses.Terminal(ev.Data); d {
				t := responses.NewTurn(body, r)
				k.last = &t
			} else if f {
				failed = true
			}
			if werr = k.write(ev.Data); werr != nil {
				return failed, werr
			}
		}
		if err != nil {
			return failed, nil
		}
	}
}

// request is the POST /v1/responses a turn's body stands for, from the
// upgrade request's headers, on a connection that says whether the peer
// is gone (socketConn).
func (k *socket) request(body []byte) *fasthttp.RequestCtx {
	rc := new(fasthttp.RequestCtx)
	conn := socketConn{Conn: k.ws.NetConn(), gone: k.gone}
	if u, ok := conn.Conn.(interface{ UnsafeConn() net.Conn }); ok {
		conn.raw = u.UnsafeConn() // fasthttp's hijacked connection, around the client's socket
	}
	rc.Init2(conn, fasthttpLogger{k.s.log}, false)
	k.header.CopyTo(&rc.Request.Header)
	rc.Request.Header.SetMethod(fasthttp.MethodPost)
	rc.Request.Header.SetContentType("application/json")
	rc.Request.Header.SetContentLength(len(body))
	rc.Request.SetBodyRaw(body)
	return rc
}

// socketConn is the connection a turn's request is served on: the
// socket's, which a turn's request must not read or write (the socket
// does), and which knows whether its peer left (see clientGone).
type socketConn struct {
	net.Conn
	gone <-chan struct{} // the socket's reader stopped
	raw  net.Conn        // the client's socket under Conn, if known
}

// Gone reports whether the peer left: the socket's reader has stopped
// (a close message, an end, a failure), or the client's socket is closed
// already though the reader has not seen it yet.
func (c socketConn) Gone() bool {
	select {
	case <-c.gone:
		return true
	default:
		return c.raw != nil && peerClosed(c.raw)
	}
}

// goner is a connection that knows whether its peer left.
type goner interface{ Gone() bool }

var _ goner = socketConn{}

// socketSet is the server's open sockets, for Shutdown: fasthttp forgets
// a connection once it is hijacked.
type socketSet struct {
	mu       sync.Mutex
	open     map[*socket]struct{}
	wg       sync.WaitGroup
	draining chan struct{} // closed by drain
	drained  bool
}

func newSocketSet() *socketSet {
	return &socketSet{open: make(map[*socket]struct{}), draining: make(chan struct{})}
}

// add counts k in, unless the set drains.
func (t *socketSet) add(k *socket) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.drained {
		return false
	}
	t.open[k] = struct{}{}
	t.wg.Add(1)
	return true
}

func (t *socketSet) remove(k *socket) {
	t.mu.Lock()
	delete(t.open, k)
	t.mu.Unlock()
	t.wg.Done()
}

// drain asks every socket to close once its turn in flight, if any, is
// answered, and refuses new ones.
func (t *socketSet) drain() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.drained {
		t.drained = true
		close(t.draining)
	}
}

// wait waits until every socket has closed.
func (t *socketSet) wait() <-chan struct{} {
	c := make(chan struct{})
	go func() { t.wg.Wait(); close(c) }()
	return c
}

// closeAll ends every socket now: its reads and writes fail at once.
func (t *socketSet) closeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	past := time.Now().Add(-time.Second)
	for k := range t.open {
		if k.ws != nil {
			_ = k.ws.NetConn().SetDeadline(past)
		}
	}
}
