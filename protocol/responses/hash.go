package responses

import (
	"strconv"

	"github.com/tidwall/gjson"
	"github.com/tidwall/pretty"

	"github.com/recallproxy/recall/internal/canonjson"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/wire"
)

// Hash returns the item's canonical hash. Two items hash equal when a
// client would consider them the same item, so that a client resending
// every item on each turn (openai-agents with store: false, Codex) is
// deduplicated against what Recall stored from the upstream's output:
//
//   - key order, whitespace, string escapes and number spelling are
//     ignored, and so are null, "", [] and {} values (an SDK adds
//     "annotations":[] or "logprobs":[] where the upstream left them out,
//     or the other way round);
//   - an item's "id", "status" and "phase", and a content part's "id",
//     "annotations" and "logprobs", are ignored: they describe how an item
//     was produced, not what it says, and clients drop or re-mint them
//     (Codex resends an output message as bare output_text parts with no
//     id; openai-agents resends it as received). local_shell_call_output
//     keeps its "id", which names the call it answers;
//   - an easy input message ({"role","content"} without "type") equals its
//     {"type":"message"} form, and content given as a string equals
//     content holding one text part (input_text or output_text) with the
//     same text; text parts of either type compare as one type, since the
//     role already tells input from output;
//   - a function_call_output's output given as a string equals an output
//     holding one input_text part with the same text;
//   - a call's "arguments" compare with insignificant JSON whitespace
//     removed.
//
// Everything else (role, call_id, name, the text, images, a reasoning
// item's summary and encrypted_content) is compared. JSON nested deeper
// than chat.MaxDepth hashes by its raw bytes, and an item
// that means the same as one chat message hashes as that message does
// (chat.ForeignHash).
func (c Codec) Hash(raw []byte) uint64 {
	return chat.ForeignHash(raw, c.Decode, appendItemCanonical)
}

// decodedHash is Hash of raw, which Decode read as m.
func (Codec) decodedHash(raw []byte, m wire.Message) uint64 {
	return chat.DecodedHash(raw, m, appendItemCanonical)
}

// valText tags content or output that is just text; the other values use
// canonjson's tags, and keys are written length-prefixed without a tag.
const valText = 'x'

// appendItemCanonical appends the canonical form of item.
func appendItemCanonical(buf []byte, item gjson.Result) []byte {
	if !item.IsObject() {
		return appendValue(append(buf, 'X'), item)
	}
	t := itemType(item)
	buf = canonjson.AppendSized(append(buf, 'I'), t)
	keepID := t == "local_shell_call_output"
	return appendMembers(buf, item, func(key string) bool {
		switch key {
		case "type", "status", "phase":
			return true
		case "id":
			return !keepID
		}
		return false
	}, func(buf []byte, key string, v gjson.Result) []byte {
		switch {
		case key == "content" && t == typeMessage:
			if text, ok := soleText(v); ok {
				return canonjson.AppendSized(append(buf, valText), text)
			}
			return appendParts(buf, v)
		case key == "output" && isOutput(t):
			if text, ok := soleText(v); ok {
				return canonjson.AppendSized(append(buf, valText), text)
			}
			return appendParts(buf, v)
		case key == "arguments" && v.Type == gjson.String && v.Str != "":
			if gjson.Valid(v.Str) {
				return canonjson.AppendString(buf, string(pretty.Ugly([]byte(v.Str))))
			}
		}
		return appendValue(buf, v)
	})
}

// soleText returns the text of content that is a string, or an array of
// exactly one text part whose other members are ignored or empty.
func soleText(c gjson.Result) (string, bool) {
	if c.Type == gjson.String {
		return c.Str, true
	}
	if !c.IsArray() {
		return "", false
	}
	parts := c.Array()
	if len(parts) != 1 || !parts[0].IsObject() {
		return "", false
	}
	var text gjson.Result
	ok := true
	parts[0].ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "type":
			ok = v.Str == partInputText || v.Str == partOutputText
		case "text":
			text = v
		default:
			ok = ignoredPartKey(k.Str) || isEmpty(v)
		}
		return ok
	})
	if !ok || text.Type != gjson.String {
		return "", false
	}
	return text.Str, true
}

func ignoredPartKey(key string) bool {
	return key == "id" || key == "annotations" || key == "logprobs"
}

// appendParts appends content parts, each canonically with text types
// merged and ignored keys left out.
func appendParts(buf []byte, c gjson.Result) []byte {
	if !c.IsArray() {
		return appendValue(buf, c)
	}
	mark := len(buf)
	buf = append(buf, canonjson.Array)
	n := 0
	c.ForEach(func(_, p gjson.Result) bool {
		n++
		if !p.IsObject() {
			buf = canonjson.AppendElem(buf, p, appendObject)
			return true
		}
		at := len(buf)
		buf = appendMembers(append(buf, canonjson.Object), p, ignoredPartKey, func(buf []byte, key string, v gjson.Result) []byte {
			if key == "type" && (v.Str == partInputText || v.Str == partOutputText) {
				return canonjson.AppendString(buf, "text")
			}
			return appendValue(buf, v)
		})
		if len(buf) == at+1 {
			buf = append(buf[:at], canonjson.Empty)
		} else {
			buf = append(buf, canonjson.End)
		}
		return true
	})
	if n == 0 {
		return buf[:mark]
	}
	return append(buf, canonjson.End)
}

// appendMembers appends obj's members sorted by key, leaving out those
// skip names and those whose value writes nothing; a repeated key keeps
// its last value, as encoding/json does.
func appendMembers(buf []byte, obj gjson.Result, skip func(string) bool,
	value func(buf []byte, key string, v gjson.Result) []byte) []byte {
	var stack [16]canonjson.Member
	for _, m := range canonjson.Members(stack[:0], obj) {
		if skip(m.Key) {
			continue
		}
		at := len(buf)
		buf = canonjson.AppendSized(buf, m.Key)
		if out := value(buf, m.Key, m.Val); len(out) > len(buf) {
			buf = out
		} else {
			buf = buf[:at]
		}
	}
	return buf
}

// appendValue appends the canonical form of a JSON value, or nothing when
// it is null, "", or an array or object with nothing in it.
func appendValue(buf []byte, v gjson.Result) []byte {
	return canonjson.AppendPruned(buf, v, appendObject)
}

// appendObject appends an object with every member that writes something,
// or nothing.
func appendObject(buf []byte, v gjson.Result) []byte {
	mark := len(buf)
	buf = appendMembers(append(buf, canonjson.Object), v, keepAll, appendMemberValue)
	if len(buf) == mark+1 {
		return buf[:mark]
	}
	return append(buf, canonjson.End)
}

func keepAll(string) bool { return false }

func appendMemberValue(buf []byte, _ string, v gjson.Result) []byte { return appendValue(buf, v) }

// isEmpty reports whether v writes nothing canonically.
func isEmpty(v gjson.Result) bool { return len(appendValue(nil, v)) == 0 }

func itoa(i int) string { return strconv.Itoa(i) }
