package body

import (
	"strconv"
	"testing"

	"github.com/tidwall/gjson"
)

// TestCutText: a text longer than max characters keeps its first max
// characters (runes, never a rune's bytes apart) and the marker on a line
// of its own; a text of max characters or fewer, bytes aside, is not cut.
func TestCutText(t *testing.T) {
	marker := func(kept, total int) string { return "[" + strconv.Itoa(kept) + " of " + strconv.Itoa(total) + "]" }
	for _, tt := range []struct {
		name, s string
		max     int
		want    string
		cut     bool
	}{
		{"shorter", "abc", 5, "abc", false},
		{"exactly max", "abcde", 5, "abcde", false},
		{"longer", "abcdefg", 5, "abcde\n[5 of 7]", true},
		{"more bytes than max, not more runes", "ééé", 3, "ééé", false},
		{"cut between runes", "éééé", 3, "ééé\n[3 of 4]", true},
		{"max zero", "ab", 0, "\n[0 of 2]", true},
		{"empty", "", 0, "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, cut := CutText(tt.s, tt.max, marker)
			if got != tt.want || cut != tt.cut {
				t.Errorf("CutText(%q, %d): got %q, %v; want %q, %v", tt.s, tt.max, got, cut, tt.want, tt.cut)
			}
		})
	}
}

// TestReplace: a value inside a document, or inside one of its values
// at that value's offset, is replaced where it stands; a value that does
// not stand there is a bug, and panics.
func TestReplace(t *testing.T) {
	doc := `{"a":{"b":[1,2]},"c":3}`
	a := gjson.Get(doc, "a")
	b := a.Get("b")
	if got, want := Replace(doc, 0, b, "[]"), `{"a":{"b":[]},"c":3}`; got != want {
		t.Errorf("in the document: got %s, want %s", got, want)
	}
	if got, want := Replace(a.Raw, a.Index, b, `"x"`), `{"b":"x"}`; got != want {
		t.Errorf("in a value at its offset: got %s, want %s", got, want)
	}
	defer func() {
		if recover() == nil {
			t.Error("a value outside the document: got no panic, want one")
		}
	}()
	Replace(a.Raw, 0, b, "[]")
}
