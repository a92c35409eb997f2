package upstreamtest

import (
	"encoding/json"
	"net/http"
	"time"
)

// Recorded is a Received as JSON: what a fake behind a control API
// (bench/fakeupstream's GET /_fake/requests) reports of a request, and
// what a test reading that API decodes.
type Recorded struct {
	Method string      `json:"method"`
	Path   string      `json:"path"`
	Query  string      `json:"query,omitempty"`
	Header http.Header `json:"header"`
	// Body is the request's body when it is JSON, else the body as a JSON
	// string.
	Body json.RawMessage `json:"body"`
	// Rejected is the message of the error the fake answered 400 with.
	Rejected string `json:"rejected,omitempty"`
	// WebSocket: a response.create message on a WebSocket of
	// /v1/responses (method, path and header are the upgrade's).
	WebSocket bool `json:"websocket,omitempty"`
	// At is when the request (or the message) arrived.
	At time.Time `json:"at"`
}

// Record returns q as a Recorded.
func (q Received) Record() Recorded {
	r := Recorded{Method: q.Method, Path: q.Path, Query: q.Query, Header: q.Header, WebSocket: q.WebSocket, At: q.At}
	if json.Valid(q.Body) {
		r.Body = json.RawMessage(q.Body)
	} else {
		r.Body, _ = json.Marshal(string(q.Body))
	}
	if q.Rejected != nil {
		r.Rejected = q.Rejected.Message
	}
	return r
}
