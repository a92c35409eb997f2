package apierr

import (
	"encoding/json"
	"strconv"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// The Responses API's WebSocket mode: the events a socket refuses, and
// the error event that carries every failure of a turn that has not
// begun to stream.
var (
	// BadEvent is a WebSocket message that is not a JSON object of type
	// response.create (a binary message, another type, none): the one
	// event a client sends. The socket stays open.
	BadEvent = &Error{Status: 400, Type: "invalid_request_error", Code: "invalid_event", Param: "type",
		Message: "A WebSocket message must be a text message holding a JSON object of type 'response.create'."}
	// ResponseInFlight is a response.create sent while one response is
	// in flight and another already waits for it: a socket answers its
	// responses one at a time, in order, and holds one waiting.
	ResponseInFlight = &Error{Status: 409, Type: "invalid_request_error", Code: "response_already_in_flight",
		Message: "A response is in flight on this WebSocket and another waits for it: wait for a terminal event before sending the next response.create, or open another WebSocket."}
	// ConnectionLimit ends a socket that has lived its lifetime (60
	// minutes, as OpenAI's): the client opens another.
	ConnectionLimit = &Error{Status: 400, Type: "invalid_request_error", Code: "websocket_connection_limit_reached",
		Message: "Responses WebSocket connection limit reached (60 minutes). Create a new WebSocket connection to continue."}
	// ShuttingDown ends a socket whose server is shutting down.
	ShuttingDown = &Error{Status: 503, Type: "server_error", Code: "server_shutting_down",
		Message: "The server is shutting down: open a new WebSocket connection to continue."}
)

// WebSocketEvent renders e as the Responses API's WebSocket error event,
// {"type":"error","status","error":{"type","code","message","param"}}.
// The event always has a code (Open Responses requires one): e's type
// when e has none.
func WebSocketEvent(e *Error) []byte {
	var ev struct {
		Type   string `json:"type"`
		Status int    `json:"status"`
		Error  struct {
			Type    string  `json:"type"`
			Code    *string `json:"code"`
			Message string  `json:"message"`
			Param   *string `json:"param"`
		} `json:"error"`
	}
	ev.Type, ev.Status = "error", e.Status
	ev.Error.Type, ev.Error.Message = e.Type, e.Message
	if e.Param != "" {
		ev.Error.Param = &e.Param
	}
	code := e.Code
	if code == "" {
		code = e.Type
	}
	ev.Error.Code = &code
	b, _ := json.Marshal(ev) // cannot fail: strings and an int
	return b
}

// WebSocketEventOf renders an error answer, status and body as a POST
// would have it ({"error":{...}} in OpenAI's shape, Recall's or an
// upstream's), as the WebSocket error event: the body's error object
// as it is (its type as its code when it has none), or, for a body
// without one, the status's.
func WebSocketEventOf(status int, body []byte) []byte {
	e := gjson.GetBytes(body, "error")
	if !gjson.ValidBytes(body) || !e.IsObject() {
		return WebSocketEvent(&Error{Status: status, Type: "server_error", Message: "The request failed with status " + strconv.Itoa(status) + "."})
	}
	raw := []byte(e.Raw)
	if e.Get("code").Type != gjson.String {
		code := e.Get("type").Str
		if code == "" {
			code = "server_error"
		}
		raw, _ = sjson.SetBytes(raw, "code", code) // cannot fail: an object
	}
	b := append([]byte(`{"type":"error","status":`), strconv.Itoa(status)...)
	b = append(append(b, `,"error":`...), raw...)
	return append(b, '}')
}
