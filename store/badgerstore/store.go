// Package badgerstore is the embedded, default history.Store: Badger in a
// local directory, one process per directory.
//
// Keys are namespaced by tenant, then conversation:
//
//	c \x00 tenant \x00 conversation \x00 'm'                metadata (history.MarshalMeta, binary), its summary's text left out
//	c \x00 tenant \x00 conversation \x00 'u'                the summary's text
//	c \x00 tenant \x00 conversation \x00 's' seq(8, BE)     message (history codec)
//	c \x00 tenant \x00 conversation \x00 'e' id(8, BE)      exchange record (history.MarshalExchange), the newest 200 (exchanges.go)
//	l \x00 tenant \x00 ^updated(8, BE) conversation         listing entry: dirty (1 byte)
//	w \x00 tenant \x00 conversation                         search totals: docs, terms, watermark (uvarints)
//	g \x00 tenant \x00 \x00 segment(8, BE)                  a search segment's table of conversations (segment.go)
//	i \x00 tenant \x00 term \x00 segment(8, BE)             a term's postings in one search segment (segment.go)
//	f \x00 tenant \x00 conversation \x00 segment(8, BE)     the span of a conversation's records in a segment
//	x \x00 tenant \x00 conversation                         pending work: kind, ranges (pending.go)
//	k \x00 tenant \x00 model                                a model's calibration (history.Calibration, JSON; calibration.go)
//	v \x00 "index"                                         version of the indexes (reindex.go)
//	v \x00 "segment"                                       the last search segment's number (segment.go)
//	v \x00 "side"                                          exchange records and segments are in the side database (side.go)
//
// Exchange records ('e') and search segments ('g', 'i', 'f', and a copy of
// the segment counter) are kept in a second database, the side database,
// in the directory's side subdirectory (side.go); every other key is in
// the main one.
// This comment is the layout's one description; TestKeyLayoutComment
// checks that every key prefix the package writes is listed here.
//
// Tenant and conversation ids never hold a NUL byte, and terms are
// letters and digits, so one conversation's keys never share a prefix
// with another's.
//
// A commit writes the records, the metadata and the conversation's
// listing entry (^updated sorts the newest first), moved and marked
// dirty, in one transaction. Postings are written later by the folder
// (fold.go), in segments of many conversations' records, one key per
// term (segment.go), and it moves each conversation's watermark in its
// totals key: Search analyses the
// records past the watermark itself, so it never misses one. Postings are
// checked against the metadata at query time, as records are: a staged
// record (past NextSeq), an inactive message or a conversation being
// deleted is never returned. Records leave with their postings: a hard
// forget deletes both right after its commit (hidden by the Erased gap
// meanwhile), a Delete in bounded transactions after one that removes
// the metadata, listing entry and totals (see pending.go). Exchange
// records are read only while the metadata is there and are purged with
// a Delete's pending work; they are written only after a read of the
// metadata, ordered with the purge (see records.go), so a conversation
// that is gone gets none.
package badgerstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/wire"
)

// Options configure a Store. The zero value is usable.
type Options struct {
	// NoSync, if true, does not fsync each commit: faster, but a crash may
	// lose the last commits (never a part of one). Default false: durable.
	NoSync bool
	// Logger receives Badger's own log lines at debug level (warnings and
	// errors at their level). Default: discarded.
	Logger *slog.Logger
	// InMemory keeps everything in memory (tests and benchmarks only).
	InMemory bool
	// GCInterval is how often the value log is garbage collected.
	// Default 10m; negative disables it.
	GCInterval time.Duration
	// MinFreeBytes is the free space the directory's file system must keep:
	// below it commits are refused with history.ErrNoSpace, and a store
	// opened below it opens read-only (Badger writes through memory-mapped
	// files, and a write into a full file system kills the process with
	// SIGBUS). Default 0: no floor.
	MinFreeBytes int64
	// FreeBytes returns the free space of the file system holding dir.
	// Default: statfs(2).
	FreeBytes func(dir string) (int64, error)
	// Now is the clock that ages a free-space reading (see CanCommit).
	// Default time.Now.
	Now func() time.Time
	// ReadOnly opens the store read-only: loads work, commits fail with
	// history.ErrNoSpace.
	ReadOnly bool
	// IndexBacklog is how many messages are committed without search
	// postings before a background fold writes theirs (segments of up to
	// 256 messages) (Search analyses
	// them meanwhile: it finds them all the same, at a cost that grows
	// with the backlog: a search analyses at most this many records more
	// than it would read postings of). Default 4096; negative folds each
	// commit's messages right after it (tests).
	IndexBacklog int
	// SyncEvery, with NoSync, is how often Badger's logs are synced in the
	// background: what a machine's crash can lose is about that much
	// (without it, what the kernel had not written back yet: up to about
	// half a minute), and the kernel writes the logs back in small steady
	// pieces instead of bursts of hundreds of megabytes. Default 200ms;
	// negative: never (the kernel's own write-back alone).
	SyncEvery time.Duration
	// GroupWait is how long, with durable writes and concurrent commits,
	// the committer gathers commits before it syncs a group (see
	// committer). Default 1ms; negative: never.
	GroupWait time.Duration
	// AIOSync has the committer fsync Badger's logs through Linux AIO,
	// parked, instead of Badger's own msync, which holds its thread (see
	// logSync). Linux only; Badger syncs if AIO cannot be set up. Recall's
	// configuration turns it on (aio_fsync).
	AIOSync bool
	// OnSync, if set, is called after each sync of the logs that makes a
	// group of durable commits durable (AIOSync's log syncer), with how
	// long the sync took: the floor of a durable commit's latency, and
	// where a disk's stalls show (recall serve observes it as
	// recall_store_duration_seconds{op="sync"}). It must not block.
	OnSync func(time.Duration)
}

