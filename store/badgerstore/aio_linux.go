package badgerstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// aio fsyncs files through Linux AIO (IOCB_CMD_FSYNC, Linux 4.18 and
// later), its completions counted on an eventfd that Go's network poller
// waits on: the goroutine that waits parks, and its thread's P runs other
// goroutines meanwhile. A plain fsync (or Badger's msync) holds the P
// for the whole sync; on a one-core proxy nothing else ran during it (see
// logSync). One goroutine at a time uses an aio.
type aio struct {
	ctx    uintptr  // the kernel's aio_context_t
	events *os.File // the eventfd, non-blocking: reads park on the poller
	efd    int      // its descriptor (events.Fd would make it blocking)
	iocbs  []iocb
	ptrs   []*iocb
	done   []ioEvent
	count  [8]byte
}

// iocb is the kernel's struct iocb (little-endian layout).
type iocb struct {
	data      uint64
	key       uint32
	rwFlags   uint32
	opcode    uint16
	reqprio   int16
	fildes    uint32
	buf       uint64
	nbytes    uint64
	offset    int64
	reserved2 uint64
	flags     uint32
	resfd     uint32
}

// ioEvent is the kernel's struct io_event.
type ioEvent struct {
	data, obj uint64
	res, res2 int64
}

const (
	iocbCmdFsync = 2 // IOCB_CMD_FSYNC
	iocbFlagRes  = 1 // IOCB_FLAG_RESFD: signal the eventfd on completion
	aioMax       = 64
	// aioSpins is how many times wait yields the core to other goroutines
	// before it parks on the eventfd (see reap): a busy scheduler polls
	// the network (and so notices the completion) only when it runs out
	// of work or every 10 ms, so a committer that parked at once made
	// durable commits slower at an open rate; a few yields catch most
	// completions, and many more cost closed-loop throughput.
	aioSpins = 8
)

// newAIO sets up an AIO context for up to aioMax syncs at once.
func newAIO() (*aio, error) {
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	a := &aio{events: os.NewFile(uintptr(efd), "aio-eventfd"), efd: efd}
	if _, _, e := unix.Syscall(unix.SYS_IO_SETUP, aioMax, uintptr(unsafe.Pointer(&a.ctx)), 0); e != 0 {
		a.events.Close()
		return nil, fmt.Errorf("io_setup: %w", e)
	}
	return a, nil
}

// fsync syncs every file of fds and returns when all are done: the
// first error, if any.
func (a *aio) fsync(fds []int) error {
	var first error
	for len(fds) > 0 {
		n := min(len(fds), aioMax)
		submitted, err := a.submit(fds[:n])
		if err = errors.Join(err, a.wait(submitted)); err != nil && first == nil {
			first = err
		}
		fds = fds[n:]
	}
	return first
}

// submit starts an fsync of each file of fds, at most aioMax, and
// returns how many it started: wait reaps them. The kernel holds each
// file from here to its completion, so a descriptor closed meanwhile is
// still synced.
func (a *aio) submit(fds []int) (int, error) {
	a.iocbs = append(a.iocbs[:0], make([]iocb, len(fds))...)
	a.ptrs = a.ptrs[:0]
	for i, fd := range fds {
		a.iocbs[i] = iocb{data: uint64(i), opcode: iocbCmdFsync, fildes: uint32(fd), flags: iocbFlagRes, resfd: uint32(a.efd)}
		a.ptrs = append(a.ptrs, &a.iocbs[i])
	}
	submitted := 0
	for submitted < len(fds) {
		n, _, e := unix.Syscall(unix.SYS_IO_SUBMIT, a.ctx, uintptr(len(fds)-submitted), uintptr(unsafe.Pointer(&a.ptrs[submitted])))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			// Those submitted still complete: the caller waits for them
			// before the context is used again.
			return submitted, fmt.Errorf("io_submit: %w", e)
		}
		submitted += int(n)
	}
	return submitted, nil
}

// wait reaps n completions (reap), polling the context and parking on
// the eventfd.
func (a *aio) wait(n int) error {
	if cap(a.done) < aioMax {
		a.done = make([]ioEvent, aioMax)
	}
	var first error
	poll := func(n int) (int, error) {
		zero := unix.Timespec{}
		for {
			got, _, e := unix.Syscall6(unix.SYS_IO_GETEVENTS, a.ctx, 0, uintptr(n), uintptr(unsafe.Pointer(&a.done[0])), uintptr(unsafe.Pointer(&zero)), 0)
			if e == unix.EINTR {
				continue // a signal (the runtime preempts with SIGURG): got means nothing
			}
			if e != 0 {
				return 0, fmt.Errorf("io_getevents: %w", e)
			}
			for _, ev := range a.done[:got] {
				if ev.res < 0 && first == nil {
					first = fmt.Errorf("fsync: %w", unix.Errno(-ev.res))
				}
			}
			return int(got), nil
		}
	}
	park := func() error {
		if _, err := io.ReadFull(a.events, a.count[:]); err != nil {
			return fmt.Errorf("eventfd: %w", err)
		}
		return nil
	}
	err := reap(n, poll, yield, park)
	return errors.Join(first, err)
}

// reap waits for n completions: poll takes those done without waiting,
// park blocks until the eventfd counts one. Between polls it yields the
// core (yield, which reports how long it was away) while other
// goroutines take it, at most aioSpins times, and parks once a yield
// comes straight back: nothing else was runnable, so the scheduler is
// about to go idle, and an idle scheduler waits on the poller, which
// wakes it at the completion. Yielding then only polled again, a
// system call each, on a core with nothing else to do (at the load
// script's open rate, most syncs).
func reap(n int, poll func(n int) (int, error), yield func() time.Duration, park func() error) error {
	spins := 0
	for n > 0 {
		got, err := poll(n)
		if err != nil {
			return err
		}
		if n -= got; n == 0 || got > 0 {
			continue
		}
		if spins < aioSpins {
			spins++
			if yield() >= yieldRan {
				continue
			}
			spins = aioSpins
		}
		if err := park(); err != nil {
			return err
		}
	}
	return nil
}

// yieldRan is how long a yield (runtime.Gosched) must keep the
// goroutine away for reap to take it that other goroutines ran: one
// that comes straight back takes well under a microsecond.
const yieldRan = 5 * time.Microsecond

// yield gives the core to other runnable goroutines and returns how
// long it was away.
func yield() time.Duration {
	t := time.Now()
	runtime.Gosched()
	return time.Since(t)
}

// close releases the context; no sync may be under way.
func (a *aio) close() error {
	var err error
	if _, _, e := unix.Syscall(unix.SYS_IO_DESTROY, a.ctx, 0, 0); e != 0 {
		err = fmt.Errorf("io_destroy: %w", e)
	}
	return errors.Join(err, a.events.Close())
}
