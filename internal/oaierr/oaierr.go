// Package oaierr renders errors in OpenAI's shape,
// {"error":{"message","type","param","code"}}: the one place both the
// chat proxy and the conversation API write one.
package oaierr

import (
	"encoding/json"

	"github.com/valyala/fasthttp"
)

// Error is an error with the status and OpenAI-shaped body it is answered
// with.
type Error struct {
	// Status is the HTTP status.
	Status int
	// Type is OpenAI's error type: invalid_request_error,
	// authentication_error, not_found_error, server_error, ...
	Type string
	// Code and Param are rendered as null when empty.
	Code  string
	Param string
	// Message is shown to the client: it never holds a secret.
	Message string
}

func (e *Error) Error() string { return "oaierr: " + e.Message }

// Body is e in OpenAI's error shape.
func Body(e *Error) []byte {
	var body struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	body.Error.Message, body.Error.Type = e.Message, e.Type
	if e.Param != "" {
		body.Error.Param = &e.Param
	}
	if e.Code != "" {
		body.Error.Code = &e.Code
	}
	b, _ := json.Marshal(body) // cannot fail: strings only
	return b
}

// Write replaces rc's response with e, keeping a connection close already
// asked for.
func Write(rc *fasthttp.RequestCtx, e *Error) {
	closeConn := rc.Response.ConnectionClose()
	rc.Response.Reset()
	if closeConn {
		rc.SetConnectionClose()
	}
	rc.SetStatusCode(e.Status)
	rc.SetContentType("application/json")
	rc.SetBody(Body(e))
}