// Store is a history.Store on Badger.
type Store struct {
	db       *badger.DB
	side     *badger.DB // exchange records and search segments (side.go)
	recMu    sync.Mutex // orders record appends and a Delete's purge of them (side.go)
	dir      string
	minFree  int64
	free     func(dir string) (int64, error)
	spare    spareSpace // the last free-space reading (CanCommit)
	readOnly bool
	noSync   bool
	logs     *logSync     // fsyncs Badger's logs after each group (durable, Linux)
	toSync   chan syncJob // written groups, to the log syncer (commit.go): with logs only
	stop     chan struct{}
	done     chan struct{}
	commits  chan *commitReq // to the committer (see commit.go)
	closing  chan struct{}   // closed by Close: the committer drains and stops
	stopped  chan struct{}   // closed when the committer has stopped

	// genPre and genPost count the indexed records changes add or remove,
	// before and after they can be seen: they age cached statistics (see
	// tenantStats).
	genPre, genPost atomic.Uint64
	stats           statsCache // tenants' search statistics (see search.go)

	metas           *metaCache    // metadata the committer wrote (nil read-only; metacache.go)
	fresh           *freshRecords // records committed, not yet indexed (nil read-only; fresh.go)
	metaReads       atomic.Int64  // Badger reads of metadata by the committer and exchange appends (tests)
	markReads       atomic.Int64  // Badger reads of a pending mark by exchange appends (tests)
	commitMarkReads atomic.Int64  // Badger reads of a pending mark by commits (tests)
	foldCommitReads atomic.Int64  // Badger reads of a fold commit's checks: a conversation's head, its totals (tests)
	foldReads       atomic.Int64  // conversations a fold read from Badger, not from fresh (tests)
	foldMetaReads   atomic.Int64  // conversations whose metadata a fold read from Badger, not from metas (tests)
	foldHeadReads   atomic.Int64  // conversations whose totals and pending key a fold read before analysing (tests)

	workMu  sync.Mutex
	working map[history.Key]int // conversations whose pending work is being done (see pending.go)

	logger            *slog.Logger
	indexBacklog      int                                  // Options.IndexBacklog
	foldMu            sync.Mutex                           // one fold at a time (fold.go)
	segment           uint64                               // the last search segment written (segment.go): foldMu guards it
	segmentsLost      bool                                 // Open found the side counter behind the main one (dropOrphanSegments)
	foldTotals        map[history.Key]totals               // the totals folds last wrote (fold.go): foldMu guards it
	heldTotals        map[history.Key]totals               // the totals the committer last wrote in a fold's commit (fold.go): the committer's alone
	foldBuilders      []*segBuilder                        // emptied segment builders fold rounds reuse (fold.go): foldMu guards them
	erasures          atomic.Uint64                        // erasures of records begun (finishPending): a fold checks none began while it read
	groupWait         time.Duration                        // Options.GroupWait
	after             func(time.Duration) <-chan time.Time // time.After (tests hold it)
	groups            atomic.Int64                         // groups the committer took (tests)
	lastGroup         atomic.Int64                         // commits in the last one (tests)
	beforeFoldCommit  func()                               // tests: runs before a fold commits
	failFoldCommit    func() error                         // tests: an error to fail a fold's main transaction with
	betweenFoldPhases func()                               // tests: runs after a fold read, before it writes
	afterFoldSnapshot func()                               // tests: runs after a fold round took its snapshot, before it reads
	backlog           atomic.Int64                         // messages committed since the folder last woke
	notedMu           sync.Mutex                           // guards noted
	noted             map[history.Key]struct{}             // conversations committed to since the folder last woke (fold.go)
	scans             atomic.Int64                         // listings of dirty conversations (Fold): tests
	hurry             chan struct{}                        // closed when Close begins: the folder stops pausing
	pause             func(time.Duration)                  // the folder's pause (pauseFold; tests hold it)
	burst             time.Duration                        // the folder's time on the core between pauses (foldBurst; tests shorten it)
	cpus              int                                  // the CPUs the process may run on (runtime.NumCPU; 0: not counted): newPacer
	afterFold         func(error)                          // tests: runs after each of the folder's folds
	foldNow           chan struct{}                        // wakes the folder (fold.go)
	folded            chan struct{}                        // closed when the folder has stopped
	synced            chan struct{}                        // closed when the background syncer has stopped
	sideSynced        chan struct{}                        // closed when the side database's syncer has stopped
	beforeRecordWrite func()                               // tests: runs between an append's metadata read and its write
	afterGroupWrite   func()                               // tests: runs after a group's transaction committed, before its sync
	beforeLogSync     func()                               // tests: runs after a sync of the log syncer's began, before it waits for it
	onSync            func(time.Duration)                  // Options.OnSync
	syncHold          time.Duration                        // logSyncHold (tests: longer)
	beforeRecordPurge func()                               // tests: runs before a Delete's purge of records takes recMu
	beforeErase       func()                               // tests: runs after a hard forget's commit, before its erasure
}

