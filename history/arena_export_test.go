package history

import "fmt"

// CheckCost reports where the cache's accounting is off: every entry's
// bytes must be its fixed cost, its messages' costs and its slack, the
// slack at least the room left in its arena, and the cache's size the sum
// of its entries'.
func (c *Cache) CheckCost() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	size := 0
	for el := c.lru.Front(); el != nil; el = el.Next() {
		e := el.Value.(*cacheEntry)
		want := e.fixedCost() + e.slack
		for _, m := range e.tail {
			want += messageCost(m)
		}
		if e.bytes != want {
			return fmt.Errorf("entry %v: bytes %d, want %d (slack %d)", e.key, e.bytes, want, e.slack)
		}
		if room := cap(e.arena) - len(e.arena); e.slack < room {
			return fmt.Errorf("entry %v: slack %d, less than the arena's room %d", e.key, e.slack, room)
		}
		size += e.bytes
	}
	if c.size != size {
		return fmt.Errorf("cache size %d, want the entries' %d", c.size, size)
	}
	return nil
}
