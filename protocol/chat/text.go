package chat

import (
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/protocol/internal/body"
	"github.com/recallproxy/recall/wire"
)

// Text implements wire.Codec: the message's content (a string, or the
// text and refusal of its parts), its refusal, and the name and arguments
// of each tool call, one a line, as wire.AppendText writes a decoded
// message. A tool result is a message whose content is the result. It
// reads raw in place: the only allocation is dst's growth, and none when
// dst has room for len(raw) bytes (the text of a JSON message is never
// longer than the message).
func (Codec) Text(dst, raw []byte) []byte {
	var stack [4]body.Member
	if ms, ok := body.StringMembers(stack[:0], raw); ok {
		if _, calls := body.Lookup(ms, "tool_calls"); !calls {
			// One pass, as Decode reads such a message (decodeStrings).
			content, _ := body.Lookup(ms, "content")
			refusal, _ := body.Lookup(ms, "refusal")
			return wire.AppendLine(wire.AppendLine(dst, content), refusal)
		}
	}
	return textTree(dst, raw)
}

// textTree is Text of any message, through gjson.
func textTree(dst, raw []byte) []byte {
	add := func(s string) { dst = wire.AppendLine(dst, s) }
	// A view of raw, not a copy: every string kept is copied into dst.
	mm := readMembers(gjson.Parse(unsafe.String(unsafe.SliceData(raw), len(raw))))
	content := mm.content
	switch {
	case content.Type == gjson.String:
		add(content.String())
	case content.IsArray():
		content.ForEach(func(_, part gjson.Result) bool {
			switch part.Get("type").String() {
			case "text":
				add(part.Get("text").String())
			case "refusal":
				add(part.Get("refusal").String())
			}
			return true
		})
	}
	add(mm.refusal.String())
	mm.calls.ForEach(func(_, call gjson.Result) bool {
		add(call.Get("function.name").String())
		add(call.Get("function.arguments").String())
		return true
	})
	return dst
}
