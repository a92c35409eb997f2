package main

import (
	"math"
	"runtime/debug"

	"github.com/recallproxy/recall/config"
)

// applyMemoryLimit sets the Go runtime's soft memory limit from
// memory_limit_mb, unless the environment sets GOMEMLIMIT (the runtime has
// read it already, and an operator's explicit choice wins). It returns the
// limit in force in MiB (0: none) and where it came from, for the startup
// log.
func applyMemoryLimit(g config.Global, lookup func(string) (string, bool)) (mib int64, source string) {
	if v, ok := lookup("GOMEMLIMIT"); ok && v != "" {
		source = "GOMEMLIMIT"
	} else {
		source = "memory_limit_mb"
		limit := g.MemoryLimit()
		if limit == 0 {
			limit = math.MaxInt64 // the runtime's "no limit"
		}
		debug.SetMemoryLimit(limit)
	}
	limit := debug.SetMemoryLimit(-1) // reads it
	if limit == math.MaxInt64 {
		return 0, source
	}
	return limit >> 20, source
}
