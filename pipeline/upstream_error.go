package pipeline

import (
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/apierr"
)

// UpstreamStatus is an upstream's error answer as the catalogue entry the
// client gets, with the upstream's own message when it gave one.
func UpstreamStatus(status int, body []byte) *apierr.Error {
	msg := gjson.GetBytes(body, "error.message").String()
	if msg == "" {
		msg = "The upstream answered " + strconv.Itoa(status) + "."
	}
	code := ""
	switch {
	case status == 401 || status == 403:
		code = "invalid_api_key"
	case status == 429:
		code = "rate_limit_exceeded"
	}
	return &apierr.Error{Status: status, Type: apierrType(status), Code: code, Message: msg}
}

// apierrType is OpenAI's error type for a status.
func apierrType(status int) string {
	switch {
	case status == 401 || status == 403:
		return "authentication_error"
	case status == 429:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}
