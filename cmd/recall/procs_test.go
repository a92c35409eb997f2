package main

import (
	"runtime"
	"testing"
)

// One CPU by affinity gets two processors; a quota's one (more CPUs
// counted), more than one, or GOMAXPROCS in the environment is left as it
// is.
func TestApplyProcs(t *testing.T) {
	for _, c := range []struct{ cpus, runtime, want int }{{1, 1, 2}, {4, 1, 1}, {2, 2, 2}, {1, 3, 3}} {
		if got := procsFor(c.cpus, c.runtime); got != c.want {
			t.Errorf("procsFor(%d CPUs, runtime %d) = %d, want %d", c.cpus, c.runtime, got, c.want)
		}
	}
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })
	runtime.GOMAXPROCS(1)
	env := func(k string) (string, bool) { return "1", k == "GOMAXPROCS" }
	if n, src := applyProcs(env); n != 1 || src != "GOMAXPROCS" || runtime.GOMAXPROCS(0) != 1 {
		t.Errorf("with GOMAXPROCS=1 set: %d from %s (runtime %d), want 1 from GOMAXPROCS", n, src, runtime.GOMAXPROCS(0))
	}
	noEnv := func(string) (string, bool) { return "", false }
	want, wantSrc := 1, "runtime"
	if runtime.NumCPU() == 1 {
		want, wantSrc = 2, "one CPU"
	}
	if n, src := applyProcs(noEnv); n != want || src != wantSrc || runtime.GOMAXPROCS(0) != want {
		t.Errorf("runtime at 1 on %d CPUs: %d from %s (runtime %d), want %d from %s", runtime.NumCPU(), n, src, runtime.GOMAXPROCS(0), want, wantSrc)
	}
}