var _ history.Store = (*Store)(nil)

// valueThreshold is the size past which a value lives in Badger's value
// log instead of the LSM tree: summaries and most messages here, exchange
// records (about 700 bytes) and search segments in the side database.
// Only the metadata, listing and search totals, and short messages stay
// in the tree.
//
// Whatever the tree holds is flushed from memtables and rewritten by every
// compaction that passes it down; each conversation's keys are spread
// over the whole key range, so every level-0 table overlaps all of level
// 1. At 1 KiB, a request at the load script's open rate put about 2.7 KB
// into the tree: a 16 MiB memtable flushed every 6 seconds and the fourth
// flush started a level-0 compaction whose table builders held the
// proxy's one core for over a second, the open rows' 1-3 s tails.
// The first
// threshold, 1 KiB, took the summary out of the metadata record that
// every commit rewrites.
//
// The price was in durable commits: each writes its messages to the
// value log too, and its fsync waited for what the inspector's records
// and the search fold appended there meanwhile (2-8 ms instead of under 1
// at 1,000 req/s, same section). Those now go to the side database
// (side.go), which no commit syncs.
const valueThreshold = 256

// tableCompression is how new tables are compressed (see Open); tests
// write Snappy tables with it, as earlier versions did.
var tableCompression = options.None

// compressedBlockCache is the block cache of a directory that holds
// compressed tables (an earlier version's, until compactions rewrite
// them): their blocks are decoded into buffers the cache keeps.
const compressedBlockCache = 16 << 20

// blockCacheSize is the size of the main database's cache of decoded
// blocks: none unless a table of dir is compressed (or dir's manifest
// cannot be read, in which case badger.Open tells what is wrong). A plain
// table's block is a slice of the table's mapping, which costs nothing to
// read again, and Badger charges the cache for it the capacity of that
// slice, the rest of the table: every block it admitted evicted all the
// others (a hit ratio of 0.14 in the load script's recall-sync row), and
// the cache's bookkeeping was 4% of the proxy's CPU for nothing.
// Badger's
// own documentation advises no cache without compression or encryption.
func blockCacheSize(dir string, inMemory bool) int64 {
	if tableCompression != options.None {
		return compressedBlockCache
	}
	if inMemory {
		return 0
	}
	f, err := os.Open(filepath.Join(dir, badger.ManifestFilename))
	if errors.Is(err, fs.ErrNotExist) {
		return 0 // a new directory: its tables are written plain
	}
	if err != nil {
		return compressedBlockCache
	}
	defer f.Close()
	m, _, err := badger.ReplayManifestFile(f, 0, badger.DefaultOptions(dir).WithLogger(nil)) // Open logs what is wrong
	if err != nil {
		return compressedBlockCache
	}
	for _, t := range m.Tables {
		if t.Compression != options.None {
			return compressedBlockCache
		}
	}
	return 0
}

