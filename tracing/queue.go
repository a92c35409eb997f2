package tracing

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// The exchanges' spans are made off the request path: End queues the
// exchange (Memory its operation), and one goroutine per Tracer writes
// the queued records' spans into a request and exports it, up to batch
// records per request. It is woken when batch records are queued, and
// takes what is queued every `every` besides. The request path pays
// for the queueing only.

// maxRequest is the size past which a request is sent before its batch
// is full: a collector's gRPC receiver refuses messages past 4 MiB by
// default, and exchanges with message content (ContentVariable) can be
// large. A buffer grown past it is let go after its request.
const maxRequest = 1 << 20

// queue is the records ended and not yet exported.
type queue struct {
	t         *Tracer
	batch     int
	maxQueued int
	every     time.Duration

	mu      sync.Mutex
	ended   []*Exchange
	mems    []Memory
	spare   []*Exchange
	wake    chan struct{}      // cap 1: the queue reached batch
	flush   chan chan struct{} // export what is queued, then close the channel
	stop    chan struct{}
	stopped chan struct{}
	once    sync.Once
	dropped atomic.Uint64

	// The goroutine's buffers, reused batch after batch.
	enc     encoder
	request []byte
	failing int // requests failed since the last that landed
}

func newQueue(t *Tracer, batch, maxQueued int, every time.Duration) *queue {
	return &queue{t: t, batch: batch, maxQueued: maxQueued, every: every,
		wake: make(chan struct{}, 1), flush: make(chan chan struct{}),
		stop: make(chan struct{}), stopped: make(chan struct{})}
}

// put queues e, or drops it when the queue is full.
func (q *queue) put(e *Exchange) {
	if q.lockRoom() {
		q.ended = append(q.ended, e)
		q.unlockQueued()
	}
}

// putMemory queues m, or drops it when the queue is full.
func (q *queue) putMemory(m Memory) {
	if q.lockRoom() {
		q.mems = append(q.mems, m)
		q.unlockQueued()
	}
}

// lockRoom locks q when it has room for one more span and reports
// whether it did; a full queue counts the span as dropped.
func (q *queue) lockRoom() bool {
	q.mu.Lock()
	if len(q.ended)+len(q.mems) >= q.maxQueued {
		q.mu.Unlock()
		q.dropped.Add(1)
		return false
	}
	return true
}

// unlockQueued unlocks q after a span was queued, and wakes the writer
// when the queue just reached a batch.
func (q *queue) unlockQueued() {
	n := len(q.ended) + len(q.mems)
	q.mu.Unlock()
	if n == q.batch {
		q.poke()
	}
}

func (q *queue) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// run exports the queued records until stop closes, then the rest.
func (q *queue) run() {
	defer close(q.stopped)
	tick := time.NewTicker(q.every)
	defer tick.Stop()
	for {
		select {
		case <-q.wake:
		case <-tick.C:
		case done := <-q.flush:
			q.drain()
			close(done)
			continue
		case <-q.stop:
			q.drain()
			return
		}
		q.drain()
	}
}

// drain exports every record queued, batch records per request.
func (q *queue) drain() {
	q.mu.Lock()
	batch, mems := q.ended, q.mems
	q.ended, q.spare, q.mems = q.spare[:0], nil, nil
	q.mu.Unlock()
	records := 0
	for i, e := range batch {
		e.finish(&q.enc)
		batch[i] = nil
		if records++; records == q.batch || len(q.enc.spans) >= maxRequest {
			q.send(records)
			records = 0
		}
	}
	for i := range mems {
		q.t.memorySpan(&q.enc, &mems[i])
		if records++; records == q.batch || len(q.enc.spans) >= maxRequest {
			q.send(records)
			records = 0
		}
	}
	q.send(records)
	q.mu.Lock()
	q.spare = batch[:0]
	q.mu.Unlock()
}

// send exports the spans written (records' worth) as one request.
func (q *queue) send(records int) {
	if q.enc.n == 0 {
		q.enc.reset()
		return
	}
	q.request = q.enc.request(q.request[:0], q.t.resource)
	q.enc.reset()
	err := exportRetrying(q.t.export, q.request, q.stop)
	if err == nil {
		q.failing = 0
	} else {
		q.t.failed.Add(uint64(records))
		// A collector down fails every batch: the 1st, 2nd, 4th, 8th…
		// failure in a row is told, not each.
		if q.failing++; q.t.onError != nil && q.failing&(q.failing-1) == 0 {
			q.t.onError(fmt.Errorf("%w (%d requests failed in a row)", err, q.failing))
		}
	}
	if cap(q.request) > 2*maxRequest {
		q.request, q.enc.spans, q.enc.span = nil, nil, nil
	}
}

// Flush exports the spans of every exchange and memory operation ended
// so far, bounded by ctx. It does nothing for a nil Tracer.
func (t *Tracer) Flush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	done := make(chan struct{})
	select {
	case t.q.flush <- done:
	case <-t.q.stopped:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Dropped is how many exchanges' and memory operations' spans were
// dropped because the queue was full.
func (t *Tracer) Dropped() uint64 {
	if t == nil {
		return 0
	}
	return t.q.dropped.Load()
}

// close exports what is queued and stops the goroutine, bounded by ctx.
func (q *queue) close(ctx context.Context) error {
	q.once.Do(func() { close(q.stop) })
	select {
	case <-q.stopped:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
