package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// driver sends requests in its protocol and records their latencies.
type driver struct {
	o      options
	proto  protocol
	client *http.Client
	next   atomic.Uint64 // request counter: picks the conversation and varies the text
	lastH  atomic.Value  // string: the last X-Recall-History header seen
	prefix []byte        // earlier turns resent in every body (-context-turns), each followed by a comma
	urls   []string      // -url's comma list: replicas, see url
}

func newDriver(o options) *driver {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        o.concurrency + 64,
		MaxIdleConnsPerHost: o.concurrency + 64,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	d := &driver{o: o, proto: protocols[o.protocol], client: &http.Client{Transport: tr, Timeout: 60 * time.Second},
		urls: strings.Split(o.url, ",")}
	if d.proto.name == "" {
		d.proto = protocols["chat"]
	}
	for i, u := range d.urls {
		d.urls[i] = u + d.proto.pathFor(o.model, o.stream)
	}
	if o.contextTurns > 0 {
		pool := newMessagePool(d.proto.wire, o.model, o.words)
		for t := range o.contextTurns {
			u, a := pool.turn(t)
			d.prefix = append(append(d.prefix, u.Raw...), ',')
			d.prefix = append(append(d.prefix, a.Raw...), ',')
		}
	}
	return d
}

// sample is one request's outcome.
type sample struct {
	total time.Duration // from when it was due (open loop) or sent (closed loop) to the last byte
	ttfb  time.Duration // to the first body byte (streams only)
	err   error
	due   time.Time // when it was due (open loop) or sent (closed loop)
	sent  time.Time // when a worker sent it
}

// readBufs recycles the buffers answers are read into: one of 32 KiB a
// request, on the heap (Read takes it through an interface), was garbage
// the collector swept on the core the load generator shares with the
// upstream and, in the recall-pg rows, PostgreSQL.
var readBufs = sync.Pool{New: func() any { return new([32 << 10]byte) }}

// request sends request number n and reads the whole answer. due is when
// the request was due: latencies count from it.
func (d *driver) request(ctx context.Context, n uint64, due time.Time, conv string) sample {
	body := d.body(n)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url(n), bytes.NewReader(body))
	if err != nil {
		return sample{err: err}
	}
	d.proto.setHeaders(req.Header, d.o.key)
	if conv != "" {
		req.Header.Set("X-Conversation-ID", conv)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return sample{err: err}
	}
	defer resp.Body.Close()
	var s sample
	bp := readBufs.Get().(*[32 << 10]byte)
	defer readBufs.Put(bp)
	buf := bp[:]
	done := newDoneScanner(d.proto.done)
	first := true
	for {
		k, rerr := resp.Body.Read(buf)
		if k > 0 {
			if first {
				s.ttfb = time.Since(due)
				first = false
			}
			if d.o.stream {
				done.write(buf[:k])
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return sample{err: rerr}
		}
	}
	s.total = time.Since(due)
	if resp.StatusCode != http.StatusOK {
		return sample{err: fmt.Errorf("status %d", resp.StatusCode)}
	}
	if d.o.stream && !done.found {
		return sample{err: fmt.Errorf("stream ended without %s", d.proto.done)}
	}
	if h := resp.Header.Get("X-Recall-History"); h != "" {
		d.lastH.Store(h)
	}
	return s
}

// body returns request n's JSON in the driver's protocol: one new user
// message, unique to n, after the resent turns of -context-turns.
func (d *driver) body(n uint64) []byte {
	text := make([]byte, 0, 16+8*d.o.words)
	text = append(text, "Request "...)
	text = strconv.AppendUint(text, n, 10)
	text = append(text, ": "...)
	text = appendWords(text, n, d.o.words)
	return d.proto.appendBody(make([]byte, 0, 512+len(d.prefix)), d.o.model, d.prefix, text, d.o.stream)
}

// url returns the URL request n goes to: with several (replicas behind
// no balancer), the next one each time the requests have gone once round
// the conversations, so that each conversation's requests alternate
// between the replicas (the worst case for their window caches: every
// request finds the conversation changed by another replica). With
// -affinity, each conversation's requests all go to one, as behind a
// balancer that keeps a conversation on one replica.
func (d *driver) url(n uint64) string {
	k := uint64(max(d.o.conversations, 1))
	if d.o.affinity {
		return d.urls[(n%k)%uint64(len(d.urls))]
	}
	return d.urls[(n%k+n/k)%uint64(len(d.urls))]
}

// conv returns the conversation of request n, "" without -conversations.
func (d *driver) conv(n uint64) string {
	if d.o.conversations <= 0 {
		return ""
	}
	return d.o.convPrefix + strconv.FormatUint(n%uint64(d.o.conversations), 10)
}

