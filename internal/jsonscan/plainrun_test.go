package jsonscan

import (
	"math/rand/v2"
	"testing"
)

// TestPlainRunStopsWhereTheByteLoopDoes checks PlainRun, eight bytes a
// step, against plainByte a byte at a time, on strings of plain bytes
// with one or two others (each byte value in turn) placed anywhere.
func TestPlainRunStopsWhereTheByteLoopDoes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	plain := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			for b[i] = byte(0x20 + rng.IntN(0x5f)); !plainByte[b[i]]; b[i] = byte(0x20 + rng.IntN(0x5f)) {
			}
		}
		return b
	}
	want := func(b []byte, i int) int {
		for i < len(b) && plainByte[b[i]] {
			i++
		}
		return i
	}
	for c := range 256 {
		for range 40 {
			b := plain(rng.IntN(40))
			if len(b) > 0 {
				b[rng.IntN(len(b))] = byte(c)
				if rng.IntN(2) == 0 {
					b[rng.IntN(len(b))] = byte(rng.IntN(256))
				}
			}
			start := 0
			if len(b) > 0 {
				start = rng.IntN(len(b))
			}
			if got, w := PlainRun(b, start), want(b, start); got != w {
				t.Fatalf("PlainRun(%q, %d) = %d, want %d", b, start, got, w)
			}
		}
	}
}
