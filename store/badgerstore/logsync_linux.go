package badgerstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// logSync makes durable commits durable in place of Badger's SyncWrites.
//
// With SyncWrites, Badger's writer msyncs its value log and the memtable's
// write-ahead log after every write, in a system call that holds the
// goroutine's P: on a one-core proxy nothing else ran meanwhile (about
// 0.74 ms a commit group), and durable writes made 0.57x the requests of
// relaxed ones in the load script. Here Badger writes without syncing, and
// the committer fsyncs the same files after each group through Linux AIO
// (aio_linux.go), parked on the poller: the core serves other requests
// during the sync. A commit is acknowledged only after the fsync.
//
// The files are Badger's own: the newest memtable log (NNNNN.mem in the
// directory) and the newest value log (NNNNNN.vlog), where Badger writes.
// Badger numbers each new one after the last: a sync first looks for the
// next of each, and when one appeared (a rotation) reads the directory and
// syncs every file from the one it synced last to the one before the
// newest once more (their last writes came before the rotation), then
// closes them. Every logRescan syncs it reads the directories anyway (a
// number skipped would otherwise hide every later file). The next files
// are looked up by name in the directories, held open (fstatat), not by
// a path from the root (a lookup a component, twice a sync).
// TestLogSyncTracksBadgersFiles holds Badger to that layout.
//
// Up to logSyncsInFlight syncs run at once, each on an AIO context of its
// own (see logSyncRun): a group written while a sync is under way has its
// own sync begin at once, instead of waiting for the one under way to end
// and then for its own.
type logSync struct {
	dir, valueDir string
	aios          chan *aio // the contexts free: a sync holds one from begin to end
	all           []*aio

	mu            sync.Mutex // guards what follows
	dirFD, valDir int        // the directories, open for the lookups
	mem, vlog     logFile    // the newest of each: where Badger writes
	nextMem       string     // the names of the files after mem and vlog
	nextVlog      string
	retired       []logFile   // older ones, to sync once more and close
	last          *logSyncRun // the sync begun last, until it ends
	syncs         int
	retiredSyncs  int // retired files synced (tests)
}

// logSyncsInFlight is how many syncs may be under way at once. Two cut a
// commit's wait for its sync on this machine's disk (a write and fsync
// probe at 4,000 writes a second: mean 281-351 µs against 355-453 with
// one, p99 0.72-0.90 ms against 1.2-1.8); four did no better than two.
// But a second sync begun at once halves what each sync serves, and a
// sync costs two fsyncs of kernel time whatever it covers: a group
// written while a sync is under way waits for that one to end, up to
// logSyncHold, before its own begins beside it (Store.logSyncer).
const logSyncsInFlight = 2

// logFile is an open log file and its number (fd -1: none yet).
type logFile struct {
	id uint64
	fd int
}

// logRescan is how many syncs go between two reads of the directories.
const logRescan = 1024

// newLogSync sets up AIO; Open falls back to Badger's SyncWrites if it
// fails (an old kernel, a sandbox that forbids io_setup).
func newLogSync(dir, valueDir string) (*logSync, error) {
	l := &logSync{dir: dir, valueDir: valueDir, aios: make(chan *aio, logSyncsInFlight), dirFD: -1, valDir: -1, mem: logFile{fd: -1}, vlog: logFile{fd: -1}}
	for range logSyncsInFlight {
		a, err := newAIO()
		if err != nil {
			return nil, errors.Join(err, l.close())
		}
		l.all = append(l.all, a)
		l.aios <- a
	}
	for _, d := range []struct {
		fd   *int
		path string
	}{{&l.dirFD, dir}, {&l.valDir, valueDir}} {
		var err error
		if *d.fd, err = unix.Open(d.path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
			*d.fd = -1
			return nil, errors.Join(fmt.Errorf("open %s: %w", d.path, err), l.close())
		}
	}
	return l, nil
}

// sync fsyncs every log file a write so far may be in.
func (l *logSync) sync() error {
	return l.begin(l.acquire()).end()
}

// acquire waits for a free AIO context, for begin.
func (l *logSync) acquire() *aio { return <-l.aios }

// settle waits, up to hold, for the sync under way (if any) to end: what
// is written meanwhile then joins the next sync instead of having one of
// its own begin beside it.
func (l *logSync) settle(hold time.Duration) {
	l.mu.Lock()
	last := l.last
	l.mu.Unlock()
	if last == nil || hold <= 0 {
		return
	}
	t := time.NewTimer(hold)
	defer t.Stop()
	select {
	case <-last.done:
	case <-t.C:
	}
}

// A logSyncRun is one sync: begun (its fsyncs submitted) on a context of
// its own, ended once they and the sync begun before it completed.
//
// A sync covers what was written before it began only with the one
// before it: that one may have taken files Badger rotated away from
// (retired, synced once more by the sync that finds them) that hold
// writes this one's callers made. So a sync ends after the one before
// it, and fails if that one's fsyncs failed. A sync whose fsyncs failed
// puts its retired files back for the next, before it ends (the
// sequential syncs did the same).
type logSyncRun struct {
	l       *logSync
	a       *aio
	n       int   // fsyncs submitted
	err     error // of the submission
	retired []logFile
	prev    *logSyncRun // nil once it ended
	done    chan struct{}
	failed  error // its own fsyncs', set before done closes
}

