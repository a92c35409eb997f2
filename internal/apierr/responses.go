package apierr

// The Responses API's requests that Recall refuses.
var (
	// Background is a Responses request with background: true. Recall
	// answers while the client waits, and keeps no queue of responses to
	// poll.
	Background = &Error{Status: 400, Type: "invalid_request_error", Code: "unsupported_parameter", Param: "background",
		Message: "Background responses are not supported by Recall: send the request without 'background' (or with background: false) and wait for the answer, or stream it."}
)

// ItemReference refuses the input item of type item_reference at param
// ("input[3]"): Recall sends the curated history itself, and a reference
// to an item the upstream never stored cannot be resolved there.
func ItemReference(param string) *Error {
	return &Error{Status: 400, Type: "invalid_request_error", Code: "unsupported_value", Param: param,
		Message: "Invalid '" + param + "': input items of type 'item_reference' are not supported by Recall; send the item itself (Recall already sends the conversation's stored items)."}
}
