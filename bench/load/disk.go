package main

import (
	"os"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A durable commit is answered after its log's sync, so a row's tail is
// at least the disk's. diskProbe measures the disk on its own beside a
// row: every interval it overwrites a block of a file it preallocated
// (no size change, so no journal commit of its own) and syncs it with
// fdatasync, and keeps each sync's time over the measured part. A stall
// the probe saw in the same seconds as a row's is the disk's, whatever
// the row's process did; a row that stalled while the probe did not was
// slow for another reason.
type diskProbe struct {
	f       *os.File
	every   time.Duration
	from    time.Time // measured part's start
	stop    chan struct{}
	done    chan struct{}
	synced  chan<- struct{} // tests: told (if ready) after each kept sync
	mu      sync.Mutex
	syncs   []time.Duration
	failure error
}

// diskProbeBlock is what each probe writes before its sync: a page, as a
// small group of commits is.
const diskProbeBlock = 4096

// diskProbeFile is the preallocated file's size: the probe writes its
// blocks round it.
const diskProbeFile = 4 << 20

// startDiskProbe starts probing the disk under dir every interval,
// keeping the syncs that start from measureFrom on.
func startDiskProbe(dir string, every time.Duration, measureFrom time.Time) (*diskProbe, error) {
	p, err := newDiskProbe(dir, every, measureFrom)
	if err == nil {
		go p.run()
	}
	return p, err
}

// newDiskProbe is a probe with its file written, not yet running.
func newDiskProbe(dir string, every time.Duration, measureFrom time.Time) (*diskProbe, error) {
	f, err := os.CreateTemp(dir, "disk-probe-*")
	if err != nil {
		return nil, err
	}
	// Written and synced whole, once: later writes overwrite allocated
	// blocks and change no size.
	if _, err := f.Write(make([]byte, diskProbeFile)); err == nil {
		err = f.Sync()
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &diskProbe{f: f, every: every, from: measureFrom, stop: make(chan struct{}), done: make(chan struct{})}, nil
}

func (p *diskProbe) run() {
	defer close(p.done)
	block := make([]byte, diskProbeBlock)
	t := time.NewTicker(p.every)
	defer t.Stop()
	var off int64
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		block[0]++
		if _, err := p.f.WriteAt(block, off); err != nil {
			p.fail(err)
			return
		}
		off = (off + diskProbeBlock) % diskProbeFile
		start := time.Now()
		if err := unix.Fdatasync(int(p.f.Fd())); err != nil {
			p.fail(err)
			return
		}
		if took := time.Since(start); !start.Before(p.from) {
			p.mu.Lock()
			p.syncs = append(p.syncs, took)
			p.mu.Unlock()
			select {
			case p.synced <- struct{}{}:
			default:
			}
		}
	}
}

func (p *diskProbe) fail(err error) {
	p.mu.Lock()
	p.failure = err
	p.mu.Unlock()
}

// finish stops the probe, removes its file and returns the syncs of the
// measured part, sorted, or why it stopped early. A sync in flight is
// waited for: a stall at the end of the row is still the row's.
func (p *diskProbe) finish() ([]time.Duration, error) {
	close(p.stop)
	<-p.done
	name := p.f.Name()
	p.f.Close()
	os.Remove(name)
	p.mu.Lock()
	defer p.mu.Unlock()
	slices.Sort(p.syncs)
	return p.syncs, p.failure
}

// diskStall is the sync time the report counts as a stall: the open
// rows' p99 target, which one sync that long holds every commit behind
// it past.
const diskStall = 100 * time.Millisecond

// setDisk records what the probe saw in r: the syncs' p99 and longest,
// and how many took diskStall or more, and how long those took in all.
func (r *result) setDisk(syncs []time.Duration) {
	if len(syncs) == 0 {
		return
	}
	r.DiskSyncs = len(syncs)
	r.DiskP99, r.DiskMax = pct(syncs, 0.99), pct(syncs, 1)
	for _, s := range syncs {
		if s >= diskStall {
			r.DiskStalls++
			r.DiskStalledMs += float64(s.Microseconds()) / 1000
		}
	}
}
