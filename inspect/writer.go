// Package inspect keeps the inspector's exchange records (DESIGN.md
// section 13): Fill works out what a record says of the plan an exchange
// sent, and a Writer stores records off the request path.
package inspect

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/recallproxy/recall/history"
)

// Options configure a Writer. The zero value is usable.
type Options struct {
	// Queue is how many records may wait to be written; a record that
	// finds the queue full is dropped and counted. Default 4096.
	Queue int
	// Batch is the most records one write takes: on the proxy's one core a
	// write holds the core about 25 us a record. Default 32.
	Batch int
	// Delay is how long the writer gathers records after the first of a
	// batch before it writes them (a Flush or a full batch writes at once):
	// at 1,000 requests a second one write of about 20 records, where a
	// write per record doubled the store's write rounds beside the
	// commits. Default 20ms; negative: no wait.
	Delay time.Duration
	// After is the clock the Delay waits on. Default time.After.
	After func(time.Duration) <-chan time.Time
	// Timeout bounds one write to the store. Default 10s.
	Timeout time.Duration
	// Logger receives failed writes. Default: discarded.
	Logger *slog.Logger
	// Registerer, if set, gets the writer's metrics:
	// recall_exchange_records_dropped_total (queue full) and
	// recall_exchange_records_failed_total (the store refused them).
	Registerer prometheus.Registerer
}

// Writer stores exchange records asynchronously: Record hands a record to
// one goroutine, which writes what has gathered in batches, one
// AppendExchanges per conversation. Record never blocks, so a slow store
// costs records, never request time.
type Writer struct {
	log             history.ExchangeLog
	o               Options
	queue           chan item
	closing         chan struct{}
	stopped         chan struct{}
	closeOnce       sync.Once
	dropped, failed prometheus.Counter
	drops           atomic.Uint64
	logger          *slog.Logger
}

// item is a record on its way, or (flush set) a marker a Flush waits on.
type item struct {
	key   history.Key
	rec   history.ExchangeRecord
	flush chan struct{}
}

// NewWriter starts a Writer over log; Close stops it.
func NewWriter(log history.ExchangeLog, o Options) (*Writer, error) {
	if o.Queue <= 0 {
		o.Queue = 4096
	}
	if o.Batch <= 0 {
		o.Batch = 32
	}
	if o.Delay == 0 {
		o.Delay = 20 * time.Millisecond
	}
	if o.After == nil {
		o.After = time.After
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	w := &Writer{log: log, o: o, queue: make(chan item, o.Queue), closing: make(chan struct{}), stopped: make(chan struct{}),
		logger: o.Logger,
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "recall_exchange_records_dropped_total",
			Help: "Exchange records dropped because the writer's queue was full."}),
		failed: prometheus.NewCounter(prometheus.CounterOpts{Name: "recall_exchange_records_failed_total",
			Help: "Exchange records the store failed to write."}),
	}
	if w.logger == nil {
		w.logger = slog.New(slog.DiscardHandler)
	}
	if o.Registerer != nil {
		for _, c := range []prometheus.Collector{w.dropped, w.failed} {
			if err := o.Registerer.Register(c); err != nil {
				return nil, errors.Join(errors.New("inspect: register metrics"), err)
			}
		}
	}
	go w.run()
	return w, nil
}

// Record queues r, a record of conversation k, without waiting: if the
// queue is full, or the writer closed, r is dropped and counted.
func (w *Writer) Record(k history.Key, r history.ExchangeRecord) {
	select {
	case <-w.closing:
		w.drop()
		return
	default:
	}
	select {
	case w.queue <- item{key: k, rec: r}:
	default:
		w.drop()
	}
}

