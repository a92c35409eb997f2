package proxy

import (
	"bytes"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
)

// conversationID returns the conversation a request names in header, the
// tenant's conversation header: "" when the header is absent or empty. A
// header repeated with the same value names one conversation; two
// different values are refused (apierr.TwoConversationIDs) rather than resolved to
// one of them, and an invalid id is refused with apierr.BadConversationID.
func conversationID(rc *fasthttp.RequestCtx, header string) (string, error) {
	// header is as fasthttp's server normalizes names: not normalized again.
	rc.Request.Header.DisableNormalizing()
	values := rc.Request.Header.PeekAll(header)
	rc.Request.Header.EnableNormalizing()
	if len(values) == 0 {
		return "", nil
	}
	for _, v := range values[1:] {
		if !bytes.Equal(v, values[0]) {
			return "", apierr.TwoConversationIDs
		}
	}
	if len(values[0]) == 0 {
		return "", nil
	}
	id := string(values[0])
	if !history.ValidID(id) {
		return "", apierr.BadConversationID
	}
	return id, nil
}
