// Package jsonscan walks a JSON document in one pass, without allocating
// and without building a tree: the primitives the protocol packages'
// one-pass request checks are made of (chat.CheckRequest, the Messages
// API's ParseRequest). Each check walks its objects and arrays with
// Object and Array, reads the members it knows and skips the others with
// Value; every method reports false, leaving I anywhere, as soon as the
// document is not what the caller can decide (invalid JSON among it),
// and the caller then falls back to its full parser, which names the
// error.
//
// What Scanner accepts is valid JSON (RFC 8259, UTF-8 strings), nested no
// deeper than the depth its caller passes down.
package jsonscan

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// Scanner is a position I in a document B.
type Scanner struct {
	B []byte
	I int
}

// Kinds of JSON value, as Value reports them.
const (
	KindString = iota
	KindNumber
	KindTrue
	KindFalse
	KindNull
	KindObject
	KindArray
)

// Space skips white space.
func (s *Scanner) Space() {
	// A byte past the space is never white space: one comparison for
	// the byte after most tokens of a compact document.
	for s.I < len(s.B) && s.B[s.I] <= ' ' {
		switch s.B[s.I] {
		case ' ', '\t', '\n', '\r':
			s.I++
		default:
			return
		}
	}
}

// Next skips white space and consumes c if it comes next.
func (s *Scanner) Next(c byte) bool {
	s.Space()
	if s.I < len(s.B) && s.B[s.I] == c {
		s.I++
		return true
	}
	return false
}

// At skips white space and reports whether c comes next, without
// consuming it.
func (s *Scanner) At(c byte) bool {
	s.Space()
	return s.I < len(s.B) && s.B[s.I] == c
}

// Str consumes a string and returns its contents' bounds, and whether it
// holds an escape.
func (s *Scanner) Str() (start, end int, escaped, ok bool) {
	if s.I >= len(s.B) || s.B[s.I] != '"' {
		return 0, 0, false, false
	}
	s.I++
	start = s.I
	for s.I < len(s.B) {
		s.I = PlainRun(s.B, s.I)
		if s.I == len(s.B) {
			break
		}
		c := s.B[s.I]
		switch {
		case c == '"':
			s.I++
			return start, s.I - 1, escaped, true
		case c < 0x20:
			return 0, 0, false, false
		case c == '\\':
			escaped = true
			if s.I+1 >= len(s.B) {
				return 0, 0, false, false
			}
			switch s.B[s.I+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.I += 2
			case 'u':
				if s.I+5 >= len(s.B) || !isHexDigit(s.B[s.I+2]) || !isHexDigit(s.B[s.I+3]) || !isHexDigit(s.B[s.I+4]) || !isHexDigit(s.B[s.I+5]) {
					return 0, 0, false, false
				}
				s.I += 6
			default:
				return 0, 0, false, false
			}
		case c < utf8.RuneSelf:
			s.I++
		default:
			r, n := utf8.DecodeRune(s.B[s.I:])
			if r == utf8.RuneError && n == 1 {
				return 0, 0, false, false
			}
			s.I += n
		}
	}
	return 0, 0, false, false
}

// PlainRun returns the index of the first byte of b at or after i that
// is not plainByte (len(b) for none), eight bytes a step: a message's
// content is most of a request's bytes.
func PlainRun(b []byte, i int) int {
	const ones, high = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q, bs := x^(ones*'"'), x^(ones*'\\')
		// A byte's high bit set in m: under 0x20, the quote, the
		// backslash (each a zero byte after the xor) or non-ASCII. A
		// borrow can flag a byte after a flagged one, never before: the
		// lowest flag is the first such byte.
		m := ((x-ones*0x20)&^x | (q-ones)&^q | (bs-ones)&^bs | x) & high
		if m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for i < len(b) && plainByte[b[i]] {
		i++
	}
	return i
}

// plainByte marks the bytes a string holds as they are: printable ASCII
// but for the quote and the backslash.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// Value consumes any JSON value, opening at most depth levels more (0:
// none allowed), and returns its kind.
func (s *Scanner) Value(depth int) (int, bool) {
	s.Space()
	if s.I >= len(s.B) {
		return 0, false
	}
	switch c := s.B[s.I]; {
	case c == '"':
		_, _, _, ok := s.Str()
		return KindString, ok
	case c == '{' || c == '[':
		kind := KindArray
		if c == '{' {
			kind = KindObject
		}
		if depth > maxSkipDepth {
			return kind, s.nest(depth)
		}
		return kind, s.skip(depth)
	case c == 't':
		return KindTrue, s.literal("true")
	case c == 'f':
		return KindFalse, s.literal("false")
	case c == 'n':
		return KindNull, s.literal("null")
	default:
		return KindNumber, s.number()
	}
}

