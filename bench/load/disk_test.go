package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

// waitSynced waits for n of the probe's kept syncs.
func waitSynced(t *testing.T, synced <-chan struct{}, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for range n {
		select {
		case <-synced:
		case <-deadline:
			t.Fatalf("the probe kept fewer than %d syncs within 10s", n)
		}
	}
}

func TestDiskProbeMeasuresItsSyncsAndLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	p, err := newDiskProbe(dir, time.Millisecond, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	fi, err := p.f.Stat()
	if err != nil || fi.Size() != diskProbeFile {
		t.Fatalf("the probe's file before it runs: %v, %v; want %d bytes written", fi, err, diskProbeFile)
	}
	synced := make(chan struct{})
	p.synced = synced
	go p.run()
	waitSynced(t, synced, 3)
	syncs, err := p.finish()
	if err != nil || len(syncs) < 3 {
		t.Fatalf("finish: %d syncs, %v; want 3 or more, no error", len(syncs), err)
	}
	for i := 1; i < len(syncs); i++ {
		if syncs[i] < syncs[i-1] || syncs[i] <= 0 {
			t.Fatalf("syncs not sorted and positive: %v", syncs)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left in the directory after finish: %v", ents)
	}
}

func TestDiskProbeKeepsOnlyTheMeasuredPart(t *testing.T) {
	p, err := newDiskProbe(t.TempDir(), time.Millisecond, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	// The warm-up's syncs run but are not kept: nothing is told.
	go p.run()
	syncs, err := p.finish()
	if err != nil || len(syncs) != 0 {
		t.Fatalf("syncs before the measured part: %v, %v; want none", syncs, err)
	}
}

func TestSetDiskCountsTheStalls(t *testing.T) {
	var syncs []time.Duration
	for range 198 {
		syncs = append(syncs, time.Millisecond)
	}
	syncs = append(syncs, 120*time.Millisecond, 850*time.Millisecond)
	var r result
	r.setDisk(syncs)
	if r.DiskSyncs != 200 || r.DiskStalls != 2 || r.DiskStalledMs != 970 || r.DiskP99 != 1 || r.DiskMax != 850 {
		t.Errorf("setDisk: %+v", r)
	}
	if got := r.disk(); got != "1.00 / 850.00, 2 ≥ 100 (970.00)" {
		t.Errorf("as the report gives it: %q", got)
	}
	var none result
	none.setDisk(nil)
	if none.DiskSyncs != 0 || strings.Contains(none.human(), "disk syncs") {
		t.Errorf("no syncs read as some: %+v", none)
	}
}

func TestReportDiskAndProxyCPU(t *testing.T) {
	out := reportOf(t, `{"label":"recall-sync/plain/open","mode":"open","rate":1000,"concurrency":32,"conversations":1000,"rps":1000,"p50_ms":4,"p90_ms":30,"p99_ms":190,"max_ms":220,"disk_syncs":1000,"disk_p99_ms":3.5,"disk_max_ms":412.25,"disk_stalls":1,"disk_stalled_ms":412.25}
{"label":"recall-sync/plain/closed","mode":"closed","concurrency":32,"conversations":1000,"rps":3500,"p50_ms":4,"p90_ms":30,"p99_ms":190,"max_ms":220,"proxy_cpu_ms_per_req":0.2814}
{"label":"nginx-ctx50/plain/closed","mode":"closed","concurrency":32,"rps":6000,"p50_ms":4,"p90_ms":30,"p99_ms":190,"max_ms":220,"proxy_cpu_ms_per_req":0.1504}
`)
	table := func(title string) string {
		_, s, _ := strings.Cut(out, title)
		s, _, _ = strings.Cut(s, "\n\n**")
		return s
	}
	if disk := table("**The disk's own syncs beside each row**"); !strings.Contains(disk, "| recall-sync | – | 3.50 / 412.25, 1 ≥ 100 (412.25) | – | – |") || strings.Contains(disk, "nginx") {
		t.Errorf("the disk's table:\n%s\nof the report:\n%s", disk, out)
	}
	if cpu := table("**The proxy's CPU a request**"); !strings.Contains(cpu, "| recall-sync | 281 | – | – | – |") || !strings.Contains(cpu, "| nginx-ctx50 | 150 | – | – | – |") {
		t.Errorf("the proxy's CPU table:\n%s\nof the report:\n%s", cpu, out)
	}
}
