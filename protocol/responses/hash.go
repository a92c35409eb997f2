package responses

import (
	"encoding/binary"
	"math"
	"sort"
	"strconv"
	"sync"

	"github.com/cespare/xxhash/v2"
	"github.com/tidwall/gjson"
	"github.com/tidwall/pretty"

	"github.com/recallproxy/recall/protocol/chat"
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
// than chat.MaxDepth hashes by its raw bytes.
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
	buf := appendItemCanonical((*bp)[:0], parse(raw))
	h := xxhash.Sum64(buf)
	if cap(buf) <= 64<<10 {
		*bp = buf
		hashBufs.Put(bp)
	}
	return h
}

var hashBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// Value tags of the canonical form; every value is self-delimiting.
const (
	valString = 's'
	valNumber = 'n'
	valTrue   = 't'
	valFalse  = 'f'
	valEmpty  = 'z'
	valArray  = 'a'
	valObject = 'o'
	valEnd    = '.'
	valText   = 'x' // content or output that is just text
)

// appendItemCanonical appends the canonical form of item.
func appendItemCanonical(buf []byte, item gjson.Result) []byte {
	if !item.IsObject() {
		return appendValue(append(buf, 'X'), item)
	}
	t := itemType(item)
	buf = appendString(append(buf, 'I'), t)
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
				return appendString(append(buf, valText), text)
			}
			return appendParts(buf, v)
		case key == "output" && isOutput(t):
			if text, ok := soleText(v); ok {
				return appendString(append(buf, valText), text)
			}
			return appendParts(buf, v)
		case key == "arguments" && v.Type == gjson.String && v.Str != "":
			if gjson.Valid(v.Str) {
				return appendString(append(buf, valString), string(pretty.Ugly([]byte(v.Str))))
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
	buf = append(buf, valArray)
	n := 0
	c.ForEach(func(_, p gjson.Result) bool {
		n++
		if !p.IsObject() {
			buf = appendElem(buf, p)
			return true
		}
		at := len(buf)
		buf = appendMembers(append(buf, valObject), p, ignoredPartKey, func(buf []byte, key string, v gjson.Result) []byte {
			if key == "type" && (v.Str == partInputText || v.Str == partOutputText) {
				return appendString(append(buf, valString), "text")
			}
			return appendValue(buf, v)
		})
		if len(buf) == at+1 {
			buf = append(buf[:at], valEmpty)
		} else {
			buf = append(buf, valEnd)
		}
		return true
	})
	if n == 0 {
		return buf[:mark]
	}
	return append(buf, valEnd)
}

// member is one key of an object being canonicalised.
type member struct {
	key string
	val gjson.Result
}

// appendMembers appends obj's members sorted by key, leaving out those
// skip names and those whose value writes nothing; a repeated key keeps
// its last value, as encoding/json does.
func appendMembers(buf []byte, obj gjson.Result, skip func(string) bool,
	value func(buf []byte, key string, v gjson.Result) []byte) []byte {
	var stack [16]member
	members := stack[:0]
	obj.ForEach(func(k, v gjson.Result) bool {
		members = append(members, member{k.String(), v})
		return true
	})
	sort.SliceStable(members, func(i, j int) bool { return members[i].key < members[j].key })
	for i, m := range members {
		if i+1 < len(members) && members[i+1].key == m.key || skip(m.key) {
			continue
		}
		at := len(buf)
		buf = appendString(buf, m.key)
		if out := value(buf, m.key, m.val); len(out) > len(buf) {
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
		if v.Str == "" {
			return buf
		}
		return appendString(append(buf, valString), v.Str)
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
		mark := len(buf)
		buf = appendMembers(append(buf, valObject), v, func(string) bool { return false },
			func(buf []byte, _ string, v gjson.Result) []byte { return appendValue(buf, v) })
		if len(buf) == mark+1 {
			return buf[:mark]
		}
		return append(buf, valEnd)
	}
	return buf
}

// appendElem appends an array element, written even when empty because
// its position matters.
func appendElem(buf []byte, v gjson.Result) []byte {
	mark := len(buf)
	if out := appendValue(buf, v); len(out) > mark {
		return out
	}
	return append(buf, valEmpty)
}

// appendString appends a length-prefixed string.
func appendString(buf []byte, s string) []byte {
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(s)))
	return append(buf, s...)
}

// isEmpty reports whether v writes nothing canonically.
func isEmpty(v gjson.Result) bool { return len(appendValue(nil, v)) == 0 }

func itoa(i int) string { return strconv.Itoa(i) }
