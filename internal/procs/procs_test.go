package procs

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"
)

// A long wait makes Held processors at once (four by default); they stay
// Hold, then one again, and the next long wait makes them again.
func TestControllerSwitchesOnLongWaits(t *testing.T) {
	now := time.Unix(1000, 0)
	var waits uint64
	var set []int
	c := &Controller{Hold: 500 * time.Millisecond, Waits: func(time.Duration) uint64 { return waits },
		Set: func(n int) { set = append(set, n) }, Now: func() time.Time { return now }}
	step := func(d time.Duration, newWaits uint64) {
		now = now.Add(d)
		waits += newWaits
		c.Step()
	}
	step(10*time.Millisecond, 0) // quiet: one
	step(10*time.Millisecond, 3) // held: four
	step(10*time.Millisecond, 2) // still held: four, not set again
	step(400*time.Millisecond, 0)
	if !slices.Equal(set, []int{4}) {
		t.Fatalf("after a hold of 420 ms: set %v, want [4]", set)
	}
	step(100*time.Millisecond, 0) // Hold after the switch: one
	step(10*time.Millisecond, 0)
	step(10*time.Millisecond, 1) // held again: four
	if want := []int{4, 1, 4}; !slices.Equal(set, want) {
		t.Errorf("set %v, want %v", set, want)
	}
}

// Held sets how many processors a hold makes.
func TestControllerMakesHeldProcessors(t *testing.T) {
	var waits uint64
	var set []int
	c := &Controller{Held: 3, Waits: func(time.Duration) uint64 { return waits }, Set: func(n int) { set = append(set, n) }}
	c.Step()
	waits++
	c.Step()
	if !slices.Equal(set, []int{3}) {
		t.Errorf("set %v, want [3]", set)
	}
}

// Run steps at each tick and leaves one processor when its context ends.
func TestRunLeavesOneProcessor(t *testing.T) {
	var waits uint64
	switched := make(chan int, 4)
	c := &Controller{Hold: time.Hour, Waits: func(time.Duration) uint64 { waits++; return waits },
		Set: func(int) {}, Switched: func(n int) { switched <- n }}
	ctx, cancel := context.WithCancel(context.Background())
	ticks := make(chan time.Time)
	done := make(chan struct{})
	go func() { c.Run(ctx, ticks); close(done) }()
	ticks <- time.Now() // every read finds more waits
	if n := wait(t, switched); n != DefaultHeld {
		t.Fatalf("switched to %d, want %d", n, DefaultHeld)
	}
	cancel()
	if n := wait(t, switched); n != 1 {
		t.Fatalf("switched to %d at the end, want 1", n)
	}
	<-done
}

func wait(t *testing.T, ch chan int) int {
	t.Helper()
	select {
	case n := <-ch:
		return n
	case <-time.After(10 * time.Second):
		t.Fatal("no switch")
		return 0
	}
}

// ReadWaits counts what the runtime records: goroutines made runnable
// while the one processor computes wait at least a scheduler slice.
func TestReadWaitsSeesGoroutinesHeldByAComputation(t *testing.T) {
	before := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(before)
	w0 := ReadWaits(DefaultLong)
	start := make(chan struct{})
	done := make(chan struct{}, 64)
	for range 64 { // the runtime samples one goroutine in eight
		go func() { <-start; done <- struct{}{} }()
	}
	runtime.Gosched() // let them block on start
	close(start)
	for t0 := time.Now(); time.Since(t0) < 3*DefaultLong; { // holds the processor
	}
	for range 64 {
		<-done
	}
	if w := ReadWaits(DefaultLong); w <= w0 {
		t.Errorf("waits of %v or more: %d before, %d after holding the processor for %v", DefaultLong, w0, w, 3*DefaultLong)
	}
}

// OneCPU: GOMAXPROCS in the environment is the operator's.
func TestOneCPURespectsGOMAXPROCS(t *testing.T) {
	env := func(k string) (string, bool) { return "1", k == "GOMAXPROCS" }
	if OneCPU(env) {
		t.Error("OneCPU with GOMAXPROCS set")
	}
	noEnv := func(string) (string, bool) { return "", false }
	if got, want := OneCPU(noEnv), runtime.NumCPU() == 1 && runtime.GOMAXPROCS(0) == 1; got != want {
		t.Errorf("OneCPU = %v on %d CPUs, runtime %d", got, runtime.NumCPU(), runtime.GOMAXPROCS(0))
	}
}
