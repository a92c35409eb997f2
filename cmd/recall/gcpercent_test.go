package main

import (
	"runtime/debug"
	"testing"
)

// With a memory limit in force GOGC is raised to limitedGCPercent; without
// one, or with GOGC in the environment, the runtime's is left alone.
func TestApplyGCPercent(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	noEnv := func(string) (string, bool) { return "", false }
	env := func(k string) (string, bool) { return "150", k == "GOGC" }

	for _, tc := range []struct {
		name    string
		limited bool
		lookup  func(string) (string, bool)
		runtime int // the runtime's GOGC before the call, as GOGC would have set it
		want    int
		source  string
	}{
		{"a limit, no GOGC", true, noEnv, 100, limitedGCPercent, "memory_limit"},
		{"no limit", false, noEnv, 100, 100, "default"},
		{"GOGC set, a limit", true, env, 150, 150, "GOGC"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetGCPercent(tc.runtime)
			p, src := applyGCPercent(tc.limited, tc.lookup)
			if p != tc.want || src != tc.source {
				t.Errorf("got GOGC %d from %s, want %d from %s", p, src, tc.want, tc.source)
			}
			if got := gcPercent(); got != tc.want {
				t.Errorf("runtime GOGC: got %d, want %d", got, tc.want)
			}
		})
	}
}
