package tokens

import (
	"fmt"
	"sync"
	"testing"
)

// pieceCounter is a Counter that counts the pieces it tokenizes: none
// for a count served from a Cache.
func pieceCounter() (*Counter, func() int) {
	var mu sync.Mutex
	n := 0
	c := &Counter{onPiece: func(string) { mu.Lock(); n++; mu.Unlock() }}
	return c, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

func TestCacheCountsOnce(t *testing.T) {
	msg := []byte(`{"role":"system","content":"You are a careful assistant who remembers."}`)
	tools := []byte(`[{"type":"function","function":{"name":"lookup","description":"Looks a word up.","parameters":{"type":"object"}}}]`)
	tests := []struct {
		name  string
		count func(*Cache) int
		want  func(*Counter) int
	}{
		{"message", func(c *Cache) int { return c.Message(O200k, msg) }, func(c *Counter) int { return c.Message(O200k, msg) }},
		{"tools", func(c *Cache) int { return c.Tools(O200k, tools) }, func(c *Counter) int { return c.Tools(O200k, tools) }},
		{"message in another encoding", func(c *Cache) int { return c.Message(CL100k, msg) }, func(c *Counter) int { return c.Message(CL100k, msg) }},
		{"a count of the caller's own", func(c *Cache) int {
			return c.Memo(O200k, msg, KindOther, func(tc *Counter) int { return tc.Message(O200k, msg) + 7 })
		}, func(c *Counter) int { return c.Message(O200k, msg) + 7 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want(&Counter{})
			counter, pieces := pieceCounter()
			c := NewCache(counter, 0)
			if got := tt.count(c); got != want {
				t.Fatalf("first count: got %d, want %d", got, want)
			}
			first := pieces()
			if first == 0 {
				t.Fatal("the first count tokenized nothing")
			}
			if got := tt.count(c); got != want {
				t.Errorf("cached count: got %d, want %d", got, want)
			}
			if got := pieces(); got != first {
				t.Errorf("the cached count tokenized %d pieces, want none", got-first)
			}
		})
	}
}

// The same bytes as a message and as tools, or in two encodings, are
// different counts.
func TestCacheKeysByKindAndEncoding(t *testing.T) {
	raw := []byte(`[{"type":"function","function":{"name":"lookup","description":"Looks a word up in the dictionary."}}]`)
	c := NewCache(&Counter{}, 0)
	var ref Counter
	if got, want := c.Tools(O200k, raw), ref.Tools(O200k, raw); got != want {
		t.Errorf("tools: got %d, want %d", got, want)
	}
	if got, want := c.Message(O200k, raw), ref.Message(O200k, raw); got != want {
		t.Errorf("the same bytes as a message: got %d, want %d", got, want)
	}
	if got, want := c.Message(CL100k, []byte(`{"role":"user","content":"ünïcödé"}`)), ref.Message(CL100k, []byte(`{"role":"user","content":"ünïcödé"}`)); got != want {
		t.Errorf("cl100k: got %d, want %d", got, want)
	}
	for kind := KindOther; kind < KindOther+3; kind++ {
		if got, want := c.Memo(O200k, raw, kind, func(*Counter) int { return int(kind) * 1000 }), int(kind)*1000; got != want {
			t.Errorf("the same bytes counted as kind %d: got %d, want %d", kind, got, want)
		}
	}
	if got := c.Message(O200k, nil); got != 0 {
		t.Errorf("empty: got %d, want 0", got)
	}
}

// Past its size the cache starts over: the count it held first is
// counted again.
func TestCacheClearsPastItsSize(t *testing.T) {
	counter, pieces := pieceCounter()
	const size = 4
	c := NewCache(counter, size)
	msg := func(i int) []byte { return fmt.Appendf(nil, `{"role":"system","content":"instruction number %d"}`, i) }
	for i := range size {
		c.Message(O200k, msg(i))
	}
	before := pieces()
	c.Message(O200k, msg(0))
	if got := pieces(); got != before {
		t.Fatalf("within the size, a count was tokenized again (%d pieces)", got-before)
	}
	c.Message(O200k, msg(size)) // one past the size: the cache starts over
	before = pieces()
	c.Message(O200k, msg(0))
	if pieces() == before {
		t.Error("past the size, the first count was still cached")
	}
	before = pieces()
	c.Message(O200k, msg(size))
	if got := pieces(); got != before {
		t.Errorf("the count stored after the clear was tokenized again (%d pieces)", got-before)
	}
}

func TestCacheConcurrent(t *testing.T) {
	c := NewCache(&Counter{}, 8)
	var ref Counter
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				raw := fmt.Appendf(nil, `{"role":"user","content":"message %d"}`, (i+g)%12)
				if got, want := c.Message(O200k, raw), ref.Message(O200k, raw); got != want {
					t.Errorf("got %d, want %d", got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}
