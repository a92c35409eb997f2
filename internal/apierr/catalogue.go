package apierr

import "strconv"

// The catalogue. Entries are shared: never modify one; wrap it
// (fmt.Errorf("%w: ...", apierr.X, err)) to add a cause for the log.

// Callers: who is asking (package auth returns these).
var (
	// NoAPIKey answers a request without a key as OpenAI does, word for
	// word, so that clients and SDKs that recognise the answer keep doing
	// so: type invalid_request_error, code and param null.
	NoAPIKey = &Error{Status: 401, Type: "invalid_request_error", Message: "You didn't provide an API key. " +
		"You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), " +
		"or as the password field (with blank username) if you're accessing the API from your browser and are prompted " +
		"for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys."}
	// InvalidAPIKey is a key no tenant has.
	InvalidAPIKey = &Error{Status: 401, Type: "authentication_error", Code: "invalid_api_key", Message: "Incorrect API key provided."}
	// NoTenant is the admin key without the tenant it acts on.
	NoTenant = &Error{Status: 400, Type: "invalid_request_error", Code: "missing_tenant", Param: "X-Recall-Tenant",
		Message: "The admin key acts on one tenant per request: name it in the X-Recall-Tenant header (a tenant id, or a pass-through namespace)."}
	// UnknownTenant is the admin key acting on a tenant that does not exist.
	UnknownTenant = &Error{Status: 400, Type: "invalid_request_error", Code: "unknown_tenant", Param: "X-Recall-Tenant",
		Message: "X-Recall-Tenant names no configured tenant (expected a tenant id, or for a pass-through tenant <id>.pt.<32 hex digits>)."}
)

// Requests: what was asked, and how.
var (
	NotFound         = &Error{Status: 404, Type: "invalid_request_error", Code: "unknown_url", Message: "Unknown request URL."}
	MethodNotAllowed = &Error{Status: 405, Type: "invalid_request_error", Code: "method_not_allowed", Message: "Method not allowed."}
	TooLarge         = &Error{Status: 413, Type: "invalid_request_error", Code: "request_too_large", Message: "Request body too large."}
	// BadBody is a request body that could not be read to its end.
	BadBody = &Error{Status: 400, Type: "invalid_request_error", Message: "Could not read the request body."}
	// MalformedHTTP is a request fasthttp could not parse.
	MalformedHTTP = &Error{Status: 400, Type: "invalid_request_error", Message: "Malformed HTTP request."}
	// BadFraming is a request that carries both Transfer-Encoding and
	// Content-Length. A front proxy may frame it by one while Recall
	// frames it by the other, and serve the bytes after the body as a
	// request of their own (request smuggling): RFC 9112 section 6.3 lets
	// a server reject it, and says the connection must close either way.
	BadFraming = &Error{Status: 400, Type: "invalid_request_error", Code: "invalid_framing",
		Message: "A request must not carry both Transfer-Encoding and Content-Length."}
	// WebSocket is a WebSocket upgrade Recall does not serve: it is
	// refused with 426, which clients that try WebSocket first (Codex on
	// /v1/responses) take as "fall back to HTTP" at once, where any other
	// status makes them retry for seconds (DESIGN.md section 15); never
	// forwarded as a plain request.
	WebSocket = &Error{Status: 426, Type: "invalid_request_error", Code: "websocket_not_supported",
		Message: "WebSocket upgrades are not supported here: send the request over HTTP."}
	// BadPath is a path that cannot be forwarded as sent.
	BadPath = &Error{Status: 400, Type: "invalid_request_error", Code: "invalid_path",
		Message: "The request path cannot be forwarded: it must be a valid URI path, without dot segments, escaped control characters or a fragment."}
	BadJSON = &Error{Status: 400, Type: "invalid_request_error", Code: "invalid_json",
		Message: "We could not parse the JSON body of your request. The API expects a JSON payload, but what was sent was not valid JSON."}
	// ImportMediaType is an import whose body is not JSON Lines.
	ImportMediaType = &Error{Status: 415, Type: "invalid_request_error", Code: "unsupported_media_type",
		Message: "Import takes application/x-ndjson (JSON Lines, as export writes it)."}
	BadHistoryMode = &Error{Status: 400, Type: "invalid_request_error", Code: "invalid_history_mode",
		Message: "X-Recall-History must be one of auto, append, sync, off."}
	// NothingToSend is a request whose messages, once unanswered tool
	// calls are repaired away, leave nothing to send.
	NothingToSend = &Error{Status: 400, Type: "invalid_request_error", Code: "invalid_value", Param: "messages",
		Message: "Invalid 'messages': after removing tool calls that have no results, no message is left to send."}
)

