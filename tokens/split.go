package tokens

import (
	"sync"
	"unicode"
	"unicode/utf8"
)

// This file is the pre-tokeniser: it cuts text into the pieces that
// tiktoken-go's split regexes match, one hand-written scanner per encoding.
// The patterns, as tiktoken-go v0.1.8 compiles them with regexp2 (.NET
// semantics: leftmost alternative first, greedy quantifiers that backtrack,
// \s is unicode.IsSpace, \p{..} are Go's unicode tables, (?i) compares
// unicode.ToLower of the input), are
//
//	o200k_base:
//	  [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	| [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	| \p{N}{1,3}
//	| ?[^\s\p{L}\p{N}]+[\r\n/]*
//	| \s*[\r\n]+
//	| \s+(?!\S)
//	| \s+
//
//	cl100k_base:
//	  (?i:'s|'t|'re|'ve|'m|'ll|'d)
//	| [^\r\n\p{L}\p{N}]?\p{L}+
//	| \p{N}{1,3}
//	| ?[^\s\p{L}\p{N}]+[\r\n]*
//	| \s*[\r\n]+
//	| \s+(?!\S)
//	| \s+
//
// The scanners work on valid UTF-8 only (Text converts invalid bytes to
// U+FFFD first, as tiktoken-go's []rune conversion does) and take time
// linear in the text: every backtracking step below rescans at most the run
// the match ends in, and the next match starts at or after that point.

// Character classes, one bit each, of the sets the patterns use.
const (
	cLetter  = 1 << iota // \p{L}
	cNumber              // \p{N}
	cUpper               // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], o200k's "upper" letters
	cLower               // [\p{Ll}\p{Lm}\p{Lo}\p{M}], o200k's "lower" letters
	cSpace               // \s
	cNewline             // \r or \n
)

// Derived sets: a character is in a set when it has none of the bits.
const (
	// notPrefix excludes the optional leading character of the word
	// alternatives, [^\r\n\p{L}\p{N}].
	notPrefix = cNewline | cLetter | cNumber
	// notPunct excludes the punctuation alternative's characters,
	// [^\s\p{L}\p{N}].
	notPunct = cSpace | cLetter | cNumber
)

// tableRunes is how many runes (from U+0000) the class table covers: the
// Basic and Supplementary Multilingual Planes, emoji included. Rarer runes
// are classified with the unicode tables on each use.
const tableRunes = 0x20000

var (
	classOnce  sync.Once
	classTable *[tableRunes]uint8
)

// classes returns the class table, building it on first use (about a
// millisecond).
func classes() *[tableRunes]uint8 {
	classOnce.Do(func() {
		t := new([tableRunes]uint8)
		sets := []struct {
			bit    uint8
			tables []*unicode.RangeTable
		}{
			{cLetter, []*unicode.RangeTable{unicode.L}},
			{cNumber, []*unicode.RangeTable{unicode.N}},
			{cUpper, []*unicode.RangeTable{unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M}},
			{cLower, []*unicode.RangeTable{unicode.Ll, unicode.Lm, unicode.Lo, unicode.M}},
		}
		for _, set := range sets {
			for _, tab := range set.tables {
				markRanges(t, tab, set.bit)
			}
		}
		for r := range rune(tableRunes) {
			if unicode.IsSpace(r) {
				t[r] |= cSpace
			}
		}
		t['\r'] |= cNewline
		t['\n'] |= cNewline
		classTable = t
	})
	return classTable
}

// markRanges sets bit on every rune of tab below tableRunes.
func markRanges(t *[tableRunes]uint8, tab *unicode.RangeTable, bit uint8) {
	for _, r := range tab.R16 {
		for c := rune(r.Lo); c <= rune(r.Hi); c += rune(r.Stride) {
			t[c] |= bit
		}
	}
	for _, r := range tab.R32 {
		for c := rune(r.Lo); c <= rune(r.Hi) && c < tableRunes; c += rune(r.Stride) {
			t[c] |= bit
		}
	}
}

// runeClass classifies r with the unicode tables; the class table holds its
// results for the runes it covers.
func runeClass(r rune) uint8 {
	var c uint8
	if unicode.IsLetter(r) {
		c |= cLetter
	}
	if unicode.IsNumber(r) {
		c |= cNumber
	}
	if unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M) {
		c |= cUpper
	}
	if unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M) {
		c |= cLower
	}
	if unicode.IsSpace(r) {
		c |= cSpace
	}
	if r == '\r' || r == '\n' {
		c |= cNewline
	}
	return c
}

// splitter cuts valid UTF-8 text into pieces.
type splitter struct {
	s   string
	tab *[tableRunes]uint8
}

// class returns the class and the size of the rune at s[i]; i < len(s).
func (sp *splitter) class(i int) (uint8, int) {
	if c := sp.s[i]; c < utf8.RuneSelf {
		return sp.tab[c], 1
	}
	r, n := utf8.DecodeRuneInString(sp.s[i:])
	if r < tableRunes {
		return sp.tab[r], n
	}
	return runeClass(r), n
}

// classBefore returns the class and the size of the rune ending at s[i];
// i > 0.
func (sp *splitter) classBefore(i int) (uint8, int) {
	if c := sp.s[i-1]; c < utf8.RuneSelf {
		return sp.tab[c], 1
	}
	r, n := utf8.DecodeLastRuneInString(sp.s[:i])
	if r < tableRunes {
		return sp.tab[r], n
	}
	return runeClass(r), n
}

