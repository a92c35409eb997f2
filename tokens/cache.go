package tokens

import (
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
)

// DefaultCacheSize is the number of counts a Cache keeps by default.
const DefaultCacheSize = 1 << 14

// Cache counts instruction messages and tools arrays through a Counter,
// remembering each count by a hash of the content and the encoding:
// clients send the same system prompt and tool definitions on every
// call, and tokenizing them each time would dominate the request's cost.
// Past its size it starts over (Clear), which bounds its memory without
// the bookkeeping of an eviction order. A Cache is safe for concurrent
// use; make one with NewCache.
type Cache struct {
	c      *Counter
	max    int64
	counts sync.Map // hash -> tokens (int)
	n      atomic.Int64
}

// NewCache returns a Cache over c that keeps up to size counts
// (DefaultCacheSize when size <= 0).
func NewCache(c *Counter, size int) *Cache {
	if size <= 0 {
		size = DefaultCacheSize
	}
	return &Cache{c: c, max: int64(size)}
}

// Message is c's Counter.Message of raw, counted once per content.
func (c *Cache) Message(enc Encoding, raw []byte) int { return c.count(enc, raw, false) }

// Tools is c's Counter.Tools of raw, counted once per content.
func (c *Cache) Tools(enc Encoding, raw []byte) int { return c.count(enc, raw, true) }

// Clear forgets every count.
func (c *Cache) Clear() {
	c.counts.Clear()
	c.n.Store(0)
}

func (c *Cache) count(enc Encoding, raw []byte, tools bool) int {
	if len(raw) == 0 {
		return 0
	}
	key := xxhash.Sum64(raw) ^ xxhash.Sum64String(string(enc))
	if tools {
		key = ^key
	}
	if n, ok := c.counts.Load(key); ok {
		return n.(int)
	}
	var n int
	if tools {
		n = c.c.Tools(enc, raw)
	} else {
		n = c.c.Message(enc, raw)
	}
	if c.n.Add(1) > c.max {
		c.Clear()
	}
	c.counts.Store(key, n)
	return n
}