// Open opens (creating if needed) the store in dir. A directory already
// open in another process fails with Badger's lock error.
func Open(dir string, o Options) (*Store, error) {
	bo := badgerOptions(dir, o)
	if o.FreeBytes == nil {
		o.FreeBytes = freeBytes
	}
	if o.IndexBacklog == 0 {
		o.IndexBacklog = defaultIndexBacklog
	}
	if o.GroupWait == 0 {
		o.GroupWait = time.Millisecond
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Store{dir: dir, minFree: o.MinFreeBytes, free: o.FreeBytes, spare: spareSpace{now: o.Now}, readOnly: o.ReadOnly, noSync: o.NoSync || o.InMemory,
		stop: make(chan struct{}), done: make(chan struct{}), logger: o.Logger, indexBacklog: o.IndexBacklog,
		groupWait: o.GroupWait, onSync: o.OnSync, syncHold: logSyncHold, after: time.After, burst: foldBurst, cpus: runtime.NumCPU(),
		foldNow: make(chan struct{}, 1), folded: make(chan struct{}), hurry: make(chan struct{})}
	s.pause = s.pauseFold
	if !s.readOnly {
		// The committer writes all metadata and records (see metaCache).
		s.metas, s.fresh = newMetaCache(metaCacheBytes), newFreshRecords(freshBytes)
	}
	if !o.InMemory && !s.readOnly && s.minFree > 0 {
		s.readOnlyIfFull(dir)
	}
	if !s.noSync && !s.readOnly && o.AIOSync {
		s.syncLogsThroughAIO(bo)
	}
	bo = bo.WithSyncWrites(!s.noSync && s.logs == nil)
	bo = bo.WithReadOnly(s.readOnly)
	if err := s.openDBs(dir, bo, o); err != nil {
		return nil, err
	}
	if !s.readOnly {
		if err := s.recoverOnOpen(dir); err != nil {
			s.closeDBs()
			return nil, err
		}
	}
	s.commits, s.closing, s.stopped = make(chan *commitReq, 1024), make(chan struct{}), make(chan struct{})
	go s.committer()
	if s.readOnly {
		close(s.folded)
	} else {
		// What a previous run left unindexed (at most about
		// IndexBacklog messages), before anything else commits.
		if err := s.Fold(); err != nil {
			close(s.closing)
			<-s.stopped
			s.closeDBs()
			return nil, fmt.Errorf("badgerstore: open %s: index messages: %w", dir, err)
		}
		go s.folder()
	}
	s.startLoops(o)
	return s, nil
}

// badgerOptions are the main database's options for dir and o.
//
// Memory is bounded by these, not by the data: two 16 MiB memtables
// and no cache of decoded blocks unless a table is compressed
// (Badger's defaults, 5 x 64 MiB memtables and a 256 MiB block cache,
// are sized for a database server, not a proxy). Tables are not
// compressed. Snappy halved them on disk and in the mapped pages loads
// touch, but a compaction's table builder then holds each block twice,
// plain and compressed, and at a high write rate that heap kept the Go
// runtime collecting at its memory limit, on the proxy's core.
// Each table records its
// compression, so directories written compressed stay readable,
// through the block cache blockCacheSize gives them.
func badgerOptions(dir string, o Options) badger.Options {
	bo := badger.DefaultOptions(dir).
		WithMemTableSize(16 << 20).
		WithNumMemtables(2).
		WithCompression(tableCompression).
		WithBlockCacheSize(blockCacheSize(dir, o.InMemory)).
		WithValueLogFileSize(256 << 20).
		WithNumCompactors(2).
		WithLogger(slogAdapter{o.Logger}).
		WithInMemory(o.InMemory).
		WithNumVersionsToKeep(1).
		WithMetricsEnabled(countedDB == "main")
	if o.InMemory {
		return bo.WithDir("").WithValueDir("")
	}
	// Values past valueThreshold go to the value log, appended once
	// and never rewritten by a compaction; the LSM tree keeps their
	// keys and pointers. See valueThreshold.
	return bo.WithValueThreshold(valueThreshold)
}

// readOnlyIfFull opens the store read-only when its file system has
// less free space than the floor: opening replays the write-ahead log
// and may flush it, and on a full file system that is the crash a floor
// exists to avoid.
func (s *Store) readOnlyIfFull(dir string) {
	if err := s.CanCommit(); errors.Is(err, history.ErrNoSpace) {
		if _, statErr := os.Stat(dir); statErr == nil {
			s.readOnly = true
			if s.logger != nil {
				s.logger.Warn("store opened read-only: too little free space", "dir", dir, "error", err.Error())
			}
		}
	}
}

// syncLogsThroughAIO syncs durable writes' logs through AIO (s.logs)
// when the platform can; otherwise Badger syncs them itself.
//
// The directories are made first, as Badger makes them (0700): a fresh
// data directory (`recall serve` on a new machine) does not exist yet,
// and the logSync opens them.
func (s *Store) syncLogsThroughAIO(bo badger.Options) {
	var err error
	for _, d := range []string{bo.Dir, bo.ValueDir} {
		err = errors.Join(err, os.MkdirAll(d, 0o700))
	}
	var ls *logSync
	if err == nil {
		ls, err = newLogSync(bo.Dir, bo.ValueDir)
	}
	if err == nil {
		s.logs = ls
	} else if s.logger != nil {
		s.logger.Warn("durable writes: fsync through AIO unavailable, Badger syncs them itself", "component", "badgerstore", "error", err.Error())
	}
}

// openDBs opens the main database with bo (once a writable dir is known
// to be writable) and the side database; on failure nothing stays open.
func (s *Store) openDBs(dir string, bo badger.Options, o Options) error {
	if !o.InMemory && !s.readOnly {
		if err := checkWritable(dir); err != nil {
			s.closeLogs()
			return err
		}
	}
	db, err := badger.Open(bo)
	if err != nil {
		s.closeLogs()
		return fmt.Errorf("badgerstore: open %s: %w", dir, err)
	}
	s.db = db
	if s.readOnly && !s.sideMarked() {
		s.side = db // an earlier version's directory, not moved yet: its side keys are here
	} else if s.side, err = openSide(dir, o, s.readOnly); err != nil {
		db.Close()
		s.closeLogs()
		return err
	}
	return nil
}

// recoverOnOpen runs the steps of a writable Open, in order; work a
// crash interrupted (a delete, a staged commit, a big erasure) is
// finished before anything else writes.
func (s *Store) recoverOnOpen(dir string) error {
	for _, step := range []struct {
		what string // what the error says it was doing, "" for the store's own words
		run  func() error
	}{
		{"", s.moveToSide},
		{"", s.readSegmentCounter},
		{"", s.dropOrphanSegments},
		{"finish pending work: ", s.recoverPending},
		{"build indexes: ", s.buildIndexes},
	} {
		if err := step.run(); err != nil {
			return fmt.Errorf("badgerstore: open %s: %s%w", dir, step.what, err)
		}
	}
	return nil
}

// startLoops starts the background loops a writable store on disk
// runs: relaxed writes' log syncs (every o.SyncEvery), the side
// database's syncs, and value-log garbage collection (every
// o.GCInterval); each one not started has its channel closed.
func (s *Store) startLoops(o Options) {
	if o.GCInterval == 0 {
		o.GCInterval = 10 * time.Minute
	}
	s.synced = make(chan struct{})
	if o.SyncEvery == 0 {
		o.SyncEvery = defaultSyncEvery
	}
	if s.noSync && o.SyncEvery > 0 && !o.InMemory && !s.readOnly {
		go s.syncLoop(o.SyncEvery)
	} else {
		close(s.synced)
	}
	s.sideSynced = make(chan struct{})
	if !o.InMemory && !s.readOnly {
		go s.sideSyncLoop(sideSyncEvery)
	} else {
		close(s.sideSynced)
	}
	if o.GCInterval > 0 && !o.InMemory && !s.readOnly {
		go s.gcLoop(o.GCInterval)
	} else {
		close(s.done)
	}
}

// defaultSyncEvery is Options.SyncEvery's default.
const defaultSyncEvery = 200 * time.Millisecond

// syncLoop syncs Badger's logs every interval until Close (relaxed writes
// only: durable ones are synced by their commits).
func (s *Store) syncLoop(every time.Duration) {
	s.tickUntilClose(every, s.synced, func() {
		// The side database first: a fold's watermark synced here never
		// goes ahead of its postings (see writeSegments).
		err := s.side.Sync()
		if err == nil {
			err = s.db.Sync()
		}
		if err != nil && s.logger != nil {
			s.logger.Warn("background sync of relaxed writes failed", "component", "badgerstore", "error", err.Error())
		}
		if afterSync != nil {
			afterSync()
		}
	})
}

// tickUntilClose runs f every interval until Close, then closes done:
// the loop of each of the store's background chores.
func (s *Store) tickUntilClose(every time.Duration, done chan struct{}, f func()) {
	defer close(done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			f()
		}
	}
}

