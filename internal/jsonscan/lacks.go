package jsonscan

import "bytes"

// escapeU starts the only escape that can spell a letter, a digit or an
// underscore.
var escapeU = []byte(`\u`)

// Lacks reports whether no string in doc, a JSON document, can end in
// tail's text: tail is the end of a JSON string with its closing quote,
// ASCII letters, digits and underscores before it (`_result"` for the
// type "tool_result"), and doc holds it nowhere and has no \u escape that
// could spell it otherwise. A false answer decides nothing. It lets a
// reader skip parsing a stored message that cannot hold the key or the
// type it looks for, as most cannot. A tail that starts at an underscore
// is found fastest: the search stops at each of its first byte, and
// every string starts with a quote, as text is full of letters.
func Lacks(doc, tail []byte) bool {
	return !bytes.Contains(doc, tail) && !bytes.Contains(doc, escapeU)
}
