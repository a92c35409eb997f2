package history

import (
	"math/rand/v2"
	"testing"
)

// addGap keeps the gaps sorted, disjoint and merged, and gives every
// sequence number the flags a naive model gives it.
func TestAddGapMatchesAModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trace := range 500 {
		var m Meta
		model := make([]Flags, 64)
		for range 1 + r.IntN(12) {
			from := uint64(1 + r.IntN(60))
			to := from + uint64(r.IntN(8))
			f := []Flags{Superseded, Forgotten}[r.IntN(2)]
			m.addGap(from, to, f)
			for s := from; s <= to && s < uint64(len(model)); s++ {
				model[s] |= f
			}
		}
		for i, g := range m.Gaps {
			if g.From > g.To || (i > 0 && m.Gaps[i-1].To >= g.From) {
				t.Fatalf("trace %d: gaps %v not sorted and disjoint", trace, m.Gaps)
			}
			if i > 0 && m.Gaps[i-1].To+1 == g.From && m.Gaps[i-1].Flags == g.Flags {
				t.Fatalf("trace %d: gaps %v: neighbours with the same flags not merged", trace, m.Gaps)
			}
		}
		for s := uint64(1); s < uint64(len(model)); s++ {
			if got := m.FlagsAt(s); got != model[s] {
				t.Fatalf("trace %d: seq %d: got flags %b, want %b (gaps %v)", trace, s, got, model[s], m.Gaps)
			}
		}
	}
}
