package tracing

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// The exchanges' spans are made off the request path: End queues the
// exchange, and one goroutine per Tracer makes its spans (attributes,
// children, the SDK's span processing), in batches. The request path
// pays for the queueing only; a batch wakes the goroutine once where the
// spans of every exchange would each wake the SDK's batcher.
const (
	// wakeAt is the queue's length that wakes the goroutine at once;
	// below it, the goroutine takes the queue every flushEvery.
	wakeAt     = 64
	flushEvery = 100 * time.Millisecond
	// maxQueued bounds the exchanges waiting: past it End drops the
	// exchange's spans (Dropped counts them) rather than hold memory
	// without bound while the goroutine is behind.
	maxQueued = 8192
)

// queue is the exchanges ended and not yet made into spans.
type queue struct {
	mu      sync.Mutex
	ended   []*Exchange
	spare   []*Exchange
	wake    chan struct{}      // cap 1: the queue reached wakeAt
	flush   chan chan struct{} // make what is queued, then close the channel
	stop    chan struct{}
	stopped chan struct{}
	once    sync.Once
	dropped atomic.Uint64
	// attrs is the goroutine's attribute buffer, reused span after span
	// (the SDK copies what a span is given).
	attrs []attribute.KeyValue
}

func newQueue() *queue {
	return &queue{wake: make(chan struct{}, 1), flush: make(chan chan struct{}),
		stop: make(chan struct{}), stopped: make(chan struct{})}
}

// put queues e, or drops it when the queue is full.
func (q *queue) put(e *Exchange) {
	q.mu.Lock()
	if len(q.ended) >= maxQueued {
		q.mu.Unlock()
		q.dropped.Add(1)
		return
	}
	q.ended = append(q.ended, e)
	n := len(q.ended)
	q.mu.Unlock()
	if n == wakeAt {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
}

// run makes the queued exchanges' spans until stop closes, then the rest.
func (q *queue) run() {
	defer close(q.stopped)
	tick := time.NewTicker(flushEvery)
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

// drain makes the spans of every exchange queued.
func (q *queue) drain() {
	q.mu.Lock()
	batch := q.ended
	q.ended, q.spare = q.spare[:0], nil
	q.mu.Unlock()
	for i, e := range batch {
		q.attrs = e.finish(q.attrs[:0])
		batch[i] = nil
	}
	clear(q.attrs) // let the values go
	q.mu.Lock()
	q.spare = batch[:0]
	q.mu.Unlock()
}

// Flush makes the spans of every exchange ended so far and hands them to
// the span processors (an exporting Tracer's batcher then sends them on
// its own schedule: Shutdown sends what is left), bounded by ctx. It does
// nothing for a nil Tracer.
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

// Dropped is how many exchanges' spans were dropped because the queue
// was full.
func (t *Tracer) Dropped() uint64 {
	if t == nil {
		return 0
	}
	return t.q.dropped.Load()
}

// close makes what is queued and stops the goroutine, bounded by ctx.
func (q *queue) close(ctx context.Context) error {
	q.once.Do(func() { close(q.stop) })
	select {
	case <-q.stopped:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
