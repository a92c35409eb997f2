package badgerstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

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
// The files are Badger's own: every memtable log (NNNNN.mem in the
// directory: a rotated one may hold writes its flush has not made a table
// yet) and the two newest value logs (NNNNNN.vlog). Badger numbers each
// new one after the last; a sync first opens any that appeared, and every
// logRescan syncs it reads the directories again (a number skipped would
// otherwise hide every later file). TestLogSyncTracksBadgersFiles holds
// Badger to that layout.
type logSync struct {
	dir, valueDir string
	aio           *aio
	mem, vlog     []logFile // ascending ids
	fds           []int
	syncs         int
}

// logFile is an open log file and its number.
type logFile struct {
	id uint64
	fd int
}

// logRescan is how many syncs go between two reads of the directories.
const logRescan = 1024

// newLogSync sets up AIO; Open falls back to Badger's SyncWrites if it
// fails (an old kernel, a sandbox that forbids io_setup).
func newLogSync(dir, valueDir string) (*logSync, error) {
	a, err := newAIO()
	if err != nil {
		return nil, err
	}
	return &logSync{dir: dir, valueDir: valueDir, aio: a}, nil
}

// sync fsyncs every log file a write so far may be in.
func (l *logSync) sync() error {
	if err := l.refresh(); err != nil {
		return err
	}
	return l.aio.fsync(l.fds)
}

// refresh opens the log files Badger created since the last call.
func (l *logSync) refresh() error {
	l.syncs++
	if l.syncs%logRescan == 1 {
		return l.scan()
	}
	m, err := l.openNext(l.mem, l.dir, memName)
	if err != nil {
		return err
	}
	v, err := l.openNext(l.vlog, l.valueDir, vlogName)
	if err != nil {
		return err
	}
	if m || v {
		return l.scan() // rotated: drop what is gone, and check the numbering
	}
	return nil
}

// openNext opens the files numbered after the last of files, if they
// exist, and reports whether it found one.
func (l *logSync) openNext(files []logFile, dir string, name func(uint64) string) (bool, error) {
	if len(files) == 0 {
		return false, nil // scan finds the first
	}
	_, err := os.Stat(filepath.Join(dir, name(files[len(files)-1].id+1)))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// scan reads the directories and opens every memtable log and the two
// newest value logs, closing the files Badger deleted.
func (l *logSync) scan() error {
	mem, err := l.scanDir(l.mem, l.dir, ".mem", 0)
	if err != nil {
		return err
	}
	vlog, err := l.scanDir(l.vlog, l.valueDir, ".vlog", 2)
	if err != nil {
		return err
	}
	l.mem, l.vlog = mem, vlog
	l.fds = l.fds[:0]
	for _, f := range l.mem {
		l.fds = append(l.fds, f.fd)
	}
	for _, f := range l.vlog {
		l.fds = append(l.fds, f.fd)
	}
	return nil
}

// scanDir returns the files of dir with ext, the newest keep of them (all
// if keep is 0), reusing open ones and closing the rest of have.
func (l *logSync) scanDir(have []logFile, dir, ext string, keep int) ([]logFile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("badgerstore: log files: %w", err)
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
	if keep > 0 && len(ids) > keep {
		ids = ids[len(ids)-keep:]
	}
	out := make([]logFile, 0, len(ids))
	for _, id := range ids {
		if i := slices.IndexFunc(have, func(f logFile) bool { return f.id == id }); i >= 0 {
			out = append(out, have[i])
			have[i].fd = -1
			continue
		}
		fd, err := unix.Open(filepath.Join(dir, nameOf(id, ext)), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			continue // deleted since the listing
		}
		if err != nil {
			closeLogs(out)
			return nil, fmt.Errorf("badgerstore: open log file: %w", err)
		}
		out = append(out, logFile{id: id, fd: fd})
	}
	closeLogs(have)
	return out, nil
}

func nameOf(id uint64, ext string) string {
	if ext == ".mem" {
		return memName(id)
	}
	return vlogName(id)
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

// close closes the files and the AIO context.
func (l *logSync) close() error {
	closeLogs(l.mem)
	closeLogs(l.vlog)
	l.mem, l.vlog, l.fds = nil, nil, nil
	return l.aio.close()
}
