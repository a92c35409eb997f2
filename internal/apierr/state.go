package apierr

// The state of the Responses and Conversations APIs that Recall keeps.
var (
	// PreviousResponseNotFound is a previous_response_id that names no
	// stored response in the caller's namespace: unknown, malformed,
	// deleted, of a conversation deleted (and perhaps created again), or
	// another tenant's. The answer is the same for every case, so ids do
	// not leak.
	PreviousResponseNotFound = &Error{Status: 400, Type: "invalid_request_error", Code: "previous_response_not_found", Param: "previous_response_id",
		Message: "Previous response not found: it was never stored under this key, or it was deleted."}
	// ResponseNotFound is GET or DELETE /v1/responses/{id} of a response
	// that is not stored in the caller's namespace (the same answer for
	// every case, as PreviousResponseNotFound).
	ResponseNotFound = &Error{Status: 404, Type: "invalid_request_error", Code: "response_not_found",
		Message: "Response not found: it was never stored under this key, or it was deleted."}
	// ItemNotFound is a conversation item id that names no stored item.
	ItemNotFound = &Error{Status: 404, Type: "invalid_request_error", Code: "item_not_found", Param: "item_id",
		Message: "No item with that id in the conversation."}
	// CompactionNotFound is a compaction item of Recall's whose
	// encrypted_content names no compaction in the caller's namespace:
	// damaged, forged, of a conversation deleted (and perhaps created
	// again), or another tenant's. The answer is the same for every case,
	// as PreviousResponseNotFound's.
	CompactionNotFound = &Error{Status: 400, Type: "invalid_request_error", Code: "invalid_encrypted_content", Param: "input",
		Message: "The compaction item's encrypted_content could not be verified: it was never made under this key, or its conversation was deleted."}
	// CompactionUnreadable is a compaction item another server made (the
	// real OpenAI's) sent to an upstream that is not the Responses API:
	// only that server can read it.
	CompactionUnreadable = &Error{Status: 400, Type: "invalid_request_error", Code: "invalid_encrypted_content", Param: "input",
		Message: "The compaction item was made by another server (OpenAI's /v1/responses/compact), which alone can read it, and this tenant's upstream is not the Responses API: compact through Recall instead."}
	// NothingToCompact is a compaction with no input of a conversation
	// that holds nothing.
	NothingToCompact = &Error{Status: 400, Type: "invalid_request_error", Code: "missing_required_parameter", Param: "input",
		Message: "Missing required parameter: 'input' (the conversation named holds nothing to compact)."}
)

// ConversationConflict is a Responses request whose param (conversation,
// previous_response_id) names another conversation than the one named
// before it (by the X-Conversation-ID header or the /c/{id} path prefix,
// then conversation).
func ConversationConflict(param string) *Error {
	return &Error{Status: 400, Type: "invalid_request_error", Code: "conversation_conflict", Param: param,
		Message: "Invalid '" + param + "': it names another conversation than the one the request names already (by the conversation header, the /c/{id} path prefix or 'conversation')."}
}