// run returns the end of the run of runes from s[i] that have a bit of
// want.
func (sp *splitter) run(i int, want uint8) int {
	for i < len(sp.s) {
		c := sp.s[i]
		if c < utf8.RuneSelf {
			if sp.tab[c]&want == 0 {
				return i
			}
			i++
			continue
		}
		cls, n := sp.class(i)
		if cls&want == 0 {
			return i
		}
		i += n
	}
	return i
}

// contraction returns the length of the contraction at s[i]
// ((?i:'s|'t|'re|'ve|'m|'ll|'d)), or 0.
func (sp *splitter) contraction(i int) int {
	s := sp.s
	if i+1 >= len(s) || s[i] != '\'' {
		return 0
	}
	switch s[i+1] | 0x20 {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if i+2 < len(s) && s[i+2]|0x20 == 'e' {
			return 3
		}
	case 'l':
		if i+2 < len(s) && s[i+2]|0x20 == 'l' {
			return 3
		}
	}
	return 0
}

// nextO200k returns the end of the o200k_base piece starting at s[i].
func (sp *splitter) nextO200k(i int) int {
	c0, n0 := sp.class(i)
	// The two word alternatives, each first with the optional prefix
	// character taken, then without it.
	prefix := c0&notPrefix == 0
	if prefix {
		if j := sp.wordLower(i + n0); j >= 0 {
			return j
		}
	}
	if j := sp.wordLower(i); j >= 0 {
		return j
	}
	if prefix {
		if j := sp.wordUpper(i + n0); j >= 0 {
			return j
		}
	}
	if j := sp.wordUpper(i); j >= 0 {
		return j
	}
	return sp.nextCommon(i, c0, n0, true)
}

// wordLower matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+
// and an optional contraction at s[p], returning its end or -1.
func (sp *splitter) wordLower(p int) int {
	if p >= len(sp.s) {
		return -1
	}
	q := sp.run(p, cUpper)
	start := q
	if q >= len(sp.s) || sp.classOf(q)&cLower == 0 {
		// The greedy upper run gives back runes until one of them can
		// begin the lower run; with none, the alternative fails.
		start = -1
		for k := q; k > p; {
			cls, n := sp.classBefore(k)
			k -= n
			if cls&cLower != 0 {
				start = k
				break
			}
		}
		if start < 0 {
			return -1
		}
	}
	e := sp.run(start, cLower)
	return e + sp.contraction(e)
}

// wordUpper matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*
// and an optional contraction at s[p], returning its end or -1.
func (sp *splitter) wordUpper(p int) int {
	if p >= len(sp.s) {
		return -1
	}
	q := sp.run(p, cUpper)
	if q == p {
		return -1
	}
	e := sp.run(q, cLower)
	return e + sp.contraction(e)
}

// classOf returns the class of the rune at s[i]; i < len(s).
func (sp *splitter) classOf(i int) uint8 {
	c, _ := sp.class(i)
	return c
}

// nextCL100k returns the end of the cl100k_base piece starting at s[i].
func (sp *splitter) nextCL100k(i int) int {
	if n := sp.contraction(i); n > 0 {
		return i + n
	}
	c0, n0 := sp.class(i)
	if c0&notPrefix == 0 && i+n0 < len(sp.s) && sp.classOf(i+n0)&cLetter != 0 {
		return sp.run(i+n0, cLetter)
	}
	if c0&cLetter != 0 {
		return sp.run(i, cLetter)
	}
	return sp.nextCommon(i, c0, n0, false)
}

// nextCommon matches the alternatives both patterns share after the words,
// at s[i] whose rune has class c0 and size n0: digits, punctuation (followed
// by line breaks, and for o200k slashes), then the three whitespace rules.
func (sp *splitter) nextCommon(i int, c0 uint8, n0 int, o200k bool) int {
	s := sp.s
	// \p{N}{1,3}
	if c0&cNumber != 0 {
		j := i + n0
		for k := 1; k < 3 && j < len(s); k++ {
			c, n := sp.class(j)
			if c&cNumber == 0 {
				break
			}
			j += n
		}
		return j
	}
	// ` ?[^\s\p{L}\p{N}]+[\r\n/]*`: a space joins the punctuation after it.
	p := -1
	if c0&notPunct == 0 {
		p = i
	} else if s[i] == ' ' && i+1 < len(s) && sp.classOf(i+1)&notPunct == 0 {
		p = i + 1
	}
	if p >= 0 {
		j := p
		for j < len(s) {
			c, n := sp.class(j)
			if c&notPunct != 0 {
				break
			}
			j += n
		}
		for j < len(s) && (s[j] == '\r' || s[j] == '\n' || o200k && s[j] == '/') {
			j++
		}
		return j
	}
	// Whitespace: the rune at s[i] is a space (every rune is a letter, a
	// number, punctuation in the sense above or a space).
	e := sp.run(i, cSpace)
	// \s*[\r\n]+: up to the last line break of the run.
	for k := e; k > i; k-- {
		if s[k-1] == '\r' || s[k-1] == '\n' {
			return k
		}
	}
	// \s+(?!\S): the run, but its last rune when a non-space follows.
	if e == len(s) {
		return e
	}
	if _, n := sp.classBefore(e); e-n > i {
		return e - n
	}
	// \s+ of one rune.
	return e
}
