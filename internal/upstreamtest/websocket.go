package upstreamtest

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/fasthttp/websocket"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// The Responses API's WebSocket mode: GET /v1/responses upgraded, each
// text message a {"type":"response.create", ...create-response body...}
// answered with the events a streamed POST gets, one text message each,
// as OpenAI's WebSocket mode does. A message is validated as the HTTP
// route validates its body and takes the same Reply queue, and is
// recorded as a Received with WebSocket set. One response is served at a
// time, in arrival order. previous_response_id may name the socket's
// last response (OpenAI's connection-local cache, which holds the most
// recent response even with store false): its input and output items
// come ahead of the message's input. Any other id is refused
// previous_response_not_found, as the HTTP route refuses every id: the
// fake keeps no responses. generate: false is a warmup: no model call,
// no scripted reply taken, a response with no output that a later
// message may continue.

// socketResponse is what a socket keeps of its last response: its id, and
// its input then output items as a JSON array.
type socketResponse struct {
	id    string
	items []byte
}

// respSocket is one WebSocket connection of the Responses route.
type respSocket struct {
	s    *Server
	ws   *websocket.Conn
	r    *http.Request // the upgrade request: each message's recorded headers
	last *socketResponse
}

// serveResponsesSocket upgrades r, a GET /v1/responses asking for a
// WebSocket, and serves the socket until its client leaves or the Server
// closes.
func (s *Server) serveResponsesSocket(w http.ResponseWriter, r *http.Request) {
	h := http.Header{}
	s.setRequestHeaders(h)
	// Compression off: the client may offer permessage-deflate, and a
	// server may decline it.
	up := websocket.Upgrader{}
	ws, err := up.Upgrade(w, r, h)
	if err != nil {
		return // the library answered the refused handshake
	}
	if !s.addSocket(ws) {
		_ = ws.Close()
		return
	}
	defer s.removeSocket(ws)
	ws.SetReadLimit(64 << 20)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The reader takes the messages (and answers pings) while a response
	// streams; the end of the socket cancels ctx, which ends a stall.
	msgs := make(chan []byte, 16)
	go func() {
		defer cancel()
		defer close(msgs)
		for {
			typ, msg, err := ws.ReadMessage()
			if err != nil {
				return
			}
			if typ != websocket.TextMessage {
				msg = nil // refused below, in order
			}
			select {
			case msgs <- msg:
			case <-ctx.Done():
				return
			}
		}
	}()
	k := &respSocket{s: s, ws: ws, r: r}
	for msg := range msgs {
		if !k.serve(ctx, msg) {
			break
		}
	}
	_ = ws.Close()
}

// addSocket counts ws in, unless the Server is closed.
func (s *Server) addSocket(ws *websocket.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.sockets == nil {
		s.sockets = make(map[*websocket.Conn]struct{})
	}
	s.sockets[ws] = struct{}{}
	s.upgrades++
	return true
}

func (s *Server) removeSocket(ws *websocket.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sockets, ws)
}

// closeSockets closes every open socket: http.Server.Close does not see
// hijacked connections.
func (s *Server) closeSockets() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for ws := range s.sockets {
		_ = ws.NetConn().Close()
	}
}

// Upgrades returns how many WebSockets the Server accepted on
// /v1/responses since New.
func (s *Server) Upgrades() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.upgrades
}

// serve answers one message; false ends the socket (a scripted fault
// that closes it, or a write that failed).
func (k *respSocket) serve(ctx context.Context, msg []byte) bool {
	s := k.s
	rec := s.receivedFor(k.r, msg)
	if rec != nil {
		rec.WebSocket, rec.Stream = true, true
	}
	var items []gjson.Result
	body, apiErr, status := k.body(msg)
	if apiErr == nil {
		root := gjson.ParseBytes(body)
		apiErr, status = validateResponses(root, &items)
		if rec != nil {
			rec.Model = root.Get("model").Str
		}
	}
	if rec != nil {
		rec.Rejected = apiErr
		for _, it := range items {
			rec.Messages = append(rec.Messages, json.RawMessage(it.Raw))
		}
	}
	warmup := apiErr == nil && gjson.GetBytes(body, "generate").Type == gjson.False
	reply, _, gate := s.record(rec, apiErr == nil && !warmup)
	if apiErr != nil {
		// A failed response is not one a later message continues.
		k.last = nil
		return k.writeError(status, apiErr)
	}
	// keep is what a scripted status's error event says of the socket.
	keep := false
	writeStatus := func(status int) {
		k.last = nil
		keep = k.writeError(status, statusError(status, reply.Content))
	}
	drop := func() { _ = k.ws.NetConn().Close() }
	if !s.beforeAnswer(ctx, reply, gate, writeStatus, drop) {
		return keep
	}
	root := gjson.ParseBytes(body)
	a := s.newAnswerResponse(root, items, reply)
	a.previous = gjson.GetBytes(msg, "previous_response_id").Str
	if warmup {
		a.reasoning, a.text, a.hasText, a.calls, a.out = "", "", false, nil, 0
	}
	return k.stream(ctx, a, gate)
}

