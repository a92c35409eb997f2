// Package apierr is the one catalogue of the errors Recall answers with:
// each is declared once here, with its status, and rendered in the shape
// of the protocol the client speaks (OpenAI's, Anthropic's). The chat
// proxy and the conversation API both answer from it; each surface keeps
// one function that maps its errors to an entry (proxy's classify, the
// API's classify).
package apierr

import (
	"encoding/json"

	"github.com/valyala/fasthttp"
)

// Error is an error with the status it is answered with and what the
// client is told.
type Error struct {
	// Status is the HTTP status.
	Status int
	// Type is OpenAI's error type: invalid_request_error,
	// authentication_error, conflict_error, rate_limit_error,
	// upstream_error, server_error. Anthropic's type is derived from
	// Status (see Anthropic).
	Type string
	// Code and Param are rendered as null when empty.
	Code  string
	Param string
	// Message is shown to the client: it never holds a secret.
	Message string
	// RetryAfter, if set, is sent as the Retry-After header (an
	// upstream's rate limit relayed in another protocol's shape).
	RetryAfter string
}

func (e *Error) Error() string { return "apierr: " + e.Message }

// OpenAIBody is OpenAI's error body,
// {"error":{"message","type","param","code"}}, as OpenAI renders it and
// a client decodes it; Param and Code are null when nil.
type OpenAIBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// OpenAI renders e in OpenAI's shape (OpenAIBody).
func OpenAI(e *Error) []byte {
	var body OpenAIBody
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

// Anthropic renders e in Anthropic's shape,
// {"type":"error","error":{"type","message"}}, with the type Anthropic
// uses for e's status (AnthropicType).
func Anthropic(e *Error) []byte {
	var body struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	body.Type = "error"
	body.Error.Type, body.Error.Message = AnthropicType(e.Status), e.Message
	b, _ := json.Marshal(body) // cannot fail: strings only
	return b
}

// AnthropicType is the error type Anthropic's Messages API answers a
// status with: its documented types, and api_error for a 5xx it has no
// type of its own for.
func AnthropicType(status int) string {
	switch {
	case status == 401:
		return "authentication_error"
	case status == 403:
		return "permission_error"
	case status == 404:
		return "not_found_error"
	case status == 413:
		return "request_too_large"
	case status == 429:
		return "rate_limit_error"
	case status == 503 || status == 529:
		return "overloaded_error"
	case status >= 500:
		return "api_error"
	}
	return "invalid_request_error"
}

// Write replaces rc's response with e rendered by render (OpenAI or
// Anthropic), keeping a connection close already asked for.
func Write(rc *fasthttp.RequestCtx, e *Error, render func(*Error) []byte) {
	closeConn := rc.Response.ConnectionClose()
	rc.Response.Reset()
	if closeConn {
		rc.SetConnectionClose()
	}
	rc.SetStatusCode(e.Status)
	rc.SetContentType("application/json")
	if e.RetryAfter != "" {
		rc.Response.Header.Set(fasthttp.HeaderRetryAfter, e.RetryAfter)
	}
	rc.SetBody(render(e))
}