// Flush waits until every record queued before it is written (or failed),
// or ctx ends.
func (w *Writer) Flush(ctx context.Context) error {
	done := make(chan struct{})
	select {
	case w.queue <- item{flush: done}:
	case <-w.stopped:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-w.stopped:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close writes what is queued and stops the writer, or gives up when ctx
// ends. Records handed over after Close are dropped.
func (w *Writer) Close(ctx context.Context) error {
	w.closeOnce.Do(func() { close(w.closing) })
	select {
	case <-w.stopped:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Dropped returns how many records were dropped because the queue was
// full or the writer closed.
func (w *Writer) Dropped() uint64 { return w.drops.Load() }

func (w *Writer) drop() {
	w.drops.Add(1)
	w.dropped.Inc()
}

func (w *Writer) run() {
	defer close(w.stopped)
	batch := make([]item, 0, w.o.Batch)
	for {
		select {
		case it := <-w.queue:
			w.write(w.fill(append(batch[:0], it)))
		case <-w.closing:
			// What was queued before Close is written; then stop.
			for {
				batch = w.gather(batch[:0])
				if len(batch) == 0 {
					return
				}
				w.write(batch)
			}
		}
	}
}

// fill adds to batch what comes within the Delay, up to a batch; a Flush
// marker or Close ends the wait.
func (w *Writer) fill(batch []item) []item {
	batch = w.gather(batch)
	if w.o.Delay < 0 || len(batch) >= w.o.Batch || flushes(batch) {
		return batch
	}
	timer := w.o.After(w.o.Delay)
	for len(batch) < w.o.Batch {
		select {
		case it := <-w.queue:
			if batch = append(batch, it); it.flush != nil {
				return batch
			}
		case <-timer:
			return w.gather(batch) // what was queued before the time came too
		case <-w.closing:
			return batch
		}
	}
	return batch
}

// flushes reports whether batch holds a Flush marker.
func flushes(batch []item) bool {
	for _, it := range batch {
		if it.flush != nil {
			return true
		}
	}
	return false
}

// gather adds to batch what is queued, up to a batch, without waiting.
func (w *Writer) gather(batch []item) []item {
	for len(batch) < w.o.Batch {
		select {
		case it := <-w.queue:
			batch = append(batch, it)
		default:
			return batch
		}
	}
	return batch
}

// write stores a batch, one AppendExchanges per conversation in the
// order records came, and releases the flushes it holds once the records
// before them are written.
func (w *Writer) write(batch []item) {
	var keys []history.Key
	byKey := map[history.Key][]history.ExchangeRecord{}
	var flushes []chan struct{}
	for _, it := range batch {
		if it.flush != nil {
			flushes = append(flushes, it.flush)
			continue
		}
		if _, ok := byKey[it.key]; !ok {
			keys = append(keys, it.key)
		}
		byKey[it.key] = append(byKey[it.key], it.rec)
	}
	if b, ok := w.log.(history.ExchangeBatcher); ok && len(keys) > 0 {
		// One write for the whole batch: records are written for every
		// request, beside the commits on the same core.
		batch := make([]history.KeyedExchanges, len(keys))
		n := 0
		for i, k := range keys {
			batch[i] = history.KeyedExchanges{Key: k, Records: byKey[k]}
			n += len(byKey[k])
		}
		ctx, cancel := context.WithTimeout(context.Background(), w.o.Timeout)
		err := b.AppendExchangeBatch(ctx, batch)
		cancel()
		if err != nil {
			w.failed.Add(float64(n))
			w.logger.Warn("exchange records not stored", "component", "inspect", "records", n, "error", err.Error())
		}
		keys = nil
	}
	for _, k := range keys {
		recs := byKey[k]
		ctx, cancel := context.WithTimeout(context.Background(), w.o.Timeout)
		err := w.log.AppendExchanges(ctx, k, recs)
		cancel()
		if err != nil {
			w.failed.Add(float64(len(recs)))
			w.logger.Warn("exchange records not stored", "component", "inspect", "records", len(recs), "error", err.Error())
		}
	}
	for _, f := range flushes {
		close(f)
	}
}
