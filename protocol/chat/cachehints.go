package chat

import (
	"bytes"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/protocol/internal/body"
)

// cacheControl is the name of a cache hint's member.
const cacheControl = "cache_control"

// WithoutCacheHints returns msg, one stored message's JSON, without its
// "cache_control" members at any depth: a client's cache hints belong to
// the request that placed them (agents move them to their newest message
// on every call), and replayed as history they would mark breakpoints the
// client no longer asks for. It returns msg itself, not a copy, when msg
// holds no such member; otherwise a new slice in which every object or
// array that holds a removed member is written compactly and every other
// value keeps its exact bytes. msg must be valid JSON (as every
// stored message is); a member named by escapes ("cache\u005fcontrol") is
// kept, though [Hash] ignores it.
func WithoutCacheHints(msg []byte) []byte {
	if !bytes.Contains(msg, []byte(cacheControl)) {
		return msg
	}
	v := gjson.Parse(bytesString(msg))
	if !hasHint(v) {
		return msg // the name is only mentioned, in a string
	}
	return appendWithoutHints(make([]byte, 0, len(msg)), v)
}

// hasHint reports whether v holds a cache hint member at any depth.
func hasHint(v gjson.Result) bool {
	if !strings.Contains(v.Raw, cacheControl) || !v.IsObject() && !v.IsArray() {
		return false
	}
	found := false
	v.ForEach(func(key, value gjson.Result) bool {
		found = v.IsObject() && key.Raw == `"`+cacheControl+`"` || hasHint(value)
		return !found
	})
	return found
}

// appendWithoutHints appends v without its cache hints.
func appendWithoutHints(dst []byte, v gjson.Result) []byte {
	if !hasHint(v) {
		return append(dst, v.Raw...)
	}
	switch {
	case v.IsObject():
		dst = append(dst, '{')
		n := 0
		v.ForEach(func(key, value gjson.Result) bool {
			if key.Raw == `"`+cacheControl+`"` {
				return true
			}
			if n > 0 {
				dst = append(dst, ',')
			}
			n++
			dst = append(dst, key.Raw...)
			dst = append(dst, ':')
			dst = appendWithoutHints(dst, value)
			return true
		})
		return append(dst, '}')
	case v.IsArray():
		return body.AppendEach(dst, v, appendWithoutHints)
	}
	return append(dst, v.Raw...)
}
