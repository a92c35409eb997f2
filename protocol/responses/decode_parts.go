package responses

import (
	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/jsonscan"
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
func decodeParts(raw []byte) (m wire.Message, ok bool) {
	s := jsonscan.Scanner{B: raw}
	var typ, role []byte
	typed, roled, content := false, false, false
	walked := s.Object(func(name []byte) bool {
		var ok bool
		switch string(name) {
		case "type":
			if typed {
				return false
			}
			typed = true
			typ, ok = s.Plain()
		case "role":
			if roled {
				return false
			}
			roled = true
			role, ok = s.Plain()
		case "content":
			if content {
				return false
			}
			content = true
			ok = scanTextContent(&s, &m.Parts)
		default:
			_, ok = s.Value(maxEventDepth)
		}
		return ok
	})
	if s.Space(); !walked || s.I != len(raw) || !content || typed && string(typ) != typeMessage {
		return wire.Message{}, false
	}
	if m.Role = messageRole(string(role)); !roled || m.Role == "" {
		return wire.Message{}, false
	}
	return m, true
}

// scanTextContent reads a message's content at s: a string, or an array
// of text parts, each a Text part appended to parts. It reports false
// for anything else.
func scanTextContent(s *jsonscan.Scanner, parts *[]wire.Part) bool {
	if s.At('"') {
		text, ok := scanText(s)
		*parts = append(*parts, wire.Part{Kind: wire.Text, Text: text})
		return ok
	}
	_, ok := s.Array(func(int) bool {
		var typ []byte
		var text string
		typed, texted := false, false
		walked := s.Object(func(name []byte) bool {
			var ok bool
			switch string(name) {
			case "type":
				if typed {
					return false
				}
				typed = true
				typ, ok = s.Plain()
			case "text":
				if texted {
					return false
				}
				texted = true
				text, ok = scanText(s)
			default:
				_, ok = s.Value(maxEventDepth - 2)
			}
			return ok
		})
		if !walked || !texted || string(typ) != partInputText && string(typ) != partOutputText {
			return false
		}
		*parts = append(*parts, wire.Part{Kind: wire.Text, Text: text})
		return true
	})
	return ok
}

// scanText reads a string at s as gjson's Str reads it: the bytes
// between its quotes (sharing s.B's memory, as decodeTree's results do)
// when it holds no escape, else gjson's unescaping of it.
func scanText(s *jsonscan.Scanner) (string, bool) {
	start, end, escaped, ok := s.Str()
	switch {
	case !ok:
		return "", false
	case escaped:
		return gjson.Parse(bytesString(s.B[start-1 : end+1])).Str, true
	}
	return bytesString(s.B[start:end]), true
}
