package summary

import (
	"sync"

	"github.com/recallproxy/recall/tokens"
)

// maxInstructionCounts bounds the instruction counts a Manager keeps.
const maxInstructionCounts = 64

// instructionCounts counts the instructions jobs send (their system
// prompts) once per text and encoding. A tenant has a few (with an
// episode title and without, and the compaction's), and counting them
// for every call and again for its exchange record was a
// visible share of the proxy's core in a streamed open-loop row. At most maxInstructionCounts are kept: a
// reload that changes prompts adds texts, and past the bound the counts
// start over.
type instructionCounts struct {
	count func(tokens.Encoding, string) int // Counter.Text

	mu     sync.Mutex
	counts map[instructionKey]int
}

type instructionKey struct {
	enc  tokens.Encoding
	text string
}

func newInstructionCounts(count func(tokens.Encoding, string) int) *instructionCounts {
	return &instructionCounts{count: count, counts: make(map[instructionKey]int)}
}

// tokens returns the number of tokens of text in enc.
func (c *instructionCounts) tokens(enc tokens.Encoding, text string) int {
	k := instructionKey{enc, text}
	c.mu.Lock()
	n, ok := c.counts[k]
	c.mu.Unlock()
	if ok {
		return n
	}
	n = c.count(enc, text)
	c.mu.Lock()
	if len(c.counts) >= maxInstructionCounts {
		clear(c.counts)
	}
	c.counts[k] = n
	c.mu.Unlock()
	return n
}
