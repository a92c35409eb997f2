package canonjson

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// AppendUnescaped appends the value of the JSON string literal raw (quotes
// included) exactly as encoding/json decodes it: a surrogate escape that is
// not half of a valid pair becomes U+FFFD, as does a byte of invalid UTF-8.
// (gjson's own unescaping differs for invalid surrogates.)
func AppendUnescaped(buf []byte, raw string) []byte {
	if len(raw) < 2 {
		return buf
	}
	s := raw[1 : len(raw)-1]
	if strings.IndexByte(s, '\\') < 0 && utf8.ValidString(s) {
		return append(buf, s...) // nothing to decode; both scans are word-at-a-time
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
		case c < utf8.RuneSelf:
			j := i + 1
			for j < len(s) && s[j] != '\\' && s[j] < utf8.RuneSelf {
				j++
			}
			buf = append(buf, s[i:j]...)
			i = j
			continue
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				buf = utf8.AppendRune(buf, utf8.RuneError)
			} else {
				buf = append(buf, s[i:i+size]...)
			}
			i += size
			continue
		}
		if i+1 >= len(s) {
			return append(buf, c)
		}
		i += 2
		switch e := s[i-1]; e {
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r := hex4(s[i:])
			if r < 0 {
				buf = append(buf, '\\', 'u')
				continue
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
					r2 = hex4(s[i+2:])
				}
				if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
					r = d
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			buf = utf8.AppendRune(buf, r)
		default: // '"', '\\', '/', and anything invalid JSON would not have
			buf = append(buf, e)
		}
	}
	return buf
}

// hex4 decodes the four hex digits at the start of s, or returns -1.
func hex4(s string) rune {
	if len(s) < 4 {
		return -1
	}
	var r rune
	for _, c := range []byte(s[:4]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}
