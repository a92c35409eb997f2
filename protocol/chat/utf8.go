package chat

import (
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// invalidUTF8 returns the error for a body that is valid JSON but not valid
// UTF-8 (gjson does not check strings' encoding). Stored as it came, such a
// body would be replayed upstream with every later request, so it is
// rejected up front. The error names the innermost value of "messages"
// holding the first invalid byte, or no parameter when that byte lies
// outside messages. This is the failure path: it may walk and allocate.
func invalidUTF8(doc string, root gjson.Result) *Error {
	off := firstInvalidUTF8(doc)
	param := ""
	root.ForEach(func(key, value gjson.Result) bool {
		if !holds(doc, value, off) {
			return true
		}
		if key.Str == "messages" {
			param = pathTo(doc, "messages", value, off)
		}
		return false
	})
	if param == "" {
		return &Error{
			Message: "We could not parse the JSON body of your request. The API expects a JSON payload encoded as UTF-8, but what was sent was not valid UTF-8.",
			Code:    "invalid_json",
		}
	}
	return &Error{
		Message: "Invalid '" + param + "': the text is not valid UTF-8.",
		Param:   param,
		Code:    "invalid_value",
	}
}

// pathTo descends from v, named param, to the innermost value holding
// byte off of doc and returns its name, like "messages[2].content[0].text".
// When the byte is in an object's key, the object is named. Every key on
// the way precedes off, so it is valid UTF-8 and safe to put in a message.
func pathTo(doc, param string, v gjson.Result, off int) string {
	for {
		isArray := v.IsArray()
		if !isArray && !v.IsObject() {
			return param
		}
		var next gjson.Result
		i := 0
		v.ForEach(func(key, value gjson.Result) bool {
			if holds(doc, value, off) {
				next = value
				if isArray {
					param = index(param, i)
				} else {
					param += "." + key.Str
				}
				return false
			}
			i++
			return true
		})
		if !next.Exists() {
			return param
		}
		v = next
	}
}

// holds reports whether v's raw JSON, a substring of doc, covers byte off.
func holds(doc string, v gjson.Result, off int) bool {
	start := offsetIn(doc, v.Raw)
	return off >= start && off < start+len(v.Raw)
}

// firstInvalidUTF8 returns the offset of the first byte of s that is not
// part of a valid UTF-8 sequence, or len(s).
func firstInvalidUTF8(s string) int {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(s)
}
