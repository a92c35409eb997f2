package body

import (
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/jsonscan"
	"github.com/recallproxy/recall/wire"
)

// Member is a member of a JSON object whose value is a string.
type Member struct {
	Name  string // as written: StringMembers reads no name with an escape
	Value string // unescaped, as gjson reads the string
}

// StringMembers appends to dst the members of raw, in order, when raw is
// a JSON object (white space around it allowed) whose every member has a
// string value and a name without escapes: the shape most stored
// messages have ({"role":"user","content":"…"}), read in one strict pass
// (jsonscan) where gjson's lookups would walk the object and its long
// text once per member looked up. ok is false for anything else, invalid
// JSON included, which the caller reads as before. Names and values
// without escapes alias raw; an escaped value is a copy. The first of
// duplicate members is the one gjson's Get finds.
func StringMembers(dst []Member, raw []byte) (members []Member, ok bool) {
	s := jsonscan.Scanner{B: raw}
	s.Space()
	ok = s.Object(func(name []byte) bool {
		v, ok := ScanString(&s)
		if ok {
			dst = append(dst, Member{Name: bytesString(name), Value: v})
		}
		return ok
	})
	s.Space()
	return dst, ok && s.I == len(raw)
}

// ScanString consumes the string at s.I and returns its value, unescaped
// as gjson reads it: s.B's own bytes when it holds no escape, else a
// copy.
func ScanString(s *jsonscan.Scanner) (string, bool) {
	start, end, escaped, ok := s.Str()
	if !ok {
		return "", false
	}
	if escaped {
		return gjson.Parse(bytesString(s.B[start-1 : end+1])).Str, true
	}
	return bytesString(s.B[start:end]), true
}

// Lookup returns the value of the first member called name, and whether
// there is one.
func Lookup(members []Member, name string) (string, bool) {
	for _, m := range members {
		if m.Name == name {
			return m.Value, true
		}
	}
	return "", false
}

// bytesString returns a string sharing b's memory.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// TextPass is a protocol's one-pass read of a message whose content is
// text (a string, or parts or blocks of text): it calls text with each
// text in order and returns the message's canonical role. ok is false
// for a message it does not read so, which the protocol reads with
// gjson; text may have been called by then.
type TextPass func(raw []byte, text func(string)) (role string, ok bool)

// DecodeTexts is Decode of a message pass reads: its role and a text
// part for each text.
func DecodeTexts(pass TextPass, raw []byte) (m wire.Message, ok bool) {
	m.Role, ok = pass(raw, func(text string) {
		m.Parts = append(m.Parts, wire.Part{Kind: wire.Text, Text: text})
	})
	if !ok {
		return wire.Message{}, false
	}
	return m, true
}

// AppendTexts is Text of a message pass reads: its texts appended to dst
// a line each (wire.AppendLine). When pass does not read raw, it returns
// dst as it was given (its length; bytes past it may have been written)
// and false.
func AppendTexts(pass TextPass, dst, raw []byte) ([]byte, bool) {
	n := len(dst)
	if _, ok := pass(raw, func(text string) { dst = wire.AppendLine(dst, text) }); !ok {
		return dst[:n], false
	}
	return dst, true
}
