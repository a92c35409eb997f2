package proxy

import (
	"bytes"
	"net/url"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
)

// Requests are routed, and pass-through paths forwarded, on the path as
// the client sent it: never decoded, never normalised. fasthttp's
// rc.Path() is both, so a proxy reading it forwards %3F as the start of a
// query and %23 as a fragment, and routes /c/../v1/chat/completions as if
// no conversation had been named.

// routePath reads a raw request path (rc.URI().PathOriginal()). It
// returns the conversation named by a /c/{conversation}/ prefix, decoded
// ("" when there is no prefix), and the raw path below the prefix; or the
// error to refuse the request with: apierr.NotFound for a prefix with no path
// after it, apierr.BadConversationID for a prefix id that is not a valid id once
// decoded (so "." and "..", escaped or not), apierr.BadPath for a path that
// cannot be forwarded as sent (see forwardable).
func routePath(raw []byte) (conv string, path []byte, e *apierr.Error) {
	path = raw
	if rest, ok := bytes.CutPrefix(raw, prefixConv); ok {
		i := bytes.IndexByte(rest, '/')
		if i < 0 {
			return "", nil, apierr.NotFound
		}
		// An id may arrive escaped (encodeURIComponent escapes ':' and
		// '@'); a malformed escape stays as it is, and ValidID refuses it.
		conv = string(rest[:i])
		if dec, err := url.PathUnescape(conv); err == nil {
			conv = dec
		}
		if !history.ValidID(conv) {
			return "", nil, apierr.BadConversationID
		}
		path = rest[i:]
	}
	if !bytes.Equal(path, pathChat) && !forwardable(path) { // the one most take is
		return "", nil, apierr.BadPath
	}
	return conv, path, nil
}

// forwardable reports whether a raw path can be sent upstream byte for
// byte and mean there what it meant here: only RFC 3986 path characters
// and well-formed escapes, no escape of a control character (an upstream
// would decode it into its routing or logs), and no dot segment, plain or
// escaped (an upstream would resolve it, possibly above the tenant's base
// URL). It does not allocate.
func forwardable(p []byte) bool {
	seg, dots := 0, 0 // the current segment's decoded length, and its dots
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '/':
			if seg == dots && (seg == 1 || seg == 2) {
				return false
			}
			seg, dots = 0, 0
			continue
		case c == '%':
			if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
				return false
			}
			c = unhex(p[i+1])<<4 | unhex(p[i+2])
			i += 2
			if c < 0x20 || c == 0x7f {
				return false
			}
		case !isPathChar(c):
			return false
		}
		seg++
		if c == '.' {
			dots++
		}
	}
	return !(seg == dots && (seg == 1 || seg == 2))
}

// isPathChar reports whether c may appear unescaped in a path segment:
// RFC 3986's pchar without pct-encoded, that is unreserved, sub-delims,
// ':' and '@'.
func isPathChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '-', '.', '_', '~', '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=', ':', '@':
		return true
	}
	return false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	default:
		return c - 'a' + 10
	}
}
