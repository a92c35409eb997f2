package jsonscan

import "bytes"

// escapeU starts the only escape that can spell a letter, a digit or an
// underscore.
var escapeU = []byte(`\u`)

// Lacks reports whether no string in doc, a JSON document, can read as
// quoted's text: quoted is a JSON string with its quotes ("tool_use"),
// its text ASCII letters, digits and underscores, and doc holds it
// nowhere and has no \u escape that could spell it otherwise. A false
// answer decides nothing. It lets a reader skip parsing a stored message
// that cannot hold the key or the type it looks for, as most cannot.
func Lacks(doc, quoted []byte) bool {
	return !bytes.Contains(doc, quoted) && !bytes.Contains(doc, escapeU)
}