// prefill grows every conversation to o.prefill turns through the proxy,
// each worker owning a slice of the conversations so that none waits on
// another's lock.
func (d *driver) prefill() error {
	start := time.Now()
	k := d.o.conversations
	workers := min(d.o.concurrency, k)
	var wg sync.WaitGroup
	var failed atomic.Int64
	var firstErr atomic.Value
	for w := range workers {
		wg.Go(func() {
			for c := w; c < k; c += workers {
				conv := d.conv(uint64(c))
				for t := range d.o.prefill {
					s := d.request(context.Background(), uint64(t*k+c), time.Now(), conv)
					if s.err != nil {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, s.err)
					}
				}
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("prefill: %d requests failed, first: %v", n, firstErr.Load())
	}
	fmt.Fprintf(os.Stderr, "load: prefilled %d conversations to %d turns in %s\n", k, d.o.prefill, time.Since(start).Round(time.Millisecond))
	return nil
}

// run drives the load for warmup + duration and summarises the measured
// part.
func (d *driver) run() result {
	var before chan scrapes
	if d.o.metrics != "" {
		before = make(chan scrapes, 1)
		time.AfterFunc(d.o.warmup, func() { before <- d.scrape() })
	}
	var cpuBefore chan time.Duration
	if d.o.cpu > 0 {
		cpuBefore = make(chan time.Duration, 1)
		time.AfterFunc(d.o.warmup, func() {
			c, ok := treeCPU(d.o.cpu)
			if !ok {
				c = -1
			}
			cpuBefore <- c
		})
	}
	var proxyBefore chan time.Duration
	var switchesBefore chan switchCount
	pids := pidList(d.o.proxyCPU)
	if len(pids) > 0 {
		proxyBefore = make(chan time.Duration, 1)
		switchesBefore = make(chan switchCount, 1)
		time.AfterFunc(d.o.warmup, func() {
			c, ok := sumCPU(pids)
			if !ok {
				c = -1
			}
			proxyBefore <- c
			s, ok := sumSwitches(pids)
			if !ok {
				s.voluntary = -1
			}
			switchesBefore <- s
		})
	}
	var busyBefore chan []cpuTimes
	if d.o.cpuBusy {
		busyBefore = make(chan []cpuTimes, 1)
		time.AfterFunc(d.o.warmup, func() { busyBefore <- readCPUTimes() })
	}
	var probe *diskProbe
	if d.o.diskProbe != "" {
		var err error
		if probe, err = startDiskProbe(d.o.diskProbe, d.o.diskEvery, time.Now().Add(d.o.warmup)); err != nil {
			fmt.Fprintf(os.Stderr, "load: -disk-probe: %v\n", err)
		}
	}
	var samples []sample
	var elapsed time.Duration
	if d.o.rate > 0 {
		samples, elapsed = d.openLoop()
	} else {
		samples, elapsed = d.closedLoop()
	}
	res := summarise(d.o, samples, elapsed)
	if probe != nil {
		syncs, err := probe.finish()
		if err != nil {
			fmt.Fprintf(os.Stderr, "load: -disk-probe: %v\n", err)
		}
		res.setDisk(syncs)
	}
	if d.o.samples != "" {
		if err := writeSamples(d.o.samples, samples); err != nil {
			fmt.Fprintf(os.Stderr, "load: -samples: %v\n", err)
		}
	}
	if before != nil {
		if b0, b1 := <-before, d.scrape(); b0.overhead != nil && b1.overhead != nil {
			q := quantiles(b0.overhead, b1.overhead, 0.5, 0.99)
			res.RecallP50, res.RecallP99 = q[0], q[1]
			if b0.total != nil && b1.total != nil {
				res.InRecallP99 = quantiles(b0.total, b1.total, 0.99)[0]
			}
			if b0.upstream != nil && b1.upstream != nil {
				res.UpstreamP99 = quantiles(b0.upstream, b1.upstream, 0.99)[0]
			}
			if b1.syncs != nil {
				res.SyncP99 = quantiles(b0.syncs, b1.syncs, 0.99)[0]
				res.SyncMax, res.SyncOver = largest(b0.syncs, b1.syncs)
				res.Syncs = count(b0.syncs, b1.syncs)
			}
			if b0.scavAssist >= 0 && b1.scavAssist >= 0 {
				res.ScavengeAssistMs = (b1.scavAssist - b0.scavAssist) * 1000
				res.MarkAssistMs = (b1.markAssist - b0.markAssist) * 1000
				res.Assists = true
			}
		}
	}
	if cpuBefore != nil {
		c1, ok := treeCPU(d.o.cpu)
		if c0 := <-cpuBefore; ok && c0 >= 0 && res.Requests > 0 {
			res.CPUMsPerRequest = float64(c1-c0) / float64(time.Millisecond) / float64(res.Requests)
		}
	}
	if proxyBefore != nil {
		c1, ok := sumCPU(pids)
		if c0 := <-proxyBefore; ok && c0 >= 0 && res.Requests > 0 {
			res.ProxyCPUMsPerRequest = float64(c1-c0) / float64(time.Millisecond) / float64(res.Requests)
		}
		s1, ok := sumSwitches(pids)
		if s0 := <-switchesBefore; ok && s0.voluntary >= 0 && res.Requests > 0 {
			n := float64(res.Requests)
			res.ProxySwitchesPerRequest = float64(s1.voluntary-s0.voluntary+s1.involuntary-s0.involuntary) / n
			res.ProxyPreemptedPerRequest = float64(s1.involuntary-s0.involuntary) / n
		}
	}
	if busyBefore != nil {
		res.CPUBusy = busyPercent(<-busyBefore, readCPUTimes())
	}
	if h, ok := d.lastH.Load().(string); ok {
		res.History = h
	}
	return res
}

// closedLoop keeps o.concurrency requests in flight.
func (d *driver) closedLoop() ([]sample, time.Duration) {
	start := time.Now()
	measureFrom := start.Add(d.o.warmup)
	end := measureFrom.Add(d.o.duration)
	per := make([][]sample, d.o.concurrency)
	var wg sync.WaitGroup
	for w := range d.o.concurrency {
		wg.Go(func() {
			out := make([]sample, 0, 4096)
			for {
				now := time.Now()
				if !now.Before(end) {
					break
				}
				n := d.next.Add(1)
				s := d.request(context.Background(), n, now, d.conv(n))
				s.due, s.sent = now, now
				if !now.Before(measureFrom) {
					out = append(out, s)
				}
			}
			per[w] = out
		})
	}
	wg.Wait()
	return flatten(per), d.o.duration
}

// openLoop sends requests at o.rate per second, each due at a fixed point
// of the schedule, with up to o.concurrency in flight; a request that finds
// every worker busy waits in the queue, and that wait counts in its latency.
func (d *driver) openLoop() ([]sample, time.Duration) {
	total := int((d.o.warmup + d.o.duration).Seconds() * d.o.rate)
	warm := int(d.o.warmup.Seconds() * d.o.rate)
	interval := time.Duration(float64(time.Second) / d.o.rate)
	type job struct {
		i   int
		due time.Time
	}
	jobs := make(chan job, total+1)
	per := make([][]sample, d.o.concurrency)
	var wg sync.WaitGroup
	for w := range d.o.concurrency {
		wg.Go(func() {
			out := make([]sample, 0, 4096)
			for j := range jobs {
				n := d.next.Add(1)
				sent := time.Now()
				s := d.request(context.Background(), n, j.due, d.conv(n))
				s.due, s.sent = j.due, sent
				if j.i >= warm {
					out = append(out, s)
				}
			}
			per[w] = out
		})
	}
	start := time.Now()
	var measureStart time.Time
	for i := range total {
		due := start.Add(time.Duration(i) * interval)
		if wait := time.Until(due); wait > 0 {
			time.Sleep(wait)
		}
		if i == warm {
			measureStart = due
		}
		jobs <- job{i: i, due: due}
	}
	close(jobs)
	wg.Wait()
	if measureStart.IsZero() {
		measureStart = start
	}
	return flatten(per), time.Since(measureStart)
}

func flatten(per [][]sample) []sample {
	var out []sample
	for _, p := range per {
		out = append(out, p...)
	}
	return out
}

// scrape reads Recall's histograms (each summed over -metrics' comma
// list, one URL a replica), or says on stderr why not (nil overhead).
func (d *driver) scrape() scrapes {
	sum := scrapes{overhead: buckets{}}
	for _, url := range strings.Split(d.o.metrics, ",") {
		s, err := scrape(url)
		if err != nil {
			fmt.Fprintf(os.Stderr, "load: -metrics: %v\n", err)
			return scrapes{}
		}
		for le, n := range s.overhead {
			sum.overhead[le] += n
		}
		sum.total = addBuckets(sum.total, s.total)
		sum.upstream = addBuckets(sum.upstream, s.upstream)
		sum.syncs = addBuckets(sum.syncs, s.syncs)
		if s.scavAssist < 0 || sum.scavAssist < 0 {
			sum.scavAssist, sum.markAssist = -1, -1
		} else {
			sum.scavAssist += s.scavAssist
			sum.markAssist += s.markAssist
		}
	}
	return sum
}

// writeSamples writes samples to path as CSV, in the order they were due:
// due and sent in milliseconds from the first one's due time, the latency
// in milliseconds, the error if any, and the due time in Unix
// milliseconds (to set a stall beside what else the machine logged).
func writeSamples(path string, samples []sample) error {
	sorted := slices.Clone(samples)
	slices.SortFunc(sorted, func(a, b sample) int { return a.due.Compare(b.due) })
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write([]string{"due_ms", "sent_ms", "total_ms", "error", "due_unix_ms"})
	var t0 time.Time
	if len(sorted) > 0 {
		t0 = sorted[0].due
	}
	ms := func(d time.Duration) string {
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64)
	}
	for _, s := range sorted {
		errText := ""
		if s.err != nil {
			errText = s.err.Error()
		}
		_ = w.Write([]string{ms(s.due.Sub(t0)), ms(s.sent.Sub(t0)), ms(s.total), errText, strconv.FormatInt(s.due.UnixMilli(), 10)})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}
