package api

import (
	"context"
	"errors"
	"strconv"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/oaierr"
	"github.com/recallproxy/recall/rewrite"
)

// Errors the handlers return; classify maps them (and foreign errors) to
// the answer, in one place.
var (
	errNotFound = &oaierr.Error{Status: 404, Type: "invalid_request_error", Code: "unknown_url", Message: "Unknown request URL."}
	errMethod   = &oaierr.Error{Status: 405, Type: "invalid_request_error", Code: "method_not_allowed", Message: "Method not allowed."}
	errBadID    = &oaierr.Error{Status: 400, Type: "invalid_request_error", Code: "invalid_conversation_id", Param: "conversation",
		Message: "Conversation ids are 1-128 characters of [A-Za-z0-9._:@-], other than \".\" and \"..\"."}
	// errUnknown is a conversation that does not exist in the caller's
	// namespace: never written, deleted, or another tenant's. The answer
	// is the same for all three, so ids do not leak.
	errUnknown = &oaierr.Error{Status: 404, Type: "invalid_request_error", Code: "conversation_not_found", Param: "conversation",
		Message: "No conversation with that id."}
	errTooLarge   = &oaierr.Error{Status: 413, Type: "invalid_request_error", Code: "request_too_large", Message: "Request body too large."}
	errBusy       = &oaierr.Error{Status: 409, Type: "conflict_error", Code: "conversation_busy", Message: "Another request on this conversation did not finish in time; retry."}
	errConflict   = &oaierr.Error{Status: 409, Type: "conflict_error", Code: "conversation_changed", Message: "The conversation changed while the call was applied; retry."}
	errNotEmpty   = &oaierr.Error{Status: 409, Type: "conflict_error", Code: "conversation_not_empty", Param: "conversation", Message: "Import needs an empty conversation: delete this one first, or import under another id."}
	errNoSpace    = &oaierr.Error{Status: 507, Type: "server_error", Code: "insufficient_storage", Message: "Recall's storage is full: the change cannot be recorded; retry later."}
	errTimeout    = &oaierr.Error{Status: 504, Type: "server_error", Code: "timeout", Message: "The call did not finish in time."}
	errInternal   = &oaierr.Error{Status: 500, Type: "server_error", Code: "internal_error", Message: "Recall failed to serve the request."}
	errNoSummary  = &oaierr.Error{Status: 501, Type: "server_error", Code: "not_implemented", Message: "Summaries are not enabled on this server."}
	errNoContext  = &oaierr.Error{Status: 501, Type: "server_error", Code: "not_implemented", Message: "The context call is not enabled on this server."}
	errBadJSON    = &oaierr.Error{Status: 400, Type: "invalid_request_error", Code: "invalid_json", Message: "We could not parse the JSON body of your request. The API expects a JSON payload, but what was sent was not valid JSON."}
	errMediaType  = &oaierr.Error{Status: 415, Type: "invalid_request_error", Code: "unsupported_media_type", Message: "Import takes application/x-ndjson (JSON Lines, as export writes it)."}
	errBadRequest = func(param, message string) *oaierr.Error {
		return &oaierr.Error{Status: 400, Type: "invalid_request_error", Code: "invalid_value", Param: param, Message: message}
	}
)

// classify maps any handler error to its answer. Unrecognised errors are
// local failures: a 500 that says nothing of the cause (the log has it).
func (c *call) classify(err error) *oaierr.Error {
	var oe *oaierr.Error
	var re *rewrite.Error
	var orphan *history.OrphanResultError
	switch {
	case errors.As(err, &oe):
		return oe
	case errors.As(err, &re):
		return &oaierr.Error{Status: 400, Type: "invalid_request_error", Code: re.Code, Param: re.Param, Message: re.Message}
	case errors.As(err, &orphan):
		return &oaierr.Error{Status: 400, Type: "invalid_request_error", Param: "messages.[" + strconv.Itoa(orphan.Index) + "].role",
			Message: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."}
	case errors.Is(err, history.ErrConflict):
		return errConflict
	case errors.Is(err, history.ErrNoSpace):
		return errNoSpace
	case errors.Is(err, context.DeadlineExceeded):
		return errTimeout
	}
	c.h.log.Error("api call failed", "route", c.route, "tenant", c.key.Tenant, "conversation", c.key.Conversation, "error", err)
	return errInternal
}
