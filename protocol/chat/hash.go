package chat

import (
	"encoding/binary"
	"math"
	"strings"
	"sync"

	"github.com/cespare/xxhash/v2"
	"github.com/tidwall/gjson"
	"github.com/tidwall/pretty"
)

// Tags of the canonical form. Every field is written as a tag followed by
// a self-delimiting value, so that distinct messages cannot collide by
// concatenation.
const (
	tagRole       = 'R'
	tagText       = 'C' // content as text: a string, or a single text part
	tagParts      = 'P' // content as anything else
	tagName       = 'N'
	tagRefusal    = 'F'
	tagToolCalls  = 'T'
	tagToolCallID = 'I'

	tagCallID   = 'i'
	tagCallName = 'm'
	tagCallArgs = 'g'
	tagCallEnd  = 'e'
	tagCallOdd  = 'u' // a "function" that is not an object

	valString = 's'
	valNumber = 'n'
	valTrue   = 't'
	valFalse  = 'f'
	valEmpty  = 'z' // null, "", [] or {} where position matters (arrays)
	valArray  = 'a'
	valObject = 'o'
	valEnd    = '.'
)

var hashBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// Hash returns the canonical hash of a message's JSON: equal for messages
// that differ only in key order, whitespace, string escapes, null, empty
// or absent fields, cache hints, or the item ids a client mints per
// request.
//
// It compares role, content (a string equals a content array holding a
// single text part with the same text, and "" equals null equals absent),
// content parts (type and all their fields, canonically), name, refusal,
// tool_calls (each one's id, function.name, and function.arguments with
// insignificant JSON whitespace removed) and tool_call_id, and ignores every
// other field, so that a message re-serialised by an SDK (which adds
// "type":"function", "refusal":null, "annotations":[] and the like) hashes
// like the original. A message's own "id" is one of the fields ignored;
// so are a content part's "id" and every "cache_control" member at any
// depth: agents mint ids per request and move their cache hints to the
// newest message on every call, and a message must still match its stored
// copy. Numbers compare by their float64 value. When a key appears twice
// the last one counts, as with encoding/json.
//
// Hash does not validate raw; invalid JSON hashes to something stable but
// unspecified. JSON nested deeper than [MaxDepth], which no request that
// passed [ParseRequest] holds, hashes by its raw bytes: canonicalising it
// recurses once per level and rescans each level's contents.
func Hash(raw []byte) uint64 {
	if CheckDepth(raw) != nil {
		return xxhash.Sum64(raw)
	}
	bp := hashBufs.Get().(*[]byte)
	buf := appendCanonical((*bp)[:0], gjson.Parse(bytesString(raw)))
	h := xxhash.Sum64(buf)
	if cap(buf) <= 64<<10 {
		*bp = buf
		hashBufs.Put(bp)
	}
	return h
}

// appendCanonical appends the canonical form of message m to buf.
func appendCanonical(buf []byte, m gjson.Result) []byte {
	if !m.IsObject() {
		return appendValue(append(buf, 'X'), m)
	}
	var role, content, name, refusal, toolCalls, toolCallID gjson.Result
	m.ForEach(func(key, value gjson.Result) bool {
		switch key.Str {
		case "role":
			role = value
		case "content":
			content = value
		case "name":
			name = value
		case "refusal":
			refusal = value
		case "tool_calls":
			toolCalls = value
		case "tool_call_id":
			toolCallID = value
		}
		return true
	})
	buf = appendField(buf, tagRole, role)
	if text, ok := contentText(buf, content); ok {
		buf = appendField(buf, tagText, text)
	} else {
		buf = appendParts(buf, content)
	}
	buf = appendField(buf, tagName, name)
	buf = appendField(buf, tagRefusal, refusal)
	if toolCalls.IsArray() {
		buf = appendToolCalls(buf, toolCalls)
	} else {
		buf = appendField(buf, tagToolCalls, toolCalls)
	}
	return appendField(buf, tagToolCallID, toolCallID)
}

