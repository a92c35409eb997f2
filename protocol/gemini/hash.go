package gemini

import (
	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/canonjson"
	"github.com/recallproxy/recall/protocol/chat"
)

// Hash returns the canonical hash of a stored content: equal for the
// contents a client would call the same. The rule:
//
//   - only "role" and "parts" count; a missing or empty role is "user";
//   - key order, whitespace and string escapes do not count, nor the
//     spelling of a member's name (thoughtSignature and
//     thought_signature are one member); numbers compare by their
//     float64 value;
//   - inside parts, members that are null, "", [] or {} equal absent
//     ones, and "thought": false equals its absence;
//   - everything else counts: part order, function names, ids and args
//     (as JSON, key order aside), thought text and signatures.
//
// A content that means the same as one chat message hashes as that
// message does (chat.ForeignHash), so that a conversation continued
// through another protocol is recognised; JSON nested deeper than
// chat.MaxDepth hashes by its raw bytes.
func (c Codec) Hash(raw []byte) uint64 {
	// A content of one text, the shape most have, hashes as the chat
	// message of that text, reckoned without writing it.
	var text string
	texts := 0
	if role, ok := scanTexts(raw, func(t string) {
		if t != "" {
			texts++
			text = t
		}
	}); ok && texts == 1 {
		return chat.TextHash(role, text)
	}
	return c.hashTree(raw)
}

// hashTree is Hash of any content, through its decoding.
func (c Codec) hashTree(raw []byte) uint64 {
	return chat.ForeignHash(raw, c.Decode, appendCanonicalContent)
}

// appendCanonicalContent appends the canonical form of content m.
func appendCanonicalContent(buf []byte, m gjson.Result) []byte {
	if !m.IsObject() {
		return canonjson.AppendPruned(append(buf, 'X'), m, appendCanonicalObject)
	}
	role := m.Get("role").Str
	if role == "" {
		role = roleUser
	}
	buf = canonjson.AppendString(append(buf, 'R'), role)
	buf = append(buf, 'P')
	parts := m.Get("parts")
	if !parts.IsArray() {
		return canonjson.AppendPruned(buf, parts, appendCanonicalObject)
	}
	buf = append(buf, canonjson.Array)
	parts.ForEach(func(_, p gjson.Result) bool {
		buf = canonjson.AppendElem(buf, p, appendCanonicalObject)
		return true
	})
	return append(buf, canonjson.End)
}

// appendCanonicalObject appends an object canonically: members by their
// camelCase name, sorted, empty ones and "thought": false left out.
func appendCanonicalObject(buf []byte, v gjson.Result) []byte {
	var stack [16]canonjson.Member
	members := canonjson.Members(stack[:0], v)
	for i := range members {
		members[i].Key = camel(members[i].Key)
	}
	sortMembers(members)
	mark := len(buf)
	buf = append(buf, canonjson.Object)
	n := 0
	for i, m := range members {
		if i+1 < len(members) && members[i+1].Key == m.Key {
			continue // of a name given twice the last counts
		}
		if m.Key == keyThought && m.Val.Type == gjson.False {
			continue
		}
		at := len(buf)
		buf = canonjson.AppendString(buf, m.Key)
		vat := len(buf)
		buf = canonjson.AppendPruned(buf, m.Val, appendCanonicalObject)
		if len(buf) == vat {
			buf = buf[:at]
			continue
		}
		n++
	}
	if n == 0 {
		return buf[:mark]
	}
	return append(buf, canonjson.End)
}

// sortMembers sorts members by key, stably (insertion sort: objects are
// small).
func sortMembers(ms []canonjson.Member) {
	for i := 1; i < len(ms); i++ {
		for j := i; j > 0 && ms[j].Key < ms[j-1].Key; j-- {
			ms[j], ms[j-1] = ms[j-1], ms[j]
		}
	}
}