// afterSync, if set (tests), runs after each background sync.
var afterSync func()

// gcLoop reclaims value-log space left by rewritten (flagged) and deleted
// records until Close.
func (s *Store) gcLoop(every time.Duration) {
	s.tickUntilClose(every, s.done, func() {
		for _, db := range []*badger.DB{s.db, s.side} {
			for db.RunValueLogGC(0.5) == nil {
				// Each successful run rewrote one file; go on while it pays.
			}
		}
	})
}

// CanCommit reports whether the store takes commits: nil, or an error
// wrapping history.ErrNoSpace when it is read-only or its file system has
// less free space than the floor.
func (s *Store) CanCommit() error {
	if s.readOnly {
		return fmt.Errorf("badgerstore: %w: opened read-only", history.ErrNoSpace)
	}
	if s.minFree <= 0 {
		return nil
	}
	free, err := s.spare.read(s.dir, s.minFree, s.free)
	if err != nil {
		return fmt.Errorf("badgerstore: free space of %s: %w", s.dir, err)
	}
	if free < s.minFree {
		return fmt.Errorf("badgerstore: %w: %d MiB free in %s, below the floor of %d MiB", history.ErrNoSpace, free>>20, s.dir, s.minFree>>20)
	}
	return nil
}

// ReadOnly reports whether the store was opened read-only (asked for, or
// because its file system was below the free-space floor).
func (s *Store) ReadOnly() bool { return s.readOnly }

