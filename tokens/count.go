package tokens

import (
	"unicode/utf8"
	"unsafe"
)

// Bounds on the work of one count. Pre-tokenising is linear in the text
// and byte-pair merging is O(n log n) in the length n of one piece, but a
// piece may be the whole text (100 KB of spaces or of one letter is one
// piece), and the merge's scratch space grows with it. So pieces longer
// than maxPiece are merged maxPiece bytes at a time, and at most maxText
// bytes of a string are tokenised at all.
const (
	// maxPiece is the longest piece merged at once; longer pieces are cut
	// at rune boundaries, which may miscount a token or so per cut. Real
	// text stays far below it (a long CJK sentence without punctuation is
	// one o200k piece of a few hundred bytes), so its counts are exact.
	maxPiece = 1 << 10
	// maxText is the most bytes of one string counted exactly; the rest is
	// estimated at four bytes a token.
	maxText = 256 << 10
)

// Counter counts tokens with the package's shared, lazily built
// vocabularies. The zero value is ready to use and a Counter is safe for
// concurrent use.
type Counter struct {
	// onPiece, when set (tests only), sees every piece handed to the
	// byte-pair merge, after any cut at maxPiece.
	onPiece func(piece string)
}

// Text returns the number of tokens of s in enc: exactly what tiktoken's
// EncodeOrdinary returns, for every text whose pre-tokenised pieces are at
// most 1 KiB. Special-token text such as "<|endoftext|>" is counted as
// ordinary text, as the API treats it in message content. Invalid UTF-8
// counts as U+FFFD per bad byte, as in tiktoken-go. At most 256 KiB of s
// are tokenised; the rest is estimated at one token per four bytes,
// rounded up. Text allocates nothing for valid UTF-8 (pieces longer than
// 48 bytes that are not tokens borrow pooled scratch space).
func (c *Counter) Text(enc Encoding, s string) int {
	if s == "" {
		return 0
	}
	v := vocabFor(enc)
	if v == nil {
		return estimate(len(s))
	}
	n := 0
	if len(s) > maxText {
		k := runeFloor(s, maxText)
		n += estimate(len(s) - k)
		s = s[:k]
	}
	if !utf8.ValidString(s) {
		// tiktoken-go tokenises []rune(s): each invalid byte becomes
		// U+FFFD, three bytes in the pieces it merges.
		s = string([]rune(s))
	}
	sp := splitter{s: s, tab: v.classes}
	for i := 0; i < len(s); {
		var j int
		if v.o200k {
			j = sp.nextO200k(i)
		} else {
			j = sp.nextCL100k(i)
		}
		n += c.piece(v, s[i:j])
		i = j
	}
	return n
}

// piece counts one piece, maxPiece bytes at a time.
func (c *Counter) piece(v *vocab, p string) int {
	n := 0
	for len(p) > maxPiece {
		k := runeFloor(p, maxPiece)
		n += c.piece(v, p[:k])
		p = p[k:]
	}
	if c.onPiece != nil {
		c.onPiece(p)
	}
	return n + v.count(p)
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