// maxSkipDepth is the deepest nesting skip follows: one bit a level.
const maxSkipDepth = 256

// skip consumes the object or array at I, opening at most depth levels
// (depth at most maxSkipDepth), in one loop that keeps which of the open
// levels are objects in a bit each: the values a walk skips are most of
// what a one-pass check reads (a Response's output and settings, an
// event's item), and skipping them by a call and a closure a level
// cost more than reading them.
func (s *Scanner) skip(depth int) bool {
	var objects [maxSkipDepth / 64]uint64 // bit l: level l is an object
	n := 0                                // levels open
	for {
		// A value at I, white space skipped.
		if s.I >= len(s.B) {
			return false
		}
		switch c := s.B[s.I]; c {
		case '{', '[':
			if n == depth {
				return false
			}
			s.I++
			if c == '{' {
				objects[n>>6] |= 1 << (n & 63)
				if !s.Next('}') {
					n++
					if !s.name() {
						return false
					}
					continue // the first member's value
				}
			} else {
				objects[n>>6] &^= 1 << (n & 63)
				if !s.Next(']') {
					n++
					s.Space()
					continue // the first element
				}
			}
			// Empty: a value that ended, as a scalar.
		case '"':
			if _, _, _, ok := s.Str(); !ok {
				return false
			}
		case 't':
			if !s.literal("true") {
				return false
			}
		case 'f':
			if !s.literal("false") {
				return false
			}
		case 'n':
			if !s.literal("null") {
				return false
			}
		default:
			if !s.number() {
				return false
			}
		}
		// A value ended: close the levels that end after it, up to the
		// next value.
		for {
			if n == 0 {
				return true
			}
			l := n - 1
			object := objects[l>>6]&(1<<(l&63)) != 0
			if s.Next(',') {
				if object {
					if !s.name() {
						return false
					}
				} else {
					s.Space()
				}
				break
			}
			end := byte(']')
			if object {
				end = '}'
			}
			if !s.Next(end) {
				return false
			}
			n--
		}
	}
}

// name consumes white space, a member's name (escapes and all, as Value
// reads names), the colon after it and the white space after that.
func (s *Scanner) name() bool {
	s.Space()
	if _, _, _, ok := s.Str(); !ok {
		return false
	}
	if !s.Next(':') {
		return false
	}
	s.Space()
	return true
}

// nest is skip for nesting past maxSkipDepth: a walk a level.
func (s *Scanner) nest(depth int) bool {
	if depth <= 0 {
		return false
	}
	next := func() bool {
		_, ok := s.Value(depth - 1)
		return ok
	}
	if s.B[s.I] == '{' {
		return s.object(true, func([]byte) bool { return next() })
	}
	_, ok := s.Array(func(int) bool { return next() })
	return ok
}

func (s *Scanner) literal(word string) bool {
	if len(s.B)-s.I < len(word) || string(s.B[s.I:s.I+len(word)]) != word {
		return false
	}
	s.I += len(word)
	return true
}

// number consumes a number of RFC 8259's grammar.
func (s *Scanner) number() bool {
	if s.I < len(s.B) && s.B[s.I] == '-' {
		s.I++
	}
	switch {
	case s.I >= len(s.B):
		return false
	case s.B[s.I] == '0':
		s.I++
	case '1' <= s.B[s.I] && s.B[s.I] <= '9':
		s.digits()
	default:
		return false
	}
	if s.I < len(s.B) && s.B[s.I] == '.' {
		s.I++
		if !s.digits() {
			return false
		}
	}
	if s.I < len(s.B) && (s.B[s.I] == 'e' || s.B[s.I] == 'E') {
		s.I++
		if s.I < len(s.B) && (s.B[s.I] == '+' || s.B[s.I] == '-') {
			s.I++
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

// digits consumes one or more digits.
func (s *Scanner) digits() bool {
	start := s.I
	for s.I < len(s.B) && '0' <= s.B[s.I] && s.B[s.I] <= '9' {
		s.I++
	}
	return s.I > start
}