// Close stops background work, flushes and closes the store.
func (s *Store) Close() error {
	// What this run left unindexed is indexed now, so that the next Open
	// (which folds what is left before it returns) starts at once, however
	// much a bulk writer such as the load script's seeder stored.
	close(s.hurry)
	var foldErr error
	if !s.readOnly {
		foldErr = s.Fold()
	}
	close(s.closing)
	<-s.stopped
	<-s.folded
	close(s.stop)
	<-s.done
	<-s.synced
	<-s.sideSynced
	return errors.Join(foldErr, s.closeDBs())
}

// closeDBs closes both databases and releases the logSync.
func (s *Store) closeDBs() error {
	var sideErr error
	if s.side != s.db {
		sideErr = s.side.Close()
	}
	return errors.Join(s.db.Close(), sideErr, s.closeLogs())
}

// closeLogs releases the logSync, if any, once the database is closed.
func (s *Store) closeLogs() error {
	if s.logs == nil {
		return nil
	}
	err := s.logs.close()
	s.logs = nil
	return err
}

// DB exposes the underlying database for operator tools and tests.
func (s *Store) DB() *badger.DB { return s.db }

func convPrefix(k history.Key) []byte {
	return pairPrefix('c', k.Tenant, k.Conversation, 9)
}

// pairPrefix is tag \x00 first \x00 second \x00 (a conversation's keys
// under tenant and conversation, a term's postings under tenant and
// term), with room for spare more bytes.
func pairPrefix(tag byte, first, second string, spare int) []byte {
	return appendPair(make([]byte, 0, 4+len(first)+len(second)+spare), tag, first, second)
}

// appendPair appends pairPrefix(tag, first, second, 0) to b.
func appendPair(b []byte, tag byte, first, second string) []byte {
	b = append(b, tag, 0)
	b = append(b, first...)
	b = append(b, 0)
	b = append(b, second...)
	return append(b, 0)
}

// splitTenant splits a key tag \x00 tenant \x00 rest at the NUL after
// the tenant (ids hold no NUL); ok is false if there is none.
func splitTenant(key []byte) (tenant, rest []byte, ok bool) {
	tenant, rest, ok = bytes.Cut(key[2:], []byte{0})
	return tenant, rest, ok
}

func metaKey(prefix []byte) []byte {
	return append(bytes.Clone(prefix), 'm')
}

func msgKey(prefix []byte, seq uint64) []byte {
	b := make([]byte, len(prefix), len(prefix)+9)
	copy(b, prefix)
	b = append(b, 's')
	return binary.BigEndian.AppendUint64(b, seq)
}

// summaryKey holds the text of the conversation's summary (see setMeta).
func summaryKey(prefix []byte) []byte {
	return append(bytes.Clone(prefix), 'u')
}

// summaryTextReads counts readMeta's reads of a summary's text under its
// own key (tests).
var summaryTextReads atomic.Int64

// readMeta reads the conversation's metadata, its summary's text included.
func readMeta(txn *badger.Txn, prefix []byte) (history.Meta, bool, error) {
	m, ok, err := readMetaHead(txn, prefix)
	if err != nil || m.Summary == nil || m.Summary.Text != "" {
		return m, ok, err // no summary, or one written with its text inside
	}
	summaryTextReads.Add(1)
	item, err := txn.Get(summaryKey(prefix))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return m, ok, nil // an empty text is not written
	}
	if err != nil {
		return history.Meta{}, false, err
	}
	if err := item.Value(func(v []byte) error { m.Summary.Text = string(v); return nil }); err != nil {
		return history.Meta{}, false, err
	}
	return m, ok, nil
}

