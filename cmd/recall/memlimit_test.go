package main

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/recallproxy/recall/config"
)

// The runtime's memory limit follows memory_limit_mb (derived from
// cache_mb by default), and a GOMEMLIMIT in the environment is left alone.
func TestApplyMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	noEnv := func(string) (string, bool) { return "", false }

	g := config.DefaultGlobal()
	g.CacheMB = 64
	if mib, src := applyMemoryLimit(g, noEnv); mib != 64+512 || src != "memory_limit_mb" {
		t.Errorf("cache_mb 64: limit %d MiB from %s, want 576 MiB from memory_limit_mb", mib, src)
	}
	if got := debug.SetMemoryLimit(-1); got != 576<<20 {
		t.Errorf("runtime limit %d, want %d", got, 576<<20)
	}

	g.MemoryLimitMB = -1
	if mib, _ := applyMemoryLimit(g, noEnv); mib != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("memory_limit_mb -1: limit %d MiB, runtime %d, want none", mib, debug.SetMemoryLimit(-1))
	}

	debug.SetMemoryLimit(300 << 20) // as GOMEMLIMIT=300MiB would have set it
	g.MemoryLimitMB = 100
	env := func(k string) (string, bool) { return "300MiB", k == "GOMEMLIMIT" }
	if mib, src := applyMemoryLimit(g, env); mib != 300 || src != "GOMEMLIMIT" {
		t.Errorf("with GOMEMLIMIT set: limit %d MiB from %s, want 300 MiB from GOMEMLIMIT", mib, src)
	}
}
