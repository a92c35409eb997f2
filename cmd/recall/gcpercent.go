package main

import "runtime/debug"

// limitedGCPercent is the collector's GOGC while a memory limit is in
// force and the environment sets no GOGC: the heap may grow to three
// times what is live, up to the limit, before a cycle. Go's 100 collected
// a proxy's small live heap (tens of MB) about twice a second under
// load, and each cycle's mark work shares the proxy's core with the
// requests (its worker, its assists, and a second processor the
// scheduler's waits then call for: internal/procs). Marking costs what
// is live, not what is garbage, so fewer cycles cost less of the core.
// 200 halves the cycles for tens of MB of heap; 400 cut them to a third
// but held the heap near the limit, a hundred MB more. The memory limit
// still bounds the heap: near it the collector runs as often as it must.
const limitedGCPercent = 200

// applyGCPercent sets GOGC to limitedGCPercent when limited (a memory
// limit is in force) and the environment sets no GOGC (the runtime has
// read it already, and an operator's explicit choice wins). Without a
// limit Go's default stays: nothing else would bound the heap. It
// returns the GOGC in force and where it came from, for the startup log.
func applyGCPercent(limited bool, lookup func(string) (string, bool)) (percent int, source string) {
	if v, ok := lookup("GOGC"); ok && v != "" {
		return gcPercent(), "GOGC"
	}
	if !limited {
		return gcPercent(), "default"
	}
	debug.SetGCPercent(limitedGCPercent)
	return limitedGCPercent, "memory_limit"
}

// gcPercent returns the runtime's GOGC (-1: off), setting it back at once.
func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}
