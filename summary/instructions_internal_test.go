package summary

import (
	"strconv"
	"testing"

	"github.com/recallproxy/recall/tokens"
)

// Instructions are counted once per text and encoding, with the counter's
// answer, and the kept counts stay bounded.
func TestInstructionsCountedOncePerText(t *testing.T) {
	var counter tokens.Counter
	calls := map[string]int{}
	c := newInstructionCounts(func(enc tokens.Encoding, s string) int {
		calls[string(enc)+"/"+s]++
		return counter.Text(enc, s)
	})
	system := systemPrompt("", true)
	for range 3 {
		if got, want := c.tokens(tokens.O200k, system), counter.Text(tokens.O200k, system); got != want {
			t.Fatalf("got %d tokens, want %d", got, want)
		}
		c.tokens(tokens.CL100k, system)
	}
	if n := calls["o200k_base/"+system]; n != 1 {
		t.Errorf("o200k: counted %d times, want once", n)
	}
	if n := calls["cl100k_base/"+system]; n != 1 {
		t.Errorf("cl100k: counted %d times, want once", n)
	}
	for i := range 3 * maxInstructionCounts {
		c.tokens(tokens.O200k, system+strconv.Itoa(i))
	}
	if n := len(c.counts); n > maxInstructionCounts {
		t.Errorf("%d counts kept, want at most %d", n, maxInstructionCounts)
	}
}
