package chat

import (
	"bytes"
	"errors"
)

// MaxDepth is the deepest nesting of arrays and objects this package
// accepts in a JSON document, the bound JSON encoders commonly use. gjson's
// validator recurses once per level, so without a bound a body of a few
// million "[" overflows the goroutine stack and kills the process.
const MaxDepth = 256

// ErrTooDeep is returned by [CheckDepth], [ParseReply] and [Assembler.Add]
// for JSON nested more than [MaxDepth] levels.
var ErrTooDeep = errors.New("chat: JSON nested more than 256 levels")

// CheckDepth returns [ErrTooDeep] if b, read as JSON, nests arrays and
// objects more than [MaxDepth] levels deep, and nil otherwise. It counts
// "[" and "{" against "]" and "}" outside strings, skipping escaped
// characters inside them, in linear time without recursion or allocation,
// and checks nothing else: call it on untrusted input before any recursive
// parser such as gjson.Valid, which still has to reject what is not JSON.
func CheckDepth(b []byte) error {
	// A document with no more opening brackets in all than MaxDepth
	// cannot nest deeper. Counting them is vectorised, some twenty times
	// faster than the scan below, which then runs only on documents with
	// many brackets: large request bodies, not stream chunks.
	if bytes.Count(b, openBrace)+bytes.Count(b, openBracket) <= MaxDepth {
		return nil
	}
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '[', '{':
			depth++
			if depth > MaxDepth {
				return ErrTooDeep
			}
		case ']', '}':
			depth--
		case '"':
			i = stringEnd(b, i+1)
		}
	}
	return nil
}

var openBrace, openBracket = []byte("{"), []byte("[")

// stringEnd returns the index of the quote closing the JSON string whose
// contents start at b[start], or len(b) if it is not closed.
//
// Most strings in chat JSON are short keys and values, so their first
// bytes are scanned one at a time; past that, bytes.IndexByte finds the
// next quote, which is escaped when an odd number of backslashes precede
// it. Counting them back visits each backslash at most once in all, so the
// scan stays linear.
func stringEnd(b []byte, start int) int {
	i := start
	for end := min(len(b), start+16); i < end; i++ {
		switch b[i] {
		case '"':
			return i
		case '\\':
			i++ // the escaped byte
		}
	}
	// b[i] is not escaped: every backslash before it was consumed above.
	for i < len(b) {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			break
		}
		q += i
		n := 0
		for q-n-1 >= i && b[q-n-1] == '\\' {
			n++
		}
		if n%2 == 0 {
			return q
		}
		i = q + 1
	}
	return len(b)
}