// contentText returns content's text (a string value, or null) when
// content is a string, null or absent, or an array of at most one part that
// holds nothing but "type":"text" and a string "text" (other members being
// empty). It uses the spare capacity of buf as scratch space and leaves
// buf's bytes as they were.
func contentText(buf []byte, c gjson.Result) (gjson.Result, bool) {
	switch {
	case !c.Exists(), c.Type == gjson.Null, c.Type == gjson.String:
		return c, true
	case !c.IsArray():
		return gjson.Result{}, false
	}
	var (
		text  gjson.Result
		parts int
		plain = true
	)
	c.ForEach(func(_, part gjson.Result) bool {
		parts++
		if parts > 1 || !part.IsObject() {
			plain = false
			return false
		}
		var typ, txt gjson.Result
		part.ForEach(func(key, value gjson.Result) bool {
			switch key.Str {
			case "type":
				typ = value
			case "text":
				txt = value
			default:
				if !ignoredKey(key.Str, true) && !isEmpty(buf, value) {
					plain = false
				}
			}
			return plain
		})
		if !plain || typ.Type != gjson.String || typ.Str != "text" || (txt.Type != gjson.String && !isEmpty(buf, txt)) {
			plain = false
			return false
		}
		text = txt
		return true
	})
	return text, plain
}

// ignoredKey reports whether an object member named key is left out of
// the canonical form: a cache hint anywhere, and the id a client mints per
// request on a content part (part).
func ignoredKey(key string, part bool) bool {
	return key == "cache_control" || part && key == "id"
}

// appendParts appends the canonical form of content that is not plain
// text: for an array of parts, each part as an object without its
// ignored members (see [ignoredKey]); anything else as a value. Content
// without ignored members canonicalises as appendField(buf, tagParts, c)
// would, so stored hashes stay valid.
func appendParts(buf []byte, c gjson.Result) []byte {
	if !c.IsArray() {
		return appendField(buf, tagParts, c)
	}
	mark := len(buf)
	buf = append(buf, tagParts, valArray)
	n := 0
	c.ForEach(func(_, part gjson.Result) bool {
		n++
		if !part.IsObject() {
			buf = appendElem(buf, part)
			return true
		}
		at := len(buf)
		if buf = appendObject(buf, part, true); len(buf) == at {
			buf = append(buf, valEmpty)
		}
		return true
	})
	if n == 0 {
		return buf[:mark]
	}
	return append(buf, valEnd)
}

// appendToolCalls appends the canonical form of a tool_calls array: for each
// call, its id, function name and compacted arguments.
func appendToolCalls(buf []byte, calls gjson.Result) []byte {
	mark := len(buf)
	buf = append(buf, tagToolCalls)
	n := 0
	calls.ForEach(func(_, call gjson.Result) bool {
		n++
		if !call.IsObject() {
			buf = appendElem(buf, call)
			return true
		}
		var id, fn, name, args gjson.Result
		call.ForEach(func(key, value gjson.Result) bool {
			switch key.Str {
			case "id":
				id = value
			case "function":
				fn = value
			}
			return true
		})
		if fn.IsObject() {
			fn.ForEach(func(key, value gjson.Result) bool {
				switch key.Str {
				case "name":
					name = value
				case "arguments":
					args = value
				}
				return true
			})
		} else {
			buf = appendField(buf, tagCallOdd, fn)
		}
		buf = appendField(buf, tagCallID, id)
		buf = appendField(buf, tagCallName, name)
		if args.Type == gjson.String && args.Raw != `""` {
			buf = appendArguments(append(buf, tagCallArgs), args.Raw)
		} else {
			buf = appendField(buf, tagCallArgs, args)
		}
		buf = append(buf, tagCallEnd)
		return true
	})
	if n == 0 {
		return buf[:mark]
	}
	return append(buf, valEnd)
}

// appendArguments appends a string value holding function arguments, given
// as its JSON literal, with insignificant whitespace removed from the
// arguments when they are valid JSON no deeper than MaxDepth (arguments are
// a string inside the message, so the message's own depth check does not
// bound them).
func appendArguments(buf []byte, raw string) []byte {
	buf = append(buf, valString)
	lenAt := len(buf)
	buf = append(buf, 0, 0, 0, 0)
	start := len(buf)
	buf = appendUnescaped(buf, raw)
	if CheckDepth(buf[start:]) == nil && gjson.ValidBytes(buf[start:]) {
		buf = buf[:start+len(pretty.UglyInPlace(buf[start:]))]
	}
	binary.LittleEndian.PutUint32(buf[lenAt:], uint32(len(buf)-start))
	return buf
}