// readMetaHead reads the conversation's metadata without its summary's
// text, for readers that never look at it.
func readMetaHead(txn *badger.Txn, prefix []byte) (history.Meta, bool, error) {
	item, err := txn.Get(metaKey(prefix))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return history.Meta{}, false, nil
	}
	if err != nil {
		return history.Meta{}, false, err
	}
	var m history.Meta
	err = item.Value(func(v []byte) error {
		var err error
		m, err = history.UnmarshalMeta(v)
		return err
	})
	return m, true, err
}

// Load reads the metadata and the tail q asks for, newest first, skipping
// inactive ranges, and returns the tail oldest first.
//
// Badger's skiplist iterates backwards at O(log n) a step, so the tail is
// read in forward batches that walk back from the newest message, each
// twice the size of the one before: a forward step is O(1).
func (s *Store) Load(ctx context.Context, k history.Key, q history.Query) (history.Snapshot, error) {
	var snap history.Snapshot
	prefix := convPrefix(k)
	err := s.db.View(func(txn *badger.Txn) error {
		m, ok, err := readMeta(txn, prefix)
		if err != nil || !ok {
			snap.Complete = true
			return err
		}
		snap.Meta = m
		q := q.Resolve(&m)
		if m.Messages == 0 {
			snap.Complete = true
			return nil
		}
		opts := badger.DefaultIteratorOptions
		opts.Prefix = append(bytes.Clone(prefix), 's')
		opts.PrefetchValues = false // values are copied once, into the scratch
		it := txn.NewIterator(opts)
		defer it.Close()
		sc := getScratch()
		defer putScratch(sc)

		var tokens, turns int
		tail := make([]history.Message, 0, 32)
		batch := sc.batch[:0]
		defer func() { sc.batch = batch }()
		size := uint64(16)
	read:
		for hi := m.NextSeq - 1; hi > q.After; size = min(2*size, 512) {
			if g, ok := m.InGap(hi); ok {
				hi = g.From - 1
				continue
			}
			lo := q.After + 1
			if hi > size && hi-size+1 > lo {
				lo = hi - size + 1
			}
			for _, g := range m.Gaps { // never read into an inactive range
				if g.To >= lo && g.To < hi {
					lo = g.To + 1
				}
			}
			if batch, err = readRange(it, prefix, lo, hi, batch[:0], &sc.raw); err != nil {
				return err
			}
			for i := len(batch) - 1; i >= 0; i-- {
				msg := batch[i]
				oldest := ""
				if len(tail) > 0 {
					oldest = tail[len(tail)-1].Role
				}
				if q.Done(len(tail), tokens, turns, oldest, msg.Seq, m.Cut) {
					break read
				}
				if msg.Active() {
					tail = append(tail, msg)
					tokens += msg.Tokens
					if msg.Role == wire.RoleUser {
						turns++
					}
				}
			}
			hi = lo - 1
		}
		snap.Complete = len(tail) >= m.Messages
		for i, j := 0, len(tail)-1; i < j; i, j = i+1, j-1 {
			tail[i], tail[j] = tail[j], tail[i]
		}
		ownRaws(tail)
		snap.Tail = tail
		return nil
	})
	if err != nil {
		return history.Snapshot{}, fmt.Errorf("badgerstore: load %s: %w", k, err)
	}
	return snap, ctx.Err()
}

// readRange appends the messages with lo <= Seq <= hi to dst, oldest
// first. Their Raw are views of scratch, which the caller must not reuse
// before it has copied the messages it keeps (ownRaws).
func readRange(it *badger.Iterator, prefix []byte, lo, hi uint64, dst []history.Message, scratch *[]byte) ([]history.Message, error) {
	for it.Seek(msgKey(prefix, lo)); it.Valid(); it.Next() {
		item := it.Item()
		seq := binary.BigEndian.Uint64(item.Key()[len(prefix)+1:])
		if seq > hi {
			break
		}
		var msg history.Message
		err := item.Value(func(v []byte) error {
			// A full slice: a later append to scratch that outgrows it
			// moves scratch, never writes over this one.
			n := len(*scratch)
			*scratch = append(*scratch, v...)
			var err error
			msg, err = history.DecodeMessage((*scratch)[n:len(*scratch):len(*scratch)], seq)
			return err
		})
		if err != nil {
			return dst, err
		}
		dst = append(dst, msg)
	}
	return dst, nil
}

// ownRaws moves the Raw of every message of tail out of the scratch
// buffer they were read into, into one allocation of exactly their size:
// a load of fifty messages then costs one allocation for their bytes, not
// fifty, and what the caller keeps (a cache entry) holds no more memory
// than it counts.
func ownRaws(tail []history.Message) {
	total := 0
	for i := range tail {
		total += len(tail[i].Raw)
	}
	buf := make([]byte, 0, total)
	for i := range tail {
		n := len(buf)
		buf = append(buf, tail[i].Raw...)
		tail[i].Raw = buf[n:len(buf):len(buf)]
	}
}

