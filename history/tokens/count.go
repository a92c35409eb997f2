package tokens

import (
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// Bounds on the work of one count. tiktoken-go's byte-pair merge is
// quadratic in the length of one pre-tokenised piece (100 KB of spaces is a
// single piece and takes seconds), so text is handed to the encoder in
// chunks that end on piece boundaries, and no run without such a boundary
// may exceed maxRun bytes. Runs are what pieces are made of, so every piece
// the encoder merges is at most maxRun bytes: the work is linear in the
// text, O(len·maxRun) in the worst case.
const (
	// maxChunk is the most bytes handed to the encoder at once. Chunks end
	// on exact piece boundaries when the text has them, so for prose the
	// chunked count equals the whole-text count.
	maxChunk = 4 << 10
	// maxRun is the longest stretch without a piece boundary (a run of
	// spaces, of one letter, a base64 blob) counted in one chunk; longer
	// runs are cut at a rune boundary, which may miscount a token or so per
	// cut. Chosen by measurement (BenchmarkTextPathological): 100 KB of
	// spaces takes about 5 ms at 128 and 20 ms at 256.
	maxRun = 128
	// maxText is the most bytes of one string counted exactly; the rest is
	// estimated at four bytes a token.
	maxText = 256 << 10
)

// Counter counts tokens with the package's shared, lazily built encoders.
// The zero value is ready to use and a Counter is safe for concurrent use.
type Counter struct {
	// onChunk, when set (tests only), sees every chunk handed to the encoder.
	onChunk func(chunk string)
}

// Text returns the number of tokens of s in enc. Special-token text such as
// "<|endoftext|>" is counted as ordinary text, as the API treats it in
// message content. At most 256 KiB of s are tokenised; the rest is
// estimated at one token per four bytes, rounded up.
func (c *Counter) Text(enc Encoding, s string) int {
	if s == "" {
		return 0
	}
	tk := encoderFor(enc)
	if tk == nil {
		return estimate(len(s))
	}
	n := 0
	if len(s) > maxText {
		k := runeFloor(s, maxText)
		n += estimate(len(s) - k)
		s = s[:k]
	}
	for s != "" {
		k := cutPoint(s)
		if c.onChunk != nil {
			c.onChunk(s[:k])
		}
		n += len(tk.EncodeOrdinary(s[:k]))
		s = s[k:]
	}
	return n
}

// Bytes is Text for a byte slice, without copying it. b must not be modified
// during the call; it is not retained.
func (c *Counter) Bytes(enc Encoding, b []byte) int {
	return c.Text(enc, bytesString(b))
}

// bytesString views b as a string without copying; the string must not
// outlive a call during which b is unchanged.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// estimate is the fallback count of n bytes: ceil(n/4).
func estimate(n int) int { return (n + 3) / 4 }

// cutPoint returns the length of the next chunk of s: the longest prefix of
// at most maxChunk bytes that ends on a piece boundary and has no run longer
// than maxRun bytes without one. When the first run is itself too long, the
// chunk is that run's first maxRun bytes or so, cut on a rune boundary.
func cutPoint(s string) int {
	if len(s) <= maxRun {
		return len(s)
	}
	safe, run := 0, 0 // last boundary seen, start of the current run
	for i := 1; i <= len(s); i++ {
		if i > maxChunk || i-run > maxRun {
			if safe > 0 {
				return safe
			}
			return runeFloor(s, i-1)
		}
		if i < len(s) && isBoundary(s, i) {
			safe, run = i, i
		}
	}
	return len(s)
}

// isBoundary reports whether a tiktoken piece certainly starts at s[i], for
// both encodings' pre-tokeniser patterns, so that counting s[:i] and s[i:]
// apart gives exactly the tokens of s. Requires 0 < i < len(s). The rules,
// each true of every alternative of both patterns (no piece spans the pair,
// and the piece ending at i-1 ends the same way with or without s[i:]):
//   - a space after a non-space;
//   - a non-space after a line feed;
//   - an ASCII digit after an ASCII character that is neither a digit nor a
//     space (a digit after a space is not: "  7" tokenises differently from
//     "  " and "7");
//   - an ASCII non-digit after an ASCII digit;
//   - ASCII punctuation other than an apostrophe (contractions such as "'s"
//     join the word before them) after an ASCII letter.
//
// The last three keep code, numbers and base64 blobs exact.
func isBoundary(s string, i int) bool {
	c, p := s[i], s[i-1]
	switch {
	case c == ' ':
		if p < utf8.RuneSelf {
			return !asciiSpace(p)
		}
		r, _ := utf8.DecodeLastRuneInString(s[:i])
		return !unicode.IsSpace(r)
	case p == '\n':
		if c < utf8.RuneSelf {
			return !asciiSpace(c)
		}
		r, _ := utf8.DecodeRuneInString(s[i:])
		return !unicode.IsSpace(r)
	case p >= utf8.RuneSelf || c >= utf8.RuneSelf:
		return false
	case isDigit(c):
		return !isDigit(p) && !asciiSpace(p)
	case isDigit(p):
		return true
	default:
		return isLetter(p) && c != '\'' && !isLetter(c) && !asciiSpace(c)
	}
}

func isDigit(b byte) bool  { return '0' <= b && b <= '9' }
func isLetter(b byte) bool { return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' }

// asciiSpace reports whether b is an ASCII character matched by \s.
func asciiSpace(b byte) bool {
	switch b {
	case ' ', '\t', '\n', '\v', '\f', '\r':
		return true
	}
	return false
}

// runeFloor returns the largest index j <= n, within utf8.UTFMax-1 bytes of
// n, at which a rune starts, so that s[:j] does not split a valid rune; n if
// there is none (invalid bytes, which decode one by one anyway). Requires
// 0 < n < len(s).
func runeFloor(s string, n int) int {
	for j := n; j > 0 && j > n-utf8.UTFMax; j-- {
		if utf8.RuneStart(s[j]) {
			return j
		}
	}
	return n
}
