package badgerstore

import (
	"sync"
	"time"
)

// A free-space reading is a statfs(2) call, and CanCommit runs several
// times a request (the proxy's check, the commit, the exchange records).
// A reading far above the floor stays good for a while: from four floors
// above it (a GiB at the default 256 MiB) the file system reaches the
// floor within spareFor only at 4 GB/s or more. Near the floor every
// check reads again.
const (
	// spareFor is how long a reading at least spareMargin floors above
	// the floor is reused.
	spareFor = 250 * time.Millisecond
	// spareMargin is how many floors of headroom a reusable reading has.
	spareMargin = 4
)

// spareSpace keeps the last free-space reading.
type spareSpace struct {
	now  func() time.Time
	mu   sync.Mutex
	at   time.Time // when free was read; zero: never
	free int64
}

// read returns the free space of dir, from the last reading if it is
// younger than spareFor and at least spareMargin floors above floor.
func (sp *spareSpace) read(dir string, floor int64, statfs func(string) (int64, error)) (int64, error) {
	now := sp.now()
	sp.mu.Lock()
	if !sp.at.IsZero() && now.Sub(sp.at) < spareFor && sp.free >= floor*(spareMargin+1) {
		free := sp.free
		sp.mu.Unlock()
		return free, nil
	}
	sp.mu.Unlock()
	free, err := statfs(dir)
	if err != nil {
		return 0, err
	}
	sp.mu.Lock()
	sp.at, sp.free = now, free
	sp.mu.Unlock()
	return free, nil
}
