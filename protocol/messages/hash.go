package messages

import (
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/cespare/xxhash/v2"
	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/protocol/chat"
)

// Tags of the canonical form: every value is a tag and a self-delimiting
// body, so that distinct messages cannot collide by concatenation.
const (
	valString = 's'
	valNumber = 'n'
	valTrue   = 't'
	valFalse  = 'f'
	valNull   = 'z'
	valArray  = 'a'
	valObject = 'o'
	valEnd    = '.'
)

var hashBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

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
// deeper than chat.MaxDepth hashes by its raw bytes.
func (c Codec) Hash(raw []byte) uint64 {
	if chat.CheckDepth(raw) != nil {
		return xxhash.Sum64(raw)
	}
	// A message that means the same as one chat message hashes as that
	// message does, whatever protocol it came in (chat.CanonicalHash).
	if m, err := c.Decode(raw); err == nil {
		if h, ok := chat.CanonicalHash(m); ok {
			return h
		}
	}
	bp := hashBufs.Get().(*[]byte)
	buf := appendCanonicalMessage((*bp)[:0], parse(raw))
	h := xxhash.Sum64(buf)
	if cap(buf) <= 64<<10 {
		*bp = buf
		hashBufs.Put(bp)
	}
	return h
}

// appendCanonicalMessage appends the canonical form of message m.
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
		return append(buf, valArray, valEnd)
	case c.Type == gjson.String:
		buf = append(buf, valArray, valObject)
		buf = appendString(buf, "text")
		buf = appendString(buf, c.Str)
		buf = appendString(buf, "type")
		buf = appendString(buf, typeText)
		return append(buf, valEnd, valEnd)
	}
	return appendCanonical(buf, c)
}

// member is one member of an object being canonicalised.
type member struct {
	key string
	val gjson.Result
}

// appendCanonical appends any JSON value canonically (see Hash).
func appendCanonical(buf []byte, v gjson.Result) []byte {
	switch v.Type {
	case gjson.Null:
		return append(buf, valNull)
	case gjson.False:
		return append(buf, valFalse)
	case gjson.True:
		return append(buf, valTrue)
	case gjson.Number:
		return binary.LittleEndian.AppendUint64(append(buf, valNumber), math.Float64bits(v.Num))
	case gjson.String:
		return appendString(buf, v.Str)
	}
	if v.IsArray() {
		buf = append(buf, valArray)
		v.ForEach(func(_, e gjson.Result) bool {
			buf = appendCanonical(buf, e)
			return true
		})
		return append(buf, valEnd)
	}
	if !v.IsObject() {
		return append(buf, 'X')
	}
	var stack [8]member
	members := stack[:0]
	v.ForEach(func(k, val gjson.Result) bool {
		members = append(members, member{k.Str, val})
		return true
	})
	slices.SortStableFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	toolResult := false
	for _, m := range members {
		if m.key == "type" && m.val.Str == typeToolResult {
			toolResult = true
		}
	}
	buf = append(buf, valObject)
	for i, m := range members {
		if i+1 < len(members) && members[i+1].key == m.key || m.key == "cache_control" || empty(m.val) ||
			toolResult && m.key == "is_error" && m.val.Type == gjson.False {
			continue
		}
		buf = appendString(buf, m.key)
		if m.key == "content" {
			buf = appendContent(buf, m.val)
		} else {
			buf = appendCanonical(buf, m.val)
		}
	}
	return append(buf, valEnd)
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

// appendString appends a length-prefixed string.
func appendString(buf []byte, s string) []byte {
	buf = append(buf, valString)
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(s)))
	return append(buf, s...)
}
