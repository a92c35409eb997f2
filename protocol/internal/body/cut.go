package body

import (
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// CutText cuts s to max characters (runes) and appends, on a line of its
// own, the marker made from the kept and total character counts: a tool
// result's text as wire.Codec's CutResults cuts it. It reports false, and
// returns s, when s is not longer than max.
func CutText(s string, max int, marker func(kept, total int) string) (string, bool) {
	if len(s) <= max { // no more runes than bytes
		return s, false
	}
	total := utf8.RuneCountInString(s)
	if total <= max {
		return s, false
	}
	at, n := 0, 0
	for at < len(s) && n < max {
		_, size := utf8.DecodeRuneInString(s[at:])
		at += size
		n++
	}
	return s[:at] + "\n" + marker(max, total), true
}

// Replace returns s, the raw JSON of a value that starts at offset base
// of the document v was parsed from, with v (a value inside it) replaced
// by repl. It panics when v does not stand in s at that offset.
func Replace(s string, base int, v gjson.Result, repl string) string {
	at := v.Index - base
	if at < 0 || at+len(v.Raw) > len(s) || s[at:at+len(v.Raw)] != v.Raw {
		panic("body: replace of a value outside its document")
	}
	return s[:at] + repl + s[at+len(v.Raw):]
}