// body returns the create-response body a message stands for: the
// message without its type, its input preceded by the socket's last
// response's items when previous_response_id names it, without
// previous_response_id. A message that is not a response.create, or
// names another response, is refused.
func (k *respSocket) body(msg []byte) (body []byte, e *APIError, status int) {
	if msg == nil {
		return nil, &APIError{Message: "Invalid message: expected a text message.", Type: invalidRequest, Code: "invalid_value"}, http.StatusBadRequest
	}
	if !gjson.ValidBytes(msg) || !gjson.ParseBytes(msg).IsObject() {
		return nil, &APIError{Message: msgParseBody, Type: invalidRequest}, http.StatusBadRequest
	}
	root := gjson.ParseBytes(msg)
	if t := root.Get("type"); t.Str != "response.create" {
		return nil, invalidValue("type", t.Str, []string{"response.create"}), http.StatusBadRequest
	}
	if root.Get("background").Type == gjson.True {
		return nil, &APIError{Message: "background is not supported in WebSocket mode.", Type: invalidRequest,
			Param: "background", Code: "unsupported_parameter"}, http.StatusBadRequest
	}
	body, _ = sjson.DeleteBytes(append([]byte(nil), msg...), "type")
	p := root.Get("previous_response_id")
	if !p.Exists() {
		return body, nil, 0
	}
	if p.Type != gjson.String || k.last == nil || p.Str != k.last.id {
		return nil, &APIError{Message: "Previous response with id '" + p.String() + "' not found.", Type: invalidRequest,
			Param: "previous_response_id", Code: "previous_response_not_found"}, http.StatusBadRequest
	}
	all := appendItems(appendItems([]byte{'['}, gjson.ParseBytes(k.last.items)), root.Get("input"))
	body, _ = sjson.SetRawBytes(body, "input", append(all, ']')) // cannot fail: an object
	body, _ = sjson.DeleteBytes(body, "previous_response_id")
	return body, nil, 0
}

// writeError sends e as OpenAI's WebSocket error event, with status.
func (k *respSocket) writeError(status int, e *APIError) bool {
	b := append([]byte(`{"type":"error","status":`), strconv.Itoa(status)...)
	eb := e.JSON()
	b = append(append(b, `,"error":`...), gjson.GetBytes(eb, "error").Raw...)
	return k.ws.WriteMessage(websocket.TextMessage, append(b, '}')) == nil
}

// stream sends the answer's events, one message each, with the reply's
// mid-stream faults (as writeResponsesStream: a cut closes the socket),
// and keeps a completed response as the socket's last.
func (k *respSocket) stream(ctx context.Context, a *answerResponse, gate <-chan struct{}) bool {
	events := a.events()
	k.last = nil
	buf := make([]byte, 0, 512)
	// ok is what an error event's write says of the socket.
	ok := false
	faults := streamFaults{
		cut: func() { _ = k.ws.NetConn().Close() },
		malformed: func(i int) bool {
			return k.ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"`+events[i].typ+`",`)) == nil
		},
		errorEvent: func(i int) {
			ok = k.ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"error","sequence_number":`+strconv.Itoa(i)+
				`,"code":"`+ErrorEventCode+`","message":"The server had an error while processing your request.","param":null}`)) == nil
		},
	}
	if !k.s.sendEvents(ctx, a.reply.Fault, len(events), 2, gate, faults, func(i int) bool {
		return k.ws.WriteMessage(websocket.TextMessage, events[i].appendData(buf[:0], i)) == nil
	}) {
		return ok
	}
	items := appendItems([]byte{'['}, a.requestBody.Get("input"))
	items = appendItems(items, gjson.GetBytes(a.appendResponse(nil, "completed", true), "output"))
	items = append(items, ']')
	k.last = &socketResponse{id: a.id, items: items}
	return true
}

// appendItems appends the items of v, an array of items or a string (one
// user message), to dst, an array being written ("[" and the items
// before), each after a comma but the first.
func appendItems(dst []byte, v gjson.Result) []byte {
	add := func(raw string) {
		if len(dst) > 1 {
			dst = append(dst, ',')
		}
		dst = append(dst, raw...)
	}
	switch {
	case v.Type == gjson.String:
		add(`{"role":"user","content":` + v.Raw + `}`)
	case v.IsArray():
		v.ForEach(func(_, it gjson.Result) bool {
			add(it.Raw)
			return true
		})
	}
	return dst
}
