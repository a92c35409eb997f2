package wsmode

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/protocol/responses"
	"github.com/recallproxy/recall/respstate"
)

// socket is one WebSocket connection's state: the request each turn
// starts from, its last response, and whether its peer is still there.
type socket struct {
	w    *Server
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
	// it while the server has not stored it continues it from Items.
	last *responses.Turn
}

// serve runs a socket until its peer leaves, its lifetime ends, or the
// server drains: one reader goroutine takes the messages (and sees the
// peer leave while a turn streams), and this one serves them in order.
func (k *socket) serve(ws *websocket.Conn) {
	w := k.w
	k.ws = ws
	if !w.sockets.add(k) {
		k.close(websocket.CloseGoingAway, apierr.ShuttingDown)
		return
	}
	defer w.sockets.remove(k)
	ws.SetReadLimit(int64(w.cfg.MaxBodyBytes))
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
	life := time.NewTimer(w.cfg.Lifetime)
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
		case <-w.sockets.draining:
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
	_ = k.ws.SetWriteDeadline(time.Now().Add(k.w.cfg.StreamIdleTimeout))
	return k.ws.WriteMessage(websocket.TextMessage, msg)
}

// turn serves one response.create message: the streamed POST it stands
// for, served by Config.Turn on a request of its own, its events sent as
// messages; a failure before the stream began is an error event. It
// keeps the response that finished as the socket's last, and forgets the
// last when a turn continuing it failed (its chain cannot go on).
func (k *socket) turn(msg []byte) {
	cfg := &k.w.cfg
	body, previous, err := responses.CreateBody(msg)
	if err != nil {
		k.write(apierr.WebSocketEvent(cfg.Classify(err)))
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
	if len(body) > cfg.MaxBodyBytes {
		k.write(apierr.WebSocketEvent(apierr.TooLarge))
		return
	}
	rc := k.request(body)
	var failed bool
	switch {
	case responses.Warmup(body):
		failed = k.warmup(rc, body)
	default:
		cfg.Turn(rc, k.conv)
		stream, ok := rc.Response.BodyStream().(fasthttp.ReadCloserWithError)
		if !ok {
			// Refused or failed before any event: the answer a POST
			// would have had, as an error event.
			failed = true
			k.write(apierr.WebSocketEventOf(rc.Response.StatusCode(), rc.Response.Body()))
			break
		}
		var werr error
		failed, werr = k.relay(stream, body)
		if werr != nil {
			werr = fmt.Errorf("wsmode: write: %w", werr)
		}
		_ = stream.CloseWithError(werr) // nil: every event went out
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
	cfg := &k.w.cfg
	if err := cfg.Authenticate(rc); err != nil {
		k.write(apierr.WebSocketEvent(cfg.Classify(err)))
		return true
	}
	req, err := responses.Ingress{}.ParseRequest(body)
	if err != nil {
		k.write(apierr.WebSocketEvent(cfg.Classify(err)))
		return true
	}
	now := cfg.Now()
	req.ResponseID, req.Created, req.Store = "resp_"+respstate.NewConversationID()[len("conv_"):], now.Unix(), false
	failed, _ = k.relay(bytes.NewReader(responses.AppendWarmup(nil, req, now.Unix())), body)
	return failed
}

// relay sends a turn's streamed events, one message each, until the
// stream ends or a write fails (werr). A response that finished becomes
// k.last; failed reports one that ended in an error.
func (k *socket) relay(stream io.Reader, body []byte) (failed bool, werr error) {
	er := chat.NewEventReader(stream, k.w.cfg.MaxResponseBytes)
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
// is gone (conn).
func (k *socket) request(body []byte) *fasthttp.RequestCtx {
	rc := new(fasthttp.RequestCtx)
	c := conn{Conn: k.ws.NetConn(), gone: k.gone}
	if u, ok := c.Conn.(interface{ UnsafeConn() net.Conn }); ok {
		c.raw = u.UnsafeConn() // fasthttp's hijacked connection, around the client's socket
	}
	rc.Init2(c, logger{k.w.cfg.Logger}, false)
	k.header.CopyTo(&rc.Request.Header)
	rc.Request.Header.SetMethod(fasthttp.MethodPost)
	rc.Request.Header.SetContentType("application/json")
	rc.Request.Header.SetContentLength(len(body))
	rc.Request.SetBodyRaw(body)
	return rc
}

// conn is the connection a turn's request is served on: the socket's,
// which a turn's request must not read or write (the socket does), and
// which knows whether its peer left.
type conn struct {
	net.Conn
	gone <-chan struct{} // the socket's reader stopped
	raw  net.Conn        // the client's socket under Conn, if known
}

// Gone reports whether the peer left: the socket's reader has stopped
// (a close message, an end, a failure), or the client's socket is closed
// already though the reader has not seen it yet. A turn's handler asks
// it before it commits what the client will not see.
func (c conn) Gone() bool {
	select {
	case <-c.gone:
		return true
	default:
		return c.raw != nil && peerClosed(c.raw)
	}
}

// logger is fasthttp's Logger over slog, at debug level.
type logger struct{ l *slog.Logger }

func (f logger) Printf(format string, args ...any) {
	f.l.Debug("fasthttp", "msg", fmt.Sprintf(format, args...))
}
