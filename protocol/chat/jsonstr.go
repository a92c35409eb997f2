package chat

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
	"unsafe"
)

const hexDigits = "0123456789abcdef"

// appendQuoted appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// with encoding/json; HTML characters are left alone.
func appendQuoted(dst []byte, s string) []byte { return appendEscaped(dst, s, false) }

// appendStringified appends s as a JSON string the way sjson writes a
// string value: as it is when every byte is printable ASCII but the
// quote and the backslash, else as encoding/json marshals it.
func appendStringified(dst []byte, s string) []byte {
	if escapeFree(s, 0, false) < len(s) {
		return appendMarshaled(dst, s)
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// appendMarshaled appends s as encoding/json marshals it: HTML characters
// and control characters escaped (\b, \f, \n, \r and \t by name), invalid
// UTF-8 as U+FFFD, the line and paragraph separators escaped.
func appendMarshaled(dst []byte, s string) []byte { return appendEscaped(dst, s, true) }

// appendEscaped appends s as a JSON string: quote, backslash and control
// characters escaped (\n, \r and \t by name; also \b and \f, and the HTML
// characters <, > and &, when marshal is set, as encoding/json does),
// invalid UTF-8 as U+FFFD, the line and paragraph separators escaped.
func appendEscaped(dst []byte, s string, marshal bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if i = escapeFree(s, i, marshal); i == len(s) {
			break
		}
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && (!marshal || b != '<' && b != '>' && b != '&') {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch {
			case b == '"' || b == '\\':
				dst = append(dst, '\\', b)
			case b == '\n':
				dst = append(dst, '\\', 'n')
			case b == '\r':
				dst = append(dst, '\\', 'r')
			case b == '\t':
				dst = append(dst, '\\', 't')
			case marshal && b == '\b':
				dst = append(dst, '\\', 'b')
			case marshal && b == '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// escapeFree returns the index of the first byte of s at or after i that
// appendEscaped does not copy as it is (len(s) for none): a control
// character, the quote, the backslash, a byte past ASCII and, when
// marshal, the HTML characters. It reads eight bytes a step: the
// summariser's transcripts and a bridged request's texts are kilobytes of
// prose, which a byte at a time escaped at about two nanoseconds a byte.
func escapeFree(s string, i int, marshal bool) int {
	const ones, high = 0x0101010101010101, 0x8080808080808080
	if i+8 <= len(s) {
		b := unsafe.Slice(unsafe.StringData(s), len(s))
		for ; i+8 <= len(b); i += 8 {
			x := binary.LittleEndian.Uint64(b[i:])
			q, bs := x^(ones*'"'), x^(ones*'\\')
			// A byte's high bit set in m: under 0x20, one of the bytes
			// escaped (each a zero byte after its xor) or non-ASCII. A
			// borrow can flag a byte after a flagged one, never before:
			// the lowest flag is the first such byte.
			m := (x-ones*0x20)&^x | (q-ones)&^q | (bs-ones)&^bs | x
			if marshal {
				lt, gt, amp := x^(ones*'<'), x^(ones*'>'), x^(ones*'&')
				m |= (lt-ones)&^lt | (gt-ones)&^gt | (amp-ones)&^amp
			}
			if m &= high; m != 0 {
				return i + bits.TrailingZeros64(m)/8
			}
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || marshal && (c == '<' || c == '>' || c == '&') {
			return i
		}
	}
	return i
}
