package stackgrow

import (
	"bytes"
	"runtime"
	"sync"
	"testing"
	"time"
)

// goroutineID is the calling goroutine's number, from its stack's header.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	return string(bytes.Fields(buf)[1])
}

// wait fails t unless ch delivers within a few seconds.
func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: not within 5 s", what)
	}
}

// testPool is a Pool whose goroutines report parking and ending on the
// channels returned.
func testPool(max int) (p *Pool, parked, ended chan struct{}) {
	parked, ended = make(chan struct{}, 16), make(chan struct{}, 16)
	p = &Pool{Max: max}
	p.parked = func() { parked <- struct{}{} }
	p.ended = func() { ended <- struct{}{} }
	return p, parked, ended
}

// TestPoolRunsTheNextOnTheIdleGoroutine: a function given after another
// finished runs on the same goroutine, deep calls working as before.
func TestPoolRunsTheNextOnTheIdleGoroutine(t *testing.T) {
	p, parked, _ := testPool(0)
	defer p.Close()
	ids := make(chan string, 2)
	results := make(chan int, 2)
	for range 2 {
		p.Go(func() {
			ids <- goroutineID()
			results <- deep(90)
		})
		wait(t, parked, "parked")
	}
	first, second := <-ids, <-ids
	if first != second {
		t.Errorf("ran on goroutines %s and %s, want the same one twice", first, second)
	}
	if a, b := <-results, <-results; a != deep(90) || b != a {
		t.Errorf("deep(90) = %d, %d on the pool's goroutine, want %d", a, b, deep(90))
	}
}

// TestPoolKeepsAtMostMaxIdle: of two functions in flight at once with
// Max 1, the goroutine of one stays idle and the other's ends.
func TestPoolKeepsAtMostMaxIdle(t *testing.T) {
	p, parked, ended := testPool(1)
	defer p.Close()
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(2)
	for range 2 {
		p.Go(func() {
			started.Done()
			<-release
		})
	}
	started.Wait() // both in flight: two goroutines
	close(release)
	wait(t, parked, "one parked")
	wait(t, ended, "the other ended")
	select {
	case <-parked:
		t.Fatal("both parked, want at most Max (1) idle")
	default:
	}
}

// TestPoolCloseEndsIdleGoroutines: Close ends the idle goroutine, and a
// function given after Close still runs, on a goroutine that then ends.
func TestPoolCloseEndsIdleGoroutines(t *testing.T) {
	p, parked, ended := testPool(0)
	p.Go(func() {})
	wait(t, parked, "parked")
	p.Close()
	wait(t, ended, "the idle goroutine ended at Close")
	ran := make(chan struct{})
	p.Go(func() { close(ran) })
	wait(t, ran, "a function given after Close ran")
	wait(t, ended, "its goroutine ended")
}

// BenchmarkDeepGoroutinePool is BenchmarkDeepGoroutineGrown's work on a
// Pool's goroutine.
func BenchmarkDeepGoroutinePool(b *testing.B) {
	var p Pool
	defer p.Close()
	var wg sync.WaitGroup
	work := func() {
		defer wg.Done()
		deep(40)
	}
	for b.Loop() {
		wg.Add(1)
		p.Go(work)
		wg.Wait()
	}
}
