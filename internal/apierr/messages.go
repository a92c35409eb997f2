package apierr

// Errors of Anthropic's Messages API requests, in the words the API
// itself uses ("max_tokens: Field required"), so that clients built
// against it read them as they read Anthropic's.

// MissingField is a required member of a request body left out; param is
// its path ("max_tokens", "messages.0.content").
func MissingField(param string) *Error {
	return &Error{Status: 400, Type: "invalid_request_error", Code: "missing_required_parameter", Param: param,
		Message: param + ": Field required"}
}

// InvalidField is a member of a request body with a value the API does
// not take; message says what it should be ("Input should be a valid
// integer").
func InvalidField(param, message string) *Error {
	return &Error{Status: 400, Type: "invalid_request_error", Code: "invalid_value", Param: param,
		Message: param + ": " + message}
}
