// Command tracestall reads a runtime/trace (Go's execution trace, as
// bench/run.sh TRACE=1 records of Recall's open-loop rows) and says what
// stalled the requests: the scheduler waits (a goroutine runnable but not
// running) past a threshold, merged into windows, and what held the
// processors in those windows, by goroutine (the function it was started
// with) and by the runtime's ranges (GC phases, stop-the-world, mark
// assists). Time in a window that nothing of the process ran is the
// kernel's: the process was not given the CPU. So is a silence (no
// event of any thread for Silence or more) in which the trace shows a
// goroutine running: a goroutine that computes is preempted sooner, and
// that is an event; what ran then was another process, on a shared
// machine another load's.
//
//	tracestall [-min 8ms] [-windows 5] trace.out
//
// Without -min the threshold is the trace's 99.9th percentile wait.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	min := flag.Duration("min", 0, "the scheduler wait that counts as a stall (0: the trace's 99.9th percentile)")
	windows := flag.Int("windows", 5, "how many of the longest windows to list")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: tracestall [-min 8ms] [-windows 5] trace.out")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "tracestall:", err)
		os.Exit(1)
	}
	defer f.Close()
	r, err := Analyze(f, *min)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tracestall:", err)
		os.Exit(1)
	}
	r.Write(os.Stdout, *windows)
}
