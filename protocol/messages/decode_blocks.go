package messages

import (
	"github.com/recallproxy/recall/internal/jsonscan"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/protocol/internal/body"
	"github.com/recallproxy/recall/wire"
)

// decodeBlocks is Decode of a message whose content is an array of text
// blocks, as the API returns the model's answer and SDKs send a turn
// with cache hints (a block's other members, cache_control or
// citations, aside). It reads the message in one jsonscan pass that
// validates it, where decodeTree's gjson reads look each member up
// apart. ok is false for any other message, left to decodeTree: another
// block, a member it reads given twice or not as a string, an escaped
// name or role, content not an array, a value nested past chat.MaxDepth,
// invalid JSON.
func decodeBlocks(raw []byte) (wire.Message, bool) {
	return body.DecodeTexts(scanTextBlocks, raw)
}

// messageFields and blockFields are the members the pass reads of a
// message and of a text block, in the order Known reports them.
var (
	messageFields = []string{"role", "content"}
	blockFields   = []string{"type", "text"}
)

// scanTextBlocks is the pass of decodeBlocks: it calls text with each
// block's text in order and returns the message's canonical role. When
// ok is false text may have been called with some of them.
func scanTextBlocks(raw []byte, text func(string)) (role string, ok bool) {
	s := jsonscan.Scanner{B: raw}
	var rawRole []byte
	read, walked := s.Known(messageFields, chat.MaxDepth, func(i int) (ok bool) {
		if i == 0 {
			rawRole, ok = s.Plain()
			return ok
		}
		_, ok = s.Array(func(int) bool {
			var typ []byte
			var t string
			read, walked := s.Known(blockFields, chat.MaxDepth-2, func(i int) (ok bool) {
				if i == 0 {
					typ, ok = s.Plain()
				} else {
					t, ok = body.ScanString(&s)
				}
				return ok
			})
			if !walked || read&2 == 0 || string(typ) != typeText {
				return false
			}
			text(t)
			return true
		})
		return ok
	})
	if s.Space(); !walked || s.I != len(raw) || read != 3 {
		return "", false
	}
	switch string(rawRole) { // as canonicalRole: text blocks are no tool results
	case roleUser:
		return wire.RoleUser, true
	case roleAssistant:
		return wire.RoleAssistant, true
	case roleSystem:
		return wire.RoleSystem, true
	}
	return "", false
}
