package responses

import (
	"github.com/recallproxy/recall/internal/jsonscan"
	"github.com/recallproxy/recall/protocol/internal/body"
	"github.com/recallproxy/recall/wire"
)

// decodeParts is Decode of a message item whose content is text: a
// string, or an array of input_text and output_text parts, as the SDKs
// send a user's message and as the API returns the model's (its parts'
// annotations and logprobs aside). It reads the item in one jsonscan
// pass that validates it, where decodeTree's gjson reads look each
// member up apart. ok is false for any other item, left to decodeTree:
// another type or part, a member it reads given twice or not as a
// string, an escaped name, content absent or null, a value nested past
// maxEventDepth, invalid JSON.
func decodeParts(raw []byte) (wire.Message, bool) {
	return body.DecodeTexts(scanTextMessage, raw)
}

// scanTextMessage is the pass of decodeParts: it calls text with each of
// the message's texts in order (content that is a string is one) and
// returns the message's canonical role. When ok is false text may have
// been called with some of them.
func scanTextMessage(raw []byte, text func(string)) (role string, ok bool) {
	s := jsonscan.Scanner{B: raw}
	var typ, rawRole []byte
	read, walked := s.Known(itemFields, maxEventDepth, func(i int) (ok bool) {
		switch i {
		case 0:
			typ, ok = s.Plain()
		case 1:
			rawRole, ok = s.Plain()
		default:
			ok = scanTextContent(&s, text)
		}
		return ok
	})
	if s.Space(); !walked || s.I != len(raw) || read&4 == 0 || read&1 != 0 && string(typ) != typeMessage {
		return "", false
	}
	if role = messageRole(string(rawRole)); read&2 == 0 || role == "" {
		return "", false
	}
	return role, true
}

// itemFields and partFields are the members the pass reads of a message
// item and of a text part, in the order Known reports them.
var (
	itemFields = []string{"type", "role", "content"}
	partFields = []string{"type", "text"}
)

// scanTextContent reads a message's content at s: a string, or an array
// of text parts, calling text with each. It reports false for anything
// else.
func scanTextContent(s *jsonscan.Scanner, text func(string)) bool {
	if s.At('"') {
		t, ok := body.ScanString(s)
		text(t)
		return ok
	}
	_, ok := s.Array(func(int) bool {
		var typ []byte
		var t string
		read, walked := s.Known(partFields, maxEventDepth-2, func(i int) (ok bool) {
			if i == 0 {
				typ, ok = s.Plain()
			} else {
				t, ok = body.ScanString(s)
			}
			return ok
		})
		if !walked || read&2 == 0 || string(typ) != partInputText && string(typ) != partOutputText {
			return false
		}
		text(t)
		return true
	})
	return ok
}
