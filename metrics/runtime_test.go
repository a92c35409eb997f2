package metrics

import (
	"testing"
)

// Recall's registry exposes the CPU the runtime's collector and
// scavenger took, beside the Go collector's default series: the load
// script reads the assists from it to name a row's stalls.
func TestRegistryExposesTheRuntimesCPUClasses(t *testing.T) {
	families, err := New(nil).Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range families {
		got[f.GetName()] = true
	}
	for _, name := range []string{
		"go_cpu_classes_scavenge_assist_cpu_seconds_total",
		"go_cpu_classes_scavenge_background_cpu_seconds_total",
		"go_cpu_classes_gc_mark_assist_cpu_seconds_total",
		"go_cpu_classes_gc_pause_cpu_seconds_total",
		"go_goroutines", // the collector's defaults stay
		"process_resident_memory_bytes",
	} {
		if !got[name] {
			t.Errorf("no %s among the registry's series", name)
		}
	}
}