// begin submits, on a (from acquire), an fsync of every log file a write
// so far may be in.
func (l *logSync) begin(a *aio) *logSyncRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := &logSyncRun{l: l, a: a, prev: l.last, done: make(chan struct{})}
	l.last = r
	if r.err = l.refresh(); r.err != nil {
		return r
	}
	r.retired, l.retired = l.retired, nil
	fds := make([]int, 0, 2+len(r.retired))
	for _, f := range append([]logFile{l.mem, l.vlog}, r.retired...) {
		if f.fd >= 0 {
			fds = append(fds, f.fd)
		}
	}
	if len(fds) > aioMax { // many rotations since the last sync: the oldest synced here
		r.err = a.fsync(fds[aioMax:])
		fds = fds[:aioMax]
	}
	var err error
	r.n, err = a.submit(fds)
	r.err = errors.Join(r.err, err)
	return r
}

// end waits for r's fsyncs and for the sync begun before it, and
// returns the first error of either's fsyncs.
func (r *logSyncRun) end() error {
	l := r.l
	err := r.err
	if r.n > 0 {
		err = errors.Join(err, r.a.wait(r.n))
	}
	var before error
	if r.prev != nil {
		<-r.prev.done
		before = r.prev.failed
		r.prev = nil
	}
	l.mu.Lock()
	if err == nil {
		l.retiredSyncs += len(r.retired)
		closeLogs(r.retired)
	} else {
		l.retired = append(r.retired, l.retired...)
	}
	if l.last == r {
		l.last = nil
	}
	l.mu.Unlock()
	r.failed = err
	close(r.done)
	l.aios <- r.a
	return errors.Join(err, before)
}

// refresh opens the log files Badger created since the last call.
func (l *logSync) refresh() error {
	l.syncs++
	if l.syncs%logRescan == 1 || l.mem.fd < 0 || l.vlog.fd < 0 {
		return l.scan()
	}
	var st unix.Stat_t
	for _, next := range [...]struct {
		dir  int
		name string
	}{{l.dirFD, l.nextMem}, {l.valDir, l.nextVlog}} {
		err := unix.Fstatat(next.dir, next.name, &st, 0)
		if err == nil {
			return l.scan() // rotated
		}
		if err != unix.ENOENT {
			return fmt.Errorf("badgerstore: log files: %w", err)
		}
	}
	return nil
}

// scan reads the directories: the newest memtable and value logs become
// the ones synced, and those after the ones synced so far, up to them,
// are retired.
func (l *logSync) scan() error {
	var err error
	if l.mem, err = l.scanDir(l.mem, l.dir, ".mem", memName); err != nil {
		return err
	}
	if l.vlog, err = l.scanDir(l.vlog, l.valueDir, ".vlog", vlogName); err != nil {
		return err
	}
	l.nextMem, l.nextVlog = memName(l.mem.id+1), vlogName(l.vlog.id+1)
	return nil
}

// scanDir returns the newest file of dir with ext, cur if it still is, and
// retires cur and the files after it, if it is not.
func (l *logSync) scanDir(cur logFile, dir, ext string, name func(uint64) string) (logFile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return cur, fmt.Errorf("badgerstore: log files: %w", err)
	}
	var ids []uint64
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ext); ok {
			if id, err := strconv.ParseUint(n, 10, 64); err == nil {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	if len(ids) == 0 || (cur.fd >= 0 && ids[len(ids)-1] == cur.id) {
		return cur, nil
	}
	newest := ids[len(ids)-1]
	if cur.fd >= 0 {
		l.retired = append(l.retired, cur)
		for _, id := range ids[:len(ids)-1] {
			if id > cur.id {
				if fd, err := openLog(dir, name(id)); err != nil {
					return cur, err
				} else if fd >= 0 {
					l.retired = append(l.retired, logFile{id: id, fd: fd})
				}
			}
		}
	}
	fd, err := openLog(dir, name(newest))
	if err != nil || fd < 0 {
		return logFile{id: cur.id, fd: -1}, err // deleted since the listing: the next sync scans again
	}
	return logFile{id: newest, fd: fd}, nil
}

// openLog opens a log file to sync it: -1 if it is gone.
func openLog(dir, name string) (int, error) {
	fd, err := unix.Open(filepath.Join(dir, name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return -1, nil
	}
	if err != nil {
		return -1, fmt.Errorf("badgerstore: open log file %s: %w", name, err)
	}
	return fd, nil
}

// memName and vlogName are Badger's names for its memtable and value logs.
func memName(id uint64) string  { return fmt.Sprintf("%05d.mem", id) }
func vlogName(id uint64) string { return fmt.Sprintf("%06d.vlog", id) }

func closeLogs(files []logFile) {
	for _, f := range files {
		if f.fd >= 0 {
			unix.Close(f.fd)
		}
	}
}

// close closes the files and the AIO contexts; no sync may be under way.
func (l *logSync) close() error {
	closeLogs(append([]logFile{l.mem, l.vlog, {fd: l.dirFD}, {fd: l.valDir}}, l.retired...))
	l.mem, l.vlog, l.retired = logFile{fd: -1}, logFile{fd: -1}, nil
	l.dirFD, l.valDir = -1, -1
	var err error
	for _, a := range l.all {
		err = errors.Join(err, a.close())
	}
	l.all = nil
	return err
}
