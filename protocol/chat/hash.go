package chat

import (
	"encoding/binary"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"
	"github.com/tidwall/gjson"
	"github.com/tidwall/pretty"

	"github.com/recallproxy/recall/internal/canonjson"
	"github.com/recallproxy/recall/wire"
)

// Field tags of the canonical form. Every field is written as a tag
// followed by a self-delimiting value (canonjson's value tags), so that
// distinct messages cannot collide by concatenation.
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
)

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
	return canonjson.Sum(gjson.Parse(bytesString(raw)), appendCanonical)
}

// ForeignHash is the hash of raw, a message of another wire protocol: JSON
// nested deeper than [MaxDepth] hashes by its raw bytes, a message that
// decodes to one that means the same as one chat message hashes as that
// message does ([CanonicalHash]), so that a conversation continued through
// another protocol is recognised, and any other message hashes by the
// canonical form its protocol appends (canonical).
func ForeignHash(raw []byte, decode func([]byte) (wire.Message, error), canonical func(buf []byte, v gjson.Result) []byte) uint64 {
	if CheckDepth(raw) != nil {
		return xxhash.Sum64(raw)
	}
	m, err := decode(raw)
	return foreignHash(raw, m, err == nil, canonical)
}

// DecodedHash is ForeignHash of raw, which its protocol's decode read as
// m: for a caller that decoded it already (an answer's parse).
func DecodedHash(raw []byte, m wire.Message, canonical func(buf []byte, v gjson.Result) []byte) uint64 {
	if CheckDepth(raw) != nil {
		return xxhash.Sum64(raw)
	}
	return foreignHash(raw, m, true, canonical)
}

// foreignHash is ForeignHash of raw, nested no deeper than MaxDepth,
// which decoded to m when decoded is set.
func foreignHash(raw []byte, m wire.Message, decoded bool, canonical func(buf []byte, v gjson.Result) []byte) uint64 {
	if decoded {
		if h, ok := CanonicalHash(m); ok {
			return h
		}
	}
	return canonjson.Sum(gjson.Parse(bytesString(raw)), canonical)
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
	buf = append(buf, tagParts, canonjson.Array)
	n := 0
	c.ForEach(func(_, part gjson.Result) bool {
		n++
		if !part.IsObject() {
			buf = canonjson.AppendElem(buf, part, appendPlainObject)
			return true
		}
		at := len(buf)
		if buf = appendObject(buf, part, true); len(buf) == at {
			buf = append(buf, canonjson.Empty)
		}
		return true
	})
	if n == 0 {
		return buf[:mark]
	}
	return append(buf, canonjson.End)
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
			buf = canonjson.AppendElem(buf, call, appendPlainObject)
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
	return append(buf, canonjson.End)
}

// appendArguments appends a string value holding function arguments, given
// as its JSON literal, with insignificant whitespace removed from the
// arguments when they are valid JSON no deeper than MaxDepth (arguments are
// a string inside the message, so the message's own depth check does not
// bound them).
func appendArguments(buf []byte, raw string) []byte {
	buf = append(buf, canonjson.String)
	lenAt := len(buf)
	buf = append(buf, 0, 0, 0, 0)
	start := len(buf)
	buf = canonjson.AppendUnescaped(buf, raw)
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

// appendValue appends the canonical form of any JSON value, or nothing when
// it is null, "", or an array or object with nothing in it once its own
// empty members are dropped.
func appendValue(buf []byte, v gjson.Result) []byte {
	return canonjson.AppendPruned(buf, v, appendPlainObject)
}

// appendPlainObject appends an object that is not a content part (see
// [appendObject]).
func appendPlainObject(buf []byte, v gjson.Result) []byte { return appendObject(buf, v, false) }

// appendObject appends an object with its keys sorted, its empty and
// ignored members dropped (part: v is a content part, see [ignoredKey])
// and, for repeated keys, only the last kept.
func appendObject(buf []byte, v gjson.Result, part bool) []byte {
	var stack [16]canonjson.Member
	mark := len(buf)
	buf = append(buf, canonjson.Object)
	for _, m := range canonjson.Members(stack[:0], v) {
		if ignoredKey(m.Key, part) {
			continue
		}
		at := len(buf)
		buf = canonjson.AppendString(buf, m.Key)
		if out := appendValue(buf, m.Val); len(out) > len(buf) {
			buf = out
		} else {
			buf = buf[:at]
		}
	}
	if len(buf) == mark+1 {
		return buf[:mark]
	}
	return append(buf, canonjson.End)
}

// isEmpty reports whether v's canonical form is empty: v is absent, null,
// "", or an array or object with nothing in it once its own empty members
// are dropped. It uses the spare capacity of buf as scratch space.
func isEmpty(buf []byte, v gjson.Result) bool {
	return len(appendValue(buf, v)) == len(buf)
}

// TextHash is CanonicalHash of a message of role role, any but tool,
// holding text alone: the hash of {"role":role,"content":text}, reckoned
// without writing the message or parsing it back.
func TextHash(role, text string) uint64 {
	if !utf8.ValidString(text) { // Encode writes U+FFFD for each bad byte
		h, _ := encodedHash(wire.Message{Role: role, Parts: []wire.Part{{Kind: wire.Text, Text: text}}})
		return h
	}
	return textHash(role, text)
}

// textHash is TextHash of valid UTF-8: the canonical fields the hash of
// the encoding reads, role and content, streamed into the hash.
func textHash(role, text string) uint64 {
	var d xxhash.Digest
	d.Reset()
	writeField(&d, tagRole, role)
	writeField(&d, tagText, text)
	return d.Sum64()
}

// writeField writes the canonical field of tag and string value s, as
// appendField appends it: nothing for "".
func writeField(d *xxhash.Digest, tag byte, s string) {
	if s == "" {
		return
	}
	var head [6]byte
	head[0], head[1] = tag, canonjson.String
	binary.LittleEndian.PutUint32(head[2:], uint32(len(s)))
	d.Write(head[:])
	d.WriteString(s)
}
