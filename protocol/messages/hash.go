package messages

import (
	"slices"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/canonjson"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/wire"
)

// Hash returns the canonical hash of a stored message: equal for the
// messages a client would call the same. The rule:
//
//   - only "role" and "content" count; every other member of the message
//     is ignored;
//   - key order, whitespace and string escapes do not count; numbers
//     compare by their float64 value; of a key given twice the last counts;
//   - "cache_control" members are ignored at any depth: agents move their
//     cache hints to the newest message on every call;
//   - a string "content" (of the message, of a tool_result, of a document
//     source) equals an array of one text block with the same text, since
//     SDKs and agents switch between the two forms, and "" equals no
//     content at all;
//   - inside blocks, members that are null, "", [] or {} equal absent ones
//     (SDKs write "citations":null and the like), and a tool_result's
//     "is_error":false equals its absence;
//   - everything else counts: block order, tool_use ids and inputs (as
//     JSON, key order aside), thinking text and signatures.
//
// Invalid JSON hashes to something stable but unspecified; JSON nested
// deeper than chat.MaxDepth hashes by its raw bytes; a
// message that means the same as one chat message hashes as that message
// does (chat.ForeignHash).
func (c Codec) Hash(raw []byte) uint64 {
	return chat.ForeignHash(raw, c.Decode, appendCanonicalMessage)
}

// hashed is the answer's Hashed for its one message raw, which Decode
// read as m.
func (Codec) hashed(raw []byte, m wire.Message) []wire.Hashed {
	return []wire.Hashed{{Raw: raw, Hash: chat.DecodedHash(raw, m, appendCanonicalMessage)}}
}

// appendCanonicalMessage appends the canonical form of message m. Unlike
// the other protocols' forms it keeps null values (as canonjson.Empty) and
// empty arrays: only an object's empty members are dropped.
func appendCanonicalMessage(buf []byte, m gjson.Result) []byte {
	if !m.IsObject() {
		return appendCanonical(append(buf, 'X'), m)
	}
	var role, content gjson.Result
	m.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "role":
			role = v
		case "content":
			content = v
		}
		return true
	})
	buf = appendCanonical(append(buf, 'R'), role)
	return appendContent(append(buf, 'C'), content)
}

// appendContent appends content in its canonical form: a string is an
// array of one text block, "" or null none.
func appendContent(buf []byte, c gjson.Result) []byte {
	switch {
	case c.Type == gjson.String && c.Str == "", c.Type == gjson.Null, !c.Exists():
		return append(buf, canonjson.Array, canonjson.End)
	case c.Type == gjson.String:
		buf = append(buf, canonjson.Array, canonjson.Object)
		buf = canonjson.AppendString(buf, "text")
		buf = canonjson.AppendStringValue(buf, c)
		buf = canonjson.AppendString(buf, "type")
		buf = canonjson.AppendString(buf, typeText)
		return append(buf, canonjson.End, canonjson.End)
	}
	return appendCanonical(buf, c)
}

// appendCanonical appends any JSON value canonically (see Hash).
func appendCanonical(buf []byte, v gjson.Result) []byte {
	switch v.Type {
	case gjson.Null:
		return append(buf, canonjson.Empty)
	case gjson.False:
		return append(buf, canonjson.False)
	case gjson.True:
		return append(buf, canonjson.True)
	case gjson.Number:
		return canonjson.AppendNumber(buf, v.Num)
	case gjson.String:
		return canonjson.AppendStringValue(buf, v)
	}
	if v.IsArray() {
		buf = append(buf, canonjson.Array)
		v.ForEach(func(_, e gjson.Result) bool {
			buf = appendCanonical(buf, e)
			return true
		})
		return append(buf, canonjson.End)
	}
	if !v.IsObject() {
		return append(buf, 'X')
	}
	var stack [16]canonjson.Member
	members := canonjson.Members(stack[:0], v)
	toolResult := slices.ContainsFunc(members, func(m canonjson.Member) bool {
		return m.Key == "type" && m.Val.Str == typeToolResult
	})
	buf = append(buf, canonjson.Object)
	for _, m := range members {
		if m.Key == "cache_control" || empty(m.Val) || toolResult && m.Key == "is_error" && m.Val.Type == gjson.False {
			continue
		}
		buf = canonjson.AppendString(buf, m.Key)
		if m.Key == "content" {
			buf = appendContent(buf, m.Val)
		} else {
			buf = appendCanonical(buf, m.Val)
		}
	}
	return append(buf, canonjson.End)
}

// empty reports whether v is null, "", [] or {}.
func empty(v gjson.Result) bool {
	switch {
	case v.Type == gjson.Null:
		return true
	case v.Type == gjson.String:
		return v.Str == ""
	case v.IsArray(), v.IsObject():
		n := 0
		v.ForEach(func(_, _ gjson.Result) bool { n++; return false })
		return n == 0
	}
	return false
}
