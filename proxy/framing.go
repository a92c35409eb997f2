package proxy

import (
	"bytes"

	"github.com/valyala/fasthttp"
)

var (
	rawContentLength    = []byte("content-length")
	rawTransferEncoding = []byte("transfer-encoding")
	headerUpgrade       = []byte(fasthttp.HeaderUpgrade) // as fasthttp normalizes it
	tokenWebSocket      = []byte("websocket")
)

// badFraming reports whether a request carries both Transfer-Encoding and
// Content-Length. fasthttp merges the two into ContentLength (-1 when
// chunked, the Content-Length dropped; identity ignored), so the check
// reads the raw header lines, and only for a request that has a body by
// either. It does not allocate.
func badFraming(h *fasthttp.RequestHeader) bool {
	var other []byte
	switch n := h.ContentLength(); {
	case n == -1: // chunked: was there a Content-Length too?
		other = rawContentLength
	case n >= 0: // by length: was there a Transfer-Encoding too?
		other = rawTransferEncoding
	default:
		return false
	}
	return hasRawHeader(h.RawHeaders(), other)
}

// hasRawHeader reports whether raw header lines hold one named name
// (lowercase), whatever its case.
func hasRawHeader(raw, name []byte) bool {
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		if len(line) > len(name) && line[len(name)] == ':' && bytes.EqualFold(line[:len(name)], name) {
			return true
		}
	}
	return false
}

// isWebSocket reports whether a request asks to upgrade to WebSocket.
func isWebSocket(h *fasthttp.RequestHeader) bool {
	v := h.PeekCanonical(headerUpgrade)
	return len(v) > 0 && containsFold(v, tokenWebSocket)
}

// containsFold reports whether s holds sub, whatever its case.
func containsFold(s, sub []byte) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if bytes.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}
