package plan

import (
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/recallproxy/recall/tokens"
)

// maxTokenBytes bounds the bytes of text FitSummary considers per token of
// room: a longer prefix almost surely counts more (English averages about
// four bytes a token), and tokenising a multi-megabyte text on every try
// would be most of the cost. Text beyond it is cut even if, made of
// unusually long tokens, it would have fitted.
const maxTokenBytes = 16

// FitSummary returns text cut so that its injected message,
// Inject(role, text), counts at most limit tokens, and that count. A text
// that fits is returned whole. A longer one is cut after the last
// sentence that fits (a line, or a sentence ending in ".", "!", "?" or
// "。" followed by a space or a line end), failing that after the last
// word, failing that at a rune boundary. It returns "" and 0 when not
// even an empty summary fits. The summariser bounds every answer with it,
// and curation a stored summary that would not fit beside the current
// turn.
func FitSummary(count Counter, enc tokens.Encoding, role, text string, limit int) (string, int) {
	n := count.Message(enc, Inject(role, text))
	if n <= limit {
		return text, n
	}
	measure := func(end int) int { return count.Message(enc, Inject(role, text[:end])) }
	empty := measure(0)
	if empty >= limit {
		return "", 0
	}
	text = text[:runeFloor(text, min(len(text), (limit-empty)*maxTokenBytes))]
	for _, ends := range [](func(string) []int){sentenceEnds, wordEnds, runeEnds} {
		if end, n, ok := lastFit(ends(text), measure, limit); ok {
			return text[:end], n
		}
	}
	return "", 0
}

// lastFit binary-searches ends (ascending) for the last one whose prefix
// measures at most limit. Counts grow with the prefix almost always (a
// longer prefix can merge into fewer tokens by one or two), so the end it
// returns fits, if not always the very last that would.
func lastFit(ends []int, measure func(int) int, limit int) (end, n int, ok bool) {
	i := sort.Search(len(ends), func(i int) bool { return measure(ends[i]) > limit })
	for i--; i >= 0; i-- {
		if n := measure(ends[i]); n <= limit {
			return ends[i], n, true
		}
	}
	return 0, 0, false
}

// sentenceEnds returns the ends of s's sentences and lines, ascending
// (trailing spaces of a line left out).
func sentenceEnds(s string) []int {
	var ends []int
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\n':
			if end := len(strings.TrimRight(s[:i], " \t\r")); end > 0 && (len(ends) == 0 || ends[len(ends)-1] < end) {
				ends = append(ends, end)
			}
		case (c == '.' || c == '!' || c == '?') && i+1 < len(s) && (s[i+1] == ' ' || s[i+1] == '\n'):
			ends = append(ends, i+1)
		case c == 0xE3 && strings.HasPrefix(s[i:], "。"):
			ends = append(ends, i+len("。"))
		}
	}
	return ends
}

// wordEnds returns the ends of s's words, ascending.
func wordEnds(s string) []int {
	var ends []int
	for i := 1; i < len(s); i++ {
		if s[i] == ' ' && s[i-1] != ' ' {
			ends = append(ends, i)
		}
	}
	return ends
}

// runeEnds returns every rune boundary of s after the first rune.
func runeEnds(s string) []int {
	var ends []int
	for i := 1; i < len(s); i++ {
		if utf8.RuneStart(s[i]) {
			ends = append(ends, i)
		}
	}
	return ends
}

// runeFloor returns the largest index j <= n at which a rune of s starts
// (or len(s)), so that s[:j] does not split a rune.
func runeFloor(s string, n int) int {
	if n >= len(s) {
		return len(s)
	}
	for j := n; j > 0 && j > n-utf8.UTFMax; j-- {
		if utf8.RuneStart(s[j]) {
			return j
		}
	}
	return n
}
