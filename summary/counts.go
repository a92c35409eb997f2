package summary

import (
	"sync"

	"github.com/cespare/xxhash/v2"

	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/tokens"
)

// The bounds of a Manager's memos of counts: a tenant has a few
// instructions (with an episode title and without, and the compaction's),
// and a summary text is counted by the job that makes it and the next,
// which folds it again.
const (
	maxInstructionCounts = 64
	maxSummaryCounts     = 1024
)

// textCounts counts texts once per content and encoding. Jobs send the
// same instructions (their system prompts) on every call and count them
// again for its exchange record, and a summary's text is counted when
// its answer is bounded, when it is stored, and again when the next job
// folds it into the next summary: counting each time was a visible share
// of the proxy's core. A text is found by its hash and length, so that
// the memo keeps no text (a forgotten summary's stays nowhere). At most
// max counts are kept: past the bound the counts start over.
type textCounts struct {
	count func(tokens.Encoding, string) int
	max   int

	mu     sync.Mutex
	counts map[textKey]int
}

type textKey struct {
	enc  tokens.Encoding
	sum  uint64
	size int
}

func newTextCounts(count func(tokens.Encoding, string) int, max int) *textCounts {
	return &textCounts{count: count, max: max, counts: make(map[textKey]int)}
}

// summaryCount returns the count of a summary's message as injected
// (plan.Inject as a system message), what a stored Summary's Tokens holds.
func summaryCount(c *tokens.Counter) func(tokens.Encoding, string) int {
	return func(enc tokens.Encoding, text string) int {
		return c.Message(enc, plan.Inject(chat.RoleSystem, text))
	}
}

// tokens returns count's figure for text in enc.
func (c *textCounts) tokens(enc tokens.Encoding, text string) int {
	k := textKey{enc, xxhash.Sum64String(text), len(text)}
	c.mu.Lock()
	n, ok := c.counts[k]
	c.mu.Unlock()
	if ok {
		return n
	}
	n = c.count(enc, text)
	c.mu.Lock()
	if len(c.counts) >= c.max {
		clear(c.counts)
	}
	c.counts[k] = n
	c.mu.Unlock()
	return n
}
