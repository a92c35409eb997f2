package main

import "runtime"

// applyProcs gives the Go runtime two processors (Ps) where it would run
// one because the process may use only one CPU (its affinity: taskset, a
// cpuset), unless the environment sets GOMAXPROCS (an operator's explicit
// choice wins). It returns the processors in force and where the number
// came from, for the startup log.
//
// With one P, a goroutine that computes for long (a Badger compaction or
// memtable flush, the search fold) holds it for the scheduler's 10 ms
// slices, and the requests' goroutines, and the network poller that wakes
// them, wait their turn: at an open 1,000 requests a second a level-0
// compaction held answers for up to 185 ms. With two, each has a thread
// and the kernel shares the one CPU between them (docs/performance.md,
// "One CPU, two processors"). A limit that came from a CPU quota (a
// cgroup's, where NumCPU still counts every CPU) is left alone: two
// threads there would run on two CPUs and be throttled.
func applyProcs(lookup func(string) (string, bool)) (procs int, source string) {
	if v, ok := lookup("GOMAXPROCS"); ok && v != "" {
		return runtime.GOMAXPROCS(0), "GOMAXPROCS"
	}
	if n := procsFor(runtime.NumCPU(), runtime.GOMAXPROCS(0)); n != runtime.GOMAXPROCS(0) {
		runtime.GOMAXPROCS(n)
		return n, "one CPU"
	}
	return runtime.GOMAXPROCS(0), "runtime"
}

// procsFor returns the processors to run with, given the CPUs the process
// may use and the runtime's own choice: two where both are one.
func procsFor(numCPU, runtimeProcs int) int {
	if numCPU == 1 && runtimeProcs == 1 {
		return 2
	}
	return runtimeProcs
}
