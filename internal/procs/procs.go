// Package procs runs the Go runtime on several processors (Ps) instead
// of one, on a process that may use one CPU, while goroutines wait long
// for the one.
//
// With one P, a goroutine that computes for long (a Badger compaction,
// whose table builders run in parallel, or a memtable flush) holds it in
// the scheduler's 10 ms slices, and the requests' goroutines, and the
// network poller that wakes them, wait their turn: at an open 1,000
// requests a second a level-0 compaction held answers for up to 185 ms.
// With more Ps each has a thread and the kernel shares the CPU between
// them, thread by thread, and the requests' waits fall to a few
// milliseconds. How many matters: the computation is one goroutine on
// one thread, so with two Ps the requests get half the CPU while it
// runs, less than an open loop near the CPU's capacity needs, and their
// queue grows for as long as it runs (a compaction of a second of CPU
// held streamed answers for up to 392 ms); with four the requests'
// threads get three shares in four. But several Ps all the time cost
// the busiest path (a proxy that only forwards) a twentieth of its
// requests a second and its tail, the kernel switching between the
// threads in the middle of requests.
//
// So a Controller watches the runtime's scheduling latencies
// (/sched/latencies:seconds, the time runnable goroutines waited for a
// P, sampled by the runtime) every DefaultTick, and sets Held Ps as soon
// as one waited Long or more, and one again Hold later.
package procs

import (
	"context"
	"runtime"
	"runtime/metrics"
	"time"
)

// Defaults of a Controller's fields.
const (
	DefaultTick = 10 * time.Millisecond
	DefaultLong = 8 * time.Millisecond // most of a scheduler slice
	DefaultHold = 500 * time.Millisecond
	DefaultHeld = 4
)

// Controller switches the runtime between one P and Held.
type Controller struct {
	// Long is the wait that makes Held Ps; Hold how long they stay.
	Long, Hold time.Duration
	// Held is how many Ps run while a computation holds one.
	Held int
	// Waits returns how many scheduling latencies the runtime has
	// recorded at or past long since it started (a count that only
	// grows). Default: ReadWaits.
	Waits func(long time.Duration) uint64
	// Set sets the processors (default runtime.GOMAXPROCS).
	Set func(n int)
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Switched, if set, is called with the processors after each switch.
	Switched func(n int)

	procs    int
	last     uint64    // Waits at the previous tick
	switched time.Time // when procs became Held
}

// Run checks the waits at every tick of ticks (a time.Ticker's channel
// every DefaultTick, if nil) until ctx ends, and leaves one P then.
func (c *Controller) Run(ctx context.Context, ticks <-chan time.Time) {
	c.defaults()
	if ticks == nil {
		t := time.NewTicker(DefaultTick)
		defer t.Stop()
		ticks = t.C
	}
	c.procs, c.last = 1, c.Waits(c.Long)
	defer func() {
		if c.procs != 1 {
			c.set(1)
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
			c.Step()
		}
	}
}

// Step reads the waits once and switches if they say so.
func (c *Controller) Step() {
	c.defaults()
	if c.procs == 0 {
		c.procs = 1
	}
	w := c.Waits(c.Long)
	long := w > c.last
	c.last = w
	// Back to one after Hold whatever the waits say: several threads on
	// one CPU make long waits of their own under a heavy load (the kernel
	// switching between them), which would hold them forever. A hold
	// still there shows in the next tick's waits.
	switch {
	case c.procs == 1 && long:
		c.switched = c.Now()
		c.set(c.Held)
	case c.procs != 1 && c.Now().Sub(c.switched) >= c.Hold:
		c.set(1)
	}
}

func (c *Controller) set(n int) {
	c.procs = n
	c.Set(n)
	if c.Switched != nil {
		c.Switched(n)
	}
}

func (c *Controller) defaults() {
	if c.Long == 0 {
		c.Long = DefaultLong
	}
	if c.Hold == 0 {
		c.Hold = DefaultHold
	}
	if c.Held < 2 {
		c.Held = DefaultHeld
	}
	if c.Waits == nil {
		c.Waits = ReadWaits
	}
	if c.Set == nil {
		c.Set = func(n int) { runtime.GOMAXPROCS(n) }
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// schedLatencies is the runtime metric ReadWaits reads.
const schedLatencies = "/sched/latencies:seconds"

// ReadWaits returns how many scheduling latencies of long or more the
// runtime has recorded: the counts of the buckets from the first whose
// lower bound is at least long.
func ReadWaits(long time.Duration) uint64 {
	s := []metrics.Sample{{Name: schedLatencies}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0
	}
	h := s[0].Value.Float64Histogram()
	var n uint64
	for i, c := range h.Counts {
		if h.Buckets[i] >= long.Seconds() {
			n += c
		}
	}
	return n
}

// OneCPU reports whether the process may use one CPU and the runtime runs
// one P for it, where a Controller belongs: not where GOMAXPROCS is set
// (an operator's choice), nor where the one P comes from a CPU quota (a
// cgroup's, where NumCPU counts more CPUs: two threads there would run on
// two CPUs and be throttled).
func OneCPU(lookup func(string) (string, bool)) bool {
	if v, ok := lookup("GOMAXPROCS"); ok && v != "" {
		return false
	}
	return runtime.NumCPU() == 1 && runtime.GOMAXPROCS(0) == 1
}
