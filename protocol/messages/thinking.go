package messages

import (
	"bytes"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/wire"
)

var _ wire.Thinking = Codec{}

// WithoutThinking implements wire.Thinking: an assistant message's
// thinking and redacted_thinking blocks are what a client may leave out
// when it resends the message (Anthropic asks for them back only in the
// current turn's tool loop). hash is Hash of the message with its other
// blocks as they are; empty reports that only thinking was there.
func (c Codec) WithoutThinking(raw []byte) (hash uint64, empty, ok bool) {
	if !bytes.Contains(raw, []byte("thinking")) {
		return 0, false, false
	}
	m := parse(raw)
	if m.Get("role").Str != wire.RoleAssistant {
		return 0, false, false
	}
	content := m.Get("content")
	if !content.IsArray() {
		return 0, false, false
	}
	var kept []string
	content.ForEach(func(_, b gjson.Result) bool {
		if isThinking(b.Get("type").Str) {
			ok = true
		} else {
			kept = append(kept, b.Raw)
		}
		return true
	})
	if !ok {
		return 0, false, false
	}
	return c.Hash(replaceContent(raw, content, kept)), len(kept) == 0, true
}
