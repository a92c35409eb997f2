package stackgrow

import (
	"sync"
	"testing"
	"unsafe"
)

// deep uses about 300 bytes of stack a level.
//
//go:noinline
func deep(n int) int {
	var a [256]byte
	a[n%256] = byte(n)
	if n == 0 {
		return int(a[0])
	}
	return deep(n-1) + int(a[n%256])
}

// TestGrowKeepsWorking: a goroutine that grew first runs deep calls as
// before (Grow changes the stack's size, never what runs on it).
func TestGrowKeepsWorking(t *testing.T) {
	want := deep(90)
	got := make(chan int)
	go func() {
		Grow()
		got <- deep(90)
	}()
	if g := <-got; g != want {
		t.Fatalf("deep(90) after Grow = %d, want %d", g, want)
	}
}

// moved reports whether a goroutine's stack was copied (moved) while
// it ran deep(40), about 12 KB deep, after Grow if grow: a local's
// address changes when the runtime copies the stack to grow it.
func moved(grow bool) bool {
	done := make(chan bool)
	go func() {
		if grow {
			Grow()
		}
		var x byte
		before := uintptr(unsafe.Pointer(&x))
		deep(40)
		done <- uintptr(unsafe.Pointer(&x)) != before
	}()
	return <-done
}

// TestGrowMovesTheStackOnce: a goroutine's stack is copied while it goes
// 12 KB deep, and not once it called Grow.
func TestGrowMovesTheStackOnce(t *testing.T) {
	if !moved(false) {
		t.Skip("a new goroutine went 12 KB deep without its stack being copied: this runtime starts goroutines on a larger stack")
	}
	if moved(true) {
		t.Fatal("the stack was copied after Grow")
	}
}

// benchDeep runs a goroutine that needs about 12 KB of stack, growing it
// first if grow.
func benchDeep(b *testing.B, grow bool) {
	var wg sync.WaitGroup
	for b.Loop() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if grow {
				Grow()
			}
			deep(40)
		}()
		wg.Wait()
	}
}

// BenchmarkDeepGoroutine is a goroutine growing its stack as it goes.
func BenchmarkDeepGoroutine(b *testing.B) { benchDeep(b, false) }

// BenchmarkDeepGoroutineGrown is the same goroutine calling Grow first.
func BenchmarkDeepGoroutineGrown(b *testing.B) { benchDeep(b, true) }