// Conversations.
var (
	BadConversationID = &Error{Status: 400, Type: "invalid_request_error", Code: "invalid_conversation_id", Param: "conversation",
		Message: "Conversation ids are 1-128 characters of [A-Za-z0-9._:@-], other than \".\" and \"..\"."}
	// TwoConversationIDs is a request that names two different
	// conversations (path prefix and header, or the header twice).
	TwoConversationIDs = &Error{Status: 400, Type: "invalid_request_error", Code: "invalid_conversation_id", Param: "conversation",
		Message: "The request names more than one conversation."}
	// ConversationNotFound is a conversation that does not exist in the
	// caller's namespace: never written, deleted, or another tenant's.
	// The answer is the same for all three, so ids do not leak.
	ConversationNotFound = &Error{Status: 404, Type: "invalid_request_error", Code: "conversation_not_found", Param: "conversation",
		Message: "No conversation with that id."}
	// ExchangeNotFound is an exchange record the conversation does not
	// keep (never made, or older than the last 200).
	ExchangeNotFound = &Error{Status: 404, Type: "invalid_request_error", Code: "exchange_not_found", Param: "exchange",
		Message: "No exchange record with that id in this conversation."}
	Busy = &Error{Status: 409, Type: "conflict_error", Code: "conversation_busy",
		Message: "Another request on this conversation did not finish in time; retry."}
	Changed = &Error{Status: 409, Type: "conflict_error", Code: "conversation_changed",
		Message: "The conversation changed while the call was applied; retry."}
	NotEmpty = &Error{Status: 409, Type: "conflict_error", Code: "conversation_not_empty", Param: "conversation",
		Message: "Import needs an empty conversation: delete this one first, or import under another id."}
	SummariesDisabled = &Error{Status: 409, Type: "invalid_request_error", Code: "summaries_disabled",
		Message: "Summaries are disabled for this tenant (summary.enabled: false)."}
	NoSummaryModel = &Error{Status: 409, Type: "invalid_request_error", Code: "no_summary_model",
		Message: "No model is known to summarise this conversation with: set summary.model in the tenant's configuration, or send a chat request first."}
	// SummariesNotServed is end or summarize on a server built without a
	// summaries manager.
	SummariesNotServed = &Error{Status: 501, Type: "server_error", Code: "not_implemented", Message: "Summaries are not enabled on this server."}
)

// The upstream: only errors that came from talking to it.
var (
	UpstreamUnavailable = &Error{Status: 502, Type: "upstream_error", Code: "upstream_unavailable", Message: "The upstream API could not be reached."}
	UpstreamTimeout     = &Error{Status: 504, Type: "upstream_error", Code: "upstream_timeout", Message: "The upstream API did not answer in time."}
	UpstreamBadResponse = &Error{Status: 502, Type: "upstream_error", Code: "upstream_bad_response",
		Message: "The upstream API sent a response Recall could not read."}
	UpstreamTooLarge = &Error{Status: 502, Type: "upstream_error", Code: "upstream_response_too_large",
		Message: "The upstream API's answer is larger than Recall accepts; nothing was recorded."}
	UpstreamStreamCut = &Error{Status: 502, Type: "upstream_error", Code: "upstream_stream_incomplete",
		Message: "The upstream stream ended before the answer was complete; nothing was recorded, retry the request."}
)

// Recall itself.
var (
	CommitFailed     = &Error{Status: 500, Type: "server_error", Code: "history_write_failed", Message: "The answer could not be recorded; retry the request."}
	StoreReadFailed  = &Error{Status: 500, Type: "server_error", Code: "history_read_failed", Message: "The conversation history could not be read."}
	StoreUnavailable = &Error{Status: 503, Type: "server_error", Code: "store_unavailable",
		Message: "Recall's conversation store is unavailable; nothing was recorded, retry later."}
	NoSpace = &Error{Status: 507, Type: "server_error", Code: "insufficient_storage",
		Message: "Recall's storage is full: the change cannot be recorded; retry later."}
	// Timeout is a conversation API call whose store work did not finish
	// in time.
	Timeout = &Error{Status: 504, Type: "server_error", Code: "timeout", Message: "The call did not finish in time."}
	// HeavyBusy refuses a heavy API call (search, export, import) over
	// its tenant's bound, or one that found no free slot in time.
	HeavyBusy = &Error{Status: 429, Type: "rate_limit_error", Code: "rate_limit_exceeded",
		Message: "Too many searches, exports or imports in flight; retry after the time given in Retry-After."}
	// Internal is any failure not listed: a 500 that says nothing of the
	// cause (the log has it).
	Internal = &Error{Status: 500, Type: "server_error", Code: "internal_error", Message: "Recall failed to serve the request."}
)

// InvalidValue is a request field with a value Recall does not take.
func InvalidValue(param, message string) *Error {
	return &Error{Status: 400, Type: "invalid_request_error", Code: "invalid_value", Param: param, Message: message}
}

// Invalid is a request Recall refuses with OpenAI's code and param for
// it (a chat.Error's).
func Invalid(code, param, message string) *Error {
	return &Error{Status: 400, Type: "invalid_request_error", Code: code, Param: param, Message: message}
}

// UnsupportedFile is a file the request carries that its upstream's API
// cannot take (an OpenAI file id sent to Anthropic, a media type a
// provider's documents do not take): refused, never left out.
func UnsupportedFile(message string) *Error {
	return &Error{Status: 400, Type: "invalid_request_error", Code: "unsupported_file", Message: message}
}

// OrphanToolResult is a tool message that answers no call, in OpenAI's
// words; i is its index in the request's messages.
func OrphanToolResult(i int) *Error {
	return &Error{Status: 400, Type: "invalid_request_error", Param: "messages.[" + strconv.Itoa(i) + "].role",
		Message: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."}
}

// ContextLength is a request that cannot fit the model's window, message
// saying by how much.
func ContextLength(message string) *Error {
	return &Error{Status: 400, Type: "invalid_request_error", Code: "context_length_exceeded", Param: "messages", Message: message}
}
