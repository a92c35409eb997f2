package proxy

import (
	"bytes"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/history"
)

var errTwoConvIDs = &apiError{status: 400, typ: "invalid_request_error", code: "invalid_conversation_id", param: "conversation",
	message: "The request names more than one conversation."}

// conversationID returns the conversation a request names in header, the
// tenant's conversation header: "" when the header is absent or empty. A
// header repeated with the same value names one conversation; two
// different values are refused (errTwoConvIDs) rather than resolved to
// one of them, and an invalid id is refused with errBadConvID.
func conversationID(rc *fasthttp.RequestCtx, header string) (string, error) {
	values := rc.Request.Header.PeekAll(header)
	if len(values) == 0 {
		return "", nil
	}
	for _, v := range values[1:] {
		if !bytes.Equal(v, values[0]) {
			return "", errTwoConvIDs
		}
	}
	if len(values[0]) == 0 {
		return "", nil
	}
	id := string(values[0])
	if !history.ValidID(id) {
		return "", errBadConvID
	}
	return id, nil
}
