package proxy_test

import (
	"testing"

	"github.com/recallproxy/recall/proxy"
)

// TestReadBufferIsNotAnUpstreamBodysBuffer: a client's body, which a
// recorded exchange keeps, is read into a buffer of at most twice its
// size, never into one an upstream body grew to (the caches that keep its
// messages count their bytes, not the buffer's), and a buffer too large
// for it stays pooled for a body that needs it.
func TestReadBufferIsNotAnUpstreamBodysBuffer(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops items at random")
	}
	proxy.PutBodyBuf(make([]byte, 0, 256<<10)) // an upstream body's, given back
	if b := proxy.GetReadBuf(300); cap(b) > 600 {
		t.Errorf("a 300-byte body read into a buffer of %d bytes: an upstream body's", cap(b))
	}
	proxy.PutReadBuf(make([]byte, 0, 64<<10)) // a large plain body's, given back
	if b := proxy.GetReadBuf(300); cap(b) > 600 {
		t.Errorf("a 300-byte body read into a buffer of %d bytes, want at most 600", cap(b))
	}
	if b := proxy.GetReadBuf(40 << 10); cap(b) != 64<<10 {
		t.Errorf("a 40 KiB body read into a new buffer of %d bytes, want the pooled 64 KiB one", cap(b))
	}
}
