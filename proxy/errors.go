package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"net"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/rewrite"
)

// apiError is an error with the status and OpenAI-shaped body it is
// answered with.
type apiError struct {
	status  int
	typ     string // invalid_request_error, authentication_error, ...
	code    string
	param   string
	message string
}

func (e *apiError) Error() string { return "proxy: " + e.message }

// Error kinds the pipeline returns; classify maps them (and foreign errors)
// to an apiError, in one place.
var (
	errUnauthorized   = &apiError{status: 401, typ: "authentication_error", code: "invalid_api_key", message: "Incorrect API key provided."}
	errNotFound       = &apiError{status: 404, typ: "invalid_request_error", code: "unknown_url", message: "Unknown request URL."}
	errBadConvID      = &apiError{status: 400, typ: "invalid_request_error", code: "invalid_conversation_id", param: "conversation", message: "Conversation ids are 1-128 characters of [A-Za-z0-9._:@-]."}
	errBadMode        = &apiError{status: 400, typ: "invalid_request_error", code: "invalid_history_mode", message: "X-Recall-History must be one of auto, append, sync, off."}
	errBodyTooLarge   = &apiError{status: 413, typ: "invalid_request_error", code: "request_too_large", message: "Request body too large."}
	errBusy           = &apiError{status: 409, typ: "conflict_error", code: "conversation_busy", message: "Another request on this conversation did not finish in time; retry."}
	errUpstreamDown   = &apiError{status: 502, typ: "upstream_error", code: "upstream_unavailable", message: "The upstream API could not be reached."}
	errUpstreamTime   = &apiError{status: 504, typ: "upstream_error", code: "upstream_timeout", message: "The upstream API did not answer in time."}
	errUpstreamBad    = &apiError{status: 502, typ: "upstream_error", code: "upstream_bad_response", message: "The upstream API sent a response Recall could not read."}
	errCommitFailed   = &apiError{status: 500, typ: "server_error", code: "history_write_failed", message: "The answer could not be recorded; retry the request."}
	errStore          = &apiError{status: 500, typ: "server_error", code: "history_read_failed", message: "The conversation history could not be read."}
	errMethodNotAllow = &apiError{status: 405, typ: "invalid_request_error", code: "method_not_allowed", message: "Method not allowed."}
)

// classify maps any pipeline error to the apiError it is answered with.
func classify(err error) *apiError {
	var ae *apiError
	var re *rewrite.Error
	var ne net.Error
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &re):
		return &apiError{status: 400, typ: "invalid_request_error", code: re.Code, param: re.Param, message: re.Message}
	case errors.Is(err, history.ErrContextLength):
		return &apiError{status: 400, typ: "invalid_request_error", code: "context_length_exceeded", param: "messages", message: err.Error()}
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return errUpstreamTime
	default:
		return errUpstreamDown
	}
}

// writeError renders e as OpenAI does.
func writeError(rc *fasthttp.RequestCtx, e *apiError) {
	closeConn := rc.Response.ConnectionClose()
	rc.Response.Reset()
	if closeConn {
		rc.SetConnectionClose()
	}
	rc.SetStatusCode(e.status)
	rc.SetContentType("application/json")
	rc.SetBody(errorBody(e))
}

// errorBody is e in OpenAI's error shape.
func errorBody(e *apiError) []byte {
	var body struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	body.Error.Message, body.Error.Type = e.message, e.typ
	if e.param != "" {
		body.Error.Param = &e.param
	}
	if e.code != "" {
		body.Error.Code = &e.code
	}
	b, _ := json.Marshal(body) // cannot fail: strings only
	return b
}

// errNoAPIKey answers a request without a bearer key as OpenAI does, word
// for word, so that clients and SDKs that recognise the answer keep doing
// so: type invalid_request_error, code and param null. (A key no tenant
// has gets errUnauthorized.)
var errNoAPIKey = &apiError{status: 401, typ: "invalid_request_error", message: "You didn't provide an API key. " +
	"You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), " +
	"or as the password field (with blank username) if you're accessing the API from your browser and are prompted " +
	"for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys."}
