package tokens

import (
	"slices"
	"testing"
)

// TestClassTable checks the class table, built from the unicode range
// tables, against runeClass, which asks the unicode package rune by rune.
func TestClassTable(t *testing.T) {
	tab := classes()
	bad := 0
	for r := range rune(tableRunes) {
		if got, want := tab[r], runeClass(r); got != want && bad < 10 {
			t.Errorf("class of %U: got %06b, want %06b", r, got, want)
			bad++
		}
	}
}

// TestPieces pins the pieces of inputs whose splitting turns on the
// patterns' backtracking and on the differences between the encodings.
func TestPieces(t *testing.T) {
	tests := []struct {
		name string
		enc  Encoding
		text string
		want []string
	}{
		{"space joins word", O200k, "a  b", []string{"a", " ", " b"}},
		{"trailing spaces", O200k, "a  ", []string{"a", "  "}},
		{"space joins punctuation", CL100k, "x  !!", []string{"x", " ", " !!"}},
		{"newlines after punctuation o200k", O200k, "a.\n/\nb", []string{"a", ".\n/\n", "b"}},
		{"newlines after punctuation cl100k", CL100k, "a.\n/\nb", []string{"a", ".\n", "/\n", "b"}},
		{"whitespace to last newline", O200k, " \n \n  x", []string{" \n \n", " ", " x"}},
		{"digits in threes", CL100k, "12345", []string{"123", "45"}},
		{"contraction o200k joins word", O200k, "it's", []string{"it's"}},
		{"contraction cl100k apart", CL100k, "it's", []string{"it", "'s"}},
		{"contraction case", O200k, "IT'S", []string{"IT'S"}},
		{"camel case o200k", O200k, "HTTPServer", []string{"HTTPServer"}},
		{"camel case lower first o200k", O200k, "parseJSONBody", []string{"parse", "JSONBody"}},
		{"upper run gives back a modifier", O200k, "AʰB1", []string{"Aʰ", "B", "1"}},
		{"tab prefix", CL100k, "\tword", []string{"\tword"}},
		{"mark prefix cl100k", CL100k, "e\u0301t", []string{"e", "\u0301t"}},
		{"mark in word o200k", O200k, "e\u0301t", []string{"e\u0301t"}},
		{"unicode space run", O200k, "a\u00a0\u00a0b", []string{"a", "\u00a0", "\u00a0b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pieces(tt.enc, tt.text); !slices.Equal(got, tt.want) {
				t.Errorf("pieces of %q: got %q, want %q", tt.text, got, tt.want)
			}
			checkExact(t, tt.enc, tt.text)
		})
	}
}
