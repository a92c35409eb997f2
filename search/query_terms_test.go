package search_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/recallproxy/recall/search"
)

// A query's cost follows its terms: past MaxQueryTerms distinct ones,
// the rest are left out (repeats do not count against the bound).
func TestQueryTermsAreBounded(t *testing.T) {
	var words, want []string
	for i := range 30 {
		w := fmt.Sprint("w", i)
		words = append(words, w, w)
		if i < search.MaxQueryTerms {
			want = append(want, w)
		}
	}
	if got := search.QueryTerms(strings.Join(words, " ")); !slices.Equal(got, want) {
		t.Errorf("got %d terms %q, want the first %d distinct: %q", len(got), got, search.MaxQueryTerms, want)
	}
}