// loadScratch is what a load reads into before ownRaws copies out the
// messages it keeps: the values' bytes, and the batch of messages read.
type loadScratch struct {
	raw   []byte
	batch []history.Message
}

var scratchPool = sync.Pool{New: func() any { return &loadScratch{raw: make([]byte, 0, 32<<10)} }}

// maxPooledScratch bounds the scratch kept for reuse: a load of a
// conversation of huge messages does not pin its buffer.
const maxPooledScratch = 1 << 20

func getScratch() *loadScratch { return scratchPool.Get().(*loadScratch) }

func putScratch(sc *loadScratch) {
	if cap(sc.raw) > maxPooledScratch {
		return
	}
	sc.raw = sc.raw[:0]
	clear(sc.batch[:cap(sc.batch)]) // no pooled message keeps a load's bytes alive
	sc.batch = sc.batch[:0]
	scratchPool.Put(sc)
}

// iterate calls fn for each message with after < Seq < m.NextSeq, oldest
// first, with the flags m gives it, until fn returns false. Records at or
// past NextSeq are invisible: a staged commit that has not landed.
func iterate(txn *badger.Txn, prefix []byte, m *history.Meta, after uint64, fn func(history.Message) bool) error {
	opts := badger.DefaultIteratorOptions
	opts.Prefix = append(bytes.Clone(prefix), 's')
	opts.PrefetchValues = false
	it := txn.NewIterator(opts)
	defer it.Close()
	for it.Seek(msgKey(prefix, after+1)); it.Valid(); it.Next() {
		item := it.Item()
		seq := binary.BigEndian.Uint64(item.Key()[len(prefix)+1:])
		if seq >= m.NextSeq {
			return nil
		}
		v, err := item.ValueCopy(nil)
		if err != nil {
			return err
		}
		msg, err := history.DecodeMessage(v, seq)
		if err != nil {
			return err
		}
		msg.Flags |= m.FlagsAt(seq)
		if msg.Flags&history.Erased != 0 {
			continue // its deletion is pending
		}
		if !fn(msg) {
			return nil
		}
	}
	return nil
}

// Messages calls fn for each message after the given sequence number.
func (s *Store) Messages(ctx context.Context, k history.Key, after uint64, all bool, fn func(history.Message) bool) error {
	prefix := convPrefix(k)
	err := s.db.View(func(txn *badger.Txn) error {
		m, _, err := readMetaHead(txn, prefix) // the bounds and flags: not the summary's text
		if err != nil {
			return err
		}
		return iterate(txn, prefix, &m, after, func(msg history.Message) bool {
			if !all && !msg.Active() {
				return true
			}
			return ctx.Err() == nil && fn(msg)
		})
	})
	if err != nil {
		return fmt.Errorf("badgerstore: messages %s: %w", k, err)
	}
	return ctx.Err()
}

// slogAdapter routes Badger's logger to slog, its chatter at debug level.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) log(level slog.Level, f string, args ...any) {
	// Badger's writer logs at debug level for every batch it writes: a
	// line the logger drops must cost no formatting.
	if a.l == nil || !a.l.Enabled(context.Background(), level) {
		return
	}
	a.l.Log(context.Background(), level, fmt.Sprintf(f, args...), "component", "badger")
}
func (a slogAdapter) Errorf(f string, args ...any)   { a.log(slog.LevelError, f, args...) }
func (a slogAdapter) Warningf(f string, args ...any) { a.log(slog.LevelWarn, f, args...) }
func (a slogAdapter) Infof(f string, args ...any)    { a.log(slog.LevelDebug, f, args...) }
func (a slogAdapter) Debugf(f string, args ...any)   { a.log(slog.LevelDebug, f, args...) }

// checkWritable makes dir if it is missing and checks that this process
// can create files in it, so that a directory it cannot write (a Docker
// bind mount owned by the host's user, a read-only mount) is reported as
// such, not as Badger's bare "LOCK: permission denied".
func checkWritable(dir string) error {
	err := os.MkdirAll(dir, 0o700)
	if err == nil {
		var f *os.File
		if f, err = os.CreateTemp(dir, ".recall-write-check-*"); err == nil {
			f.Close()
			return os.Remove(f.Name())
		}
	}
	hint := ""
	if errors.Is(err, fs.ErrPermission) {
		hint = fmt.Sprintf(" (Recall runs as uid %d; a Docker bind mount must be writable by it: chown 65532:65532 the host directory, or use a named volume)", os.Getuid())
	}
	return fmt.Errorf("badgerstore: open %s: the data directory is not writable%s: %w", dir, hint, err)
}
