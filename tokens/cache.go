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

// The kinds of count a Cache keeps apart for the same bytes: Message's,
// Tools', and from KindOther on, what a caller counts its own way (Memo).
const (
	kindMessage uint64 = iota
	kindTools
	KindOther
)

// Message is c's Counter.Message of raw, counted once per content.
func (c *Cache) Message(enc Encoding, raw []byte) int {
	return c.Memo(enc, raw, kindMessage, func(tc *Counter) int { return tc.Message(enc, raw) })
}

// Tools is c's Counter.Tools of raw, counted once per content.
func (c *Cache) Tools(enc Encoding, raw []byte) int {
	return c.Memo(enc, raw, kindTools, func(tc *Counter) int { return tc.Tools(enc, raw) })
}

// Memo is count's figure for raw through c's Counter, counted once per
// content, encoding and kind (KindOther or past: a way of counting the
// caller tells apart, such as a message of another protocol counted
// through its own rendition). count must depend on nothing but raw, enc
// and kind. A raw that is empty counts 0.
func (c *Cache) Memo(enc Encoding, raw []byte, kind uint64, count func(*Counter) int) int {
	if len(raw) == 0 {
		return 0
	}
	key := xxhash.Sum64(raw) ^ xxhash.Sum64String(string(enc))
	switch kind {
	case kindMessage:
	case kindTools:
		key = ^key
	default:
		key ^= kind * 0x9E3779B97F4A7C15 // spread over the key's bits
	}
	if n, ok := c.counts.Load(key); ok {
		return n.(int)
	}
	n := count(c.c)
	if c.n.Add(1) > c.max {
		c.Clear()
	}
	c.counts.Store(key, n)
	return n
}

// Clear forgets every count.
func (c *Cache) Clear() {
	c.counts.Clear()
	c.n.Store(0)
}
