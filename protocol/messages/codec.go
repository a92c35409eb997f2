package messages

import (
	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/jsonscan"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/protocol/internal/body"
	"github.com/recallproxy/recall/wire"
)

// Codec reads and edits stored Messages API messages. The zero value is
// ready to use; it is registered for wire.Messages.
type Codec struct{}

var _ wire.Codec = Codec{}

// Protocol returns wire.Messages.
func (Codec) Protocol() wire.Protocol { return wire.Messages }

// Name returns "messages".
func (Codec) Name() string { return "messages" }

// Role returns the canonical role: "tool" for a user message whose
// content is blocks that are all tool_result (Anthropic sends tool
// results as user messages), "user" for any other user message (one that
// mixes tool results and text still answers calls: see Results),
// "assistant", and "system" for an instruction or a system message placed
// in messages.
func (Codec) Role(raw []byte) string {
	m := parse(raw)
	if !m.IsObject() {
		return ""
	}
	role := m.Get("role").Str
	var content gjson.Result
	if role == roleUser {
		content = m.Get("content")
	}
	return canonicalRole(role, content)
}

// canonicalRole is Role's answer for a message of API role role whose
// content is content (read for a user message only).
func canonicalRole(role string, content gjson.Result) string {
	switch role {
	case roleUser:
		if onlyToolResults(content) {
			return wire.RoleTool
		}
		return wire.RoleUser
	case roleAssistant:
		return wire.RoleAssistant
	case roleSystem:
		return wire.RoleSystem
	}
	return ""
}

// onlyToolResults reports whether content is a non-empty array of
// tool_result blocks.
func onlyToolResults(content gjson.Result) bool {
	if !content.IsArray() {
		return false
	}
	n, all := 0, true
	content.ForEach(func(_, b gjson.Result) bool {
		n++
		all = b.Get("type").Str == typeToolResult
		return all
	})
	return n > 0 && all
}

// Calls appends the ids of the message's tool_use blocks.
func (Codec) Calls(dst []string, raw []byte) []string {
	if jsonscan.Lacks(raw, toolUseTail) { // most messages: skip the parse
		return dst
	}
	return appendIDs(dst, parse(raw), roleAssistant, typeToolUse, "id")
}

// Results appends the tool_use_id of the message's tool_result blocks.
func (Codec) Results(dst []string, raw []byte) []string {
	if jsonscan.Lacks(raw, toolResultTail) { // most messages: skip the parse
		return dst
	}
	return appendIDs(dst, parse(raw), roleUser, typeToolResult, "tool_use_id")
}

// toolUseTail and toolResultTail end the block types Calls and Results
// look for, as a message spells them unescaped (see jsonscan.Lacks).
var (
	toolUseTail    = []byte(`_use"`)
	toolResultTail = []byte(`_result"`)
)

func appendIDs(dst []string, m gjson.Result, role, typ, key string) []string {
	if m.Get("role").Str != role {
		return dst
	}
	m.Get("content").ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").Str == typ {
			if id := b.Get(key); id.Type == gjson.String {
				dst = append(dst, id.Str)
			}
		}
		return true
	})
	return dst
}

// Itemized implements wire.Codec: an answer's tool_use blocks are one
// message.
func (Codec) Itemized() bool { return false }

// KeepCalls returns the message without the tool_use and tool_result
// blocks whose ids keep rejects, and raw itself when it keeps them all. It
// reports false when nothing worth sending is left: no block, or only
// thinking blocks.
func (Codec) KeepCalls(raw []byte, keep func(id string) bool) ([]byte, bool) {
	m := parse(raw)
	content := m.Get("content")
	if !content.IsArray() {
		return raw, content.Type == gjson.String && content.Str != ""
	}
	var kept []string
	dropped, substance := false, false
	content.ForEach(func(_, b gjson.Result) bool {
		typ := b.Get("type").Str
		if typ == typeToolUse && !keep(b.Get("id").Str) || typ == typeToolResult && !keep(b.Get("tool_use_id").Str) {
			dropped = true
			return true
		}
		kept = append(kept, b.Raw)
		substance = substance || !isThinking(typ)
		return true
	})
	if !dropped {
		return raw, substance
	}
	return replaceContent(raw, content, kept), substance
}

// CutResults cuts the text of each tool_result (its string content, or
// each of its text blocks) to max runes, the marker on a line of its own
// after the kept text. It returns raw itself and false when nothing was
// longer than max.
func (Codec) CutResults(raw []byte, max int, marker func(kept, total int) string) ([]byte, bool) {
	m := parse(raw)
	if m.Get("role").Str != roleUser {
		return raw, false
	}
	content := m.Get("content")
	if !content.IsArray() {
		return raw, false
	}
	var blocks []string
	cut := false
	content.ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").Str != typeToolResult {
			blocks = append(blocks, b.Raw)
			return true
		}
		nb, ok := cutResult(b, max, marker)
		cut = cut || ok
		blocks = append(blocks, nb)
		return true
	})
	if !cut {
		return raw, false
	}
	return replaceContent(raw, content, blocks), true
}

// cutResult cuts one tool_result block's text.
func cutResult(b gjson.Result, max int, marker func(kept, total int) string) (string, bool) {
	c := b.Get("content")
	switch {
	case c.Type == gjson.String:
		text, ok := body.CutText(c.Str, max, marker)
		if !ok {
			return b.Raw, false
		}
		return body.Replace(b.Raw, b.Index, c, string(gjson.AppendJSONString(nil, text))), true
	case c.IsArray():
		var inner []string
		cut := false
		c.ForEach(func(_, ib gjson.Result) bool {
			t := ib.Get("text")
			if ib.Get("type").Str == typeText && t.Type == gjson.String {
				if text, ok := body.CutText(t.Str, max, marker); ok {
					cut = true
					inner = append(inner, body.Replace(ib.Raw, ib.Index, t, string(gjson.AppendJSONString(nil, text))))
					return true
				}
			}
			inner = append(inner, ib.Raw)
			return true
		})
		if !cut {
			return b.Raw, false
		}
		return body.Replace(b.Raw, b.Index, c, body.JoinArray(inner)), true
	}
	return b.Raw, false
}

// WithoutCacheHints returns the message without cache_control members at
// any depth (raw itself when it has none).
func (Codec) WithoutCacheHints(raw []byte) []byte { return chat.WithoutCacheHints(raw) }

// replaceContent returns a copy of raw with the value content (a result
// of parsing raw) replaced by the array of blocks.
func replaceContent(raw []byte, content gjson.Result, blocks []string) []byte {
	return []byte(body.Replace(str(raw), 0, content, body.JoinArray(blocks)))
}
