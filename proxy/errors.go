package proxy

import (
	"context"
	"errors"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/oaierr"
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
	errUnauthorized     = &apiError{status: 401, typ: "authentication_error", code: "invalid_api_key", message: "Incorrect API key provided."}
	errNotFound         = &apiError{status: 404, typ: "invalid_request_error", code: "unknown_url", message: "Unknown request URL."}
	errBadConvID        = &apiError{status: 400, typ: "invalid_request_error", code: "invalid_conversation_id", param: "conversation", message: "Conversation ids are 1-128 characters of [A-Za-z0-9._:@-], other than \".\" and \"..\"."}
	errBadMode          = &apiError{status: 400, typ: "invalid_request_error", code: "invalid_history_mode", message: "X-Recall-History must be one of auto, append, sync, off."}
	errBodyTooLarge     = &apiError{status: 413, typ: "invalid_request_error", code: "request_too_large", message: "Request body too large."}
	errBusy             = &apiError{status: 409, typ: "conflict_error", code: "conversation_busy", message: "Another request on this conversation did not finish in time; retry."}
	errUpstreamDown     = &apiError{status: 502, typ: "upstream_error", code: "upstream_unavailable", message: "The upstream API could not be reached."}
	errUpstreamTime     = &apiError{status: 504, typ: "upstream_error", code: "upstream_timeout", message: "The upstream API did not answer in time."}
	errUpstreamBad      = &apiError{status: 502, typ: "upstream_error", code: "upstream_bad_response", message: "The upstream API sent a response Recall could not read."}
	errUpstreamTooLarge = &apiError{status: 502, typ: "upstream_error", code: "upstream_response_too_large",
		message: "The upstream API's answer is larger than Recall accepts; nothing was recorded."}
	errCommitFailed   = &apiError{status: 500, typ: "server_error", code: "history_write_failed", message: "The answer could not be recorded; retry the request."}
	errStore          = &apiError{status: 500, typ: "server_error", code: "history_read_failed", message: "The conversation history could not be read."}
	errMethodNotAllow = &apiError{status: 405, typ: "invalid_request_error", code: "method_not_allowed", message: "Method not allowed."}
	errUnavailable    = &apiError{status: 503, typ: "server_error", code: "store_unavailable", message: "Recall's conversation store is unavailable; nothing was recorded, retry later."}
	errNoSpace        = &apiError{status: 507, typ: "server_error", code: "insufficient_storage", message: "Recall's storage is full: the conversation cannot be recorded; retry later."}
	errStreamCut      = &apiError{status: 502, typ: "upstream_error", code: "upstream_stream_incomplete", message: "The upstream stream ended before the answer was complete; nothing was recorded, retry the request."}
	errInternal       = &apiError{status: 500, typ: "server_error", code: "internal_error", message: "Recall failed to serve the request."}
)

// errNothingToSend is a request whose messages, once unanswered tool calls
// are repaired away, leave nothing to send.
var errNothingToSend = &apiError{status: 400, typ: "invalid_request_error", code: "invalid_value", param: "messages",
	message: "Invalid 'messages': after removing tool calls that have no results, no message is left to send."}

// errOrphanResult is a tool message of the current turn that answers no
// call, in OpenAI's words; i is its index in the request's messages.
func errOrphanResult(i int) *apiError {
	return &apiError{status: 400, typ: "invalid_request_error", param: "messages.[" + strconv.Itoa(i) + "].role",
		message: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."}
}

// errCommitTimeout is a commit that did not return within the commit
// timeout; errClientLeft an answer whose client left before its commit.
var (
	errCommitTimeout = errors.New("proxy: commit timed out")
	errClientLeft    = errors.New("proxy: client left before the answer was recorded")
	errInterrupted   = errors.New("proxy: upstream stream interrupted")
)

// upstreamError marks an error that came from talking to the upstream:
// sending the request, or reading its answer. Only such errors are
// answered as the upstream's fault (502, 504).
type upstreamError struct{ err error }

func (e *upstreamError) Error() string { return e.err.Error() }
func (e *upstreamError) Unwrap() error { return e.err }

// upstreamErr marks err as the upstream's (nil stays nil). Wrap what
// client.Do and reads of the upstream's answer return, where they return
// it.
func upstreamErr(err error) error {
	if err == nil {
		return nil
	}
	return &upstreamError{err}
}

// classify maps any pipeline error to the apiError it is answered with.
// An error is the upstream's only if it is marked so (upstreamErr): a
// timeout is a 504, anything else a 502. Every other unrecognised error is
// a local failure, a 500 whose message says nothing of the cause (the log
// has it).
func classify(err error) *apiError {
	var ae *apiError
	var re *rewrite.Error
	var cle *history.ContextLengthError
	var ue *upstreamError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &re):
		return &apiError{status: 400, typ: "invalid_request_error", code: re.Code, param: re.Param, message: re.Message}
	case errors.As(err, &cle):
		return &apiError{status: 400, typ: "invalid_request_error", code: "context_length_exceeded", param: "messages", message: cle.Message()}
	case errors.As(err, &ue):
		var te interface{ Timeout() bool } // net.Error's, and fasthttp.ErrTimeout's
		if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &te) && te.Timeout() {
			return errUpstreamTime
		}
		return errUpstreamDown
	default:
		return errInternal
	}
}

// writeError renders e as OpenAI does.
func writeError(rc *fasthttp.RequestCtx, e *apiError) { oaierr.Write(rc, e.oai()) }

// errorBody is e in OpenAI's error shape.
func errorBody(e *apiError) []byte { return oaierr.Body(e.oai()) }

// oai is e as the shared renderer takes it.
func (e *apiError) oai() *oaierr.Error {
	return &oaierr.Error{Status: e.status, Type: e.typ, Code: e.code, Param: e.param, Message: e.message}
}

// errNoAPIKey answers a request without a bearer key as OpenAI does, word
// for word, so that clients and SDKs that recognise the answer keep doing
// so: type invalid_request_error, code and param null. (A key no tenant
// has gets errUnauthorized.)
var errNoAPIKey = &apiError{status: 401, typ: "invalid_request_error", message: "You didn't provide an API key. " +
	"You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), " +
	"or as the password field (with blank username) if you're accessing the API from your browser and are prompted " +
	"for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys."}