// appendField appends tag and the canonical form of v, or nothing when v is
// empty.
func appendField(buf []byte, tag byte, v gjson.Result) []byte {
	mark := len(buf)
	out := appendValue(append(buf, tag), v)
	if len(out) == mark+1 {
		return out[:mark]
	}
	return out
}

// appendElem appends the canonical form of an array element, which is
// written even when empty because its position matters.
func appendElem(buf []byte, v gjson.Result) []byte {
	mark := len(buf)
	out := appendValue(buf, v)
	if len(out) == mark {
		return append(out, valEmpty)
	}
	return out
}

// appendValue appends the canonical form of any JSON value, or nothing when
// it is null, "", or an array or object with nothing in it once its own
// empty members are dropped.
func appendValue(buf []byte, v gjson.Result) []byte {
	switch v.Type {
	case gjson.Null:
		return buf
	case gjson.False:
		return append(buf, valFalse)
	case gjson.True:
		return append(buf, valTrue)
	case gjson.Number:
		return binary.LittleEndian.AppendUint64(append(buf, valNumber), math.Float64bits(v.Num))
	case gjson.String:
		if v.Raw == `""` {
			return buf
		}
		return appendJSONString(buf, v.Raw)
	}
	switch {
	case v.IsArray():
		mark := len(buf)
		buf = append(buf, valArray)
		n := 0
		v.ForEach(func(_, e gjson.Result) bool {
			n++
			buf = appendElem(buf, e)
			return true
		})
		if n == 0 {
			return buf[:mark]
		}
		return append(buf, valEnd)
	case v.IsObject():
		return appendObject(buf, v, false)
	}
	return buf
}

// member is one key of an object being canonicalised.
type member struct {
	key string
	val gjson.Result
}

// appendObject appends an object with its keys sorted, its empty and
// ignored members dropped (part: v is a content part, see [ignoredKey])
// and, for repeated keys, only the last kept.
func appendObject(buf []byte, v gjson.Result, part bool) []byte {
	var stack [16]member
	members := stack[:0]
	v.ForEach(func(key, value gjson.Result) bool {
		members = append(members, member{keyString(key.Raw), value})
		return true
	})
	// Insertion sort, stable: objects here are small (content parts).
	for i := 1; i < len(members); i++ {
		for j := i; j > 0 && members[j].key < members[j-1].key; j-- {
			members[j], members[j-1] = members[j-1], members[j]
		}
	}
	mark := len(buf)
	buf = append(buf, valObject)
	for i, m := range members {
		if i+1 < len(members) && members[i+1].key == m.key || ignoredKey(m.key, part) {
			continue // a later duplicate wins; ignored members are left out
		}
		at := len(buf)
		buf = appendString(buf, m.key)
		if out := appendValue(buf, m.val); len(out) > len(buf) {
			buf = out
		} else {
			buf = buf[:at]
		}
	}
	if len(buf) == mark+1 {
		return buf[:mark]
	}
	return append(buf, valEnd)
}

// keyString returns the value of the JSON string literal raw, without
// copying when it has no escapes. gjson's own unescaping differs from
// encoding/json's for invalid surrogates, so it is not used where that
// matters.
func keyString(raw string) string {
	if len(raw) < 2 {
		return ""
	}
	if strings.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1]
	}
	return string(appendUnescaped(nil, raw))
}

// appendJSONString appends, length-prefixed, the value of the JSON string
// literal raw.
func appendJSONString(buf []byte, raw string) []byte {
	buf = append(buf, valString)
	lenAt := len(buf)
	buf = append(buf, 0, 0, 0, 0)
	start := len(buf)
	buf = appendUnescaped(buf, raw)
	binary.LittleEndian.PutUint32(buf[lenAt:], uint32(len(buf)-start))
	return buf
}

// appendString appends a length-prefixed string.
func appendString(buf []byte, s string) []byte {
	buf = append(buf, valString)
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(s)))
	return append(buf, s...)
}

// isEmpty reports whether v's canonical form is empty: v is absent, null,
// "", or an array or object with nothing in it once its own empty members
// are dropped. It uses the spare capacity of buf as scratch space.
func isEmpty(buf []byte, v gjson.Result) bool {
	return len(appendValue(buf, v)) == len(buf)
}
