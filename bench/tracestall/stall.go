package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

// A Report is what Analyze found in a trace.
type Report struct {
	// Length is the trace's; Waits how many scheduler waits it holds
	// (runnable to running), with their quantiles.
	Length                  time.Duration
	Waits                   int
	P50, P99, P999, MaxWait time.Duration
	// Threshold is the wait that counted as a stall; Stalls how many
	// waits reached it, merged into Windows (longest first), which
	// cover Stalled of the trace.
	Threshold time.Duration
	Stalls    int
	Stalled   time.Duration
	Windows   []Window
	// Ran is what ran in the windows, by goroutine, and Ranges the
	// runtime's ranges (GC, stop-the-world, assists) that overlapped
	// them, largest first; Unrun the windows' time in which no goroutine
	// of the process ran.
	Ran, Ranges []Share
	Unrun       time.Duration
	// Silent is the windows' time in silences: stretches of Silence or
	// more in which the trace holds no event of any thread. A goroutine
	// that computes that long is preempted, an event, so a silence is
	// the kernel keeping the whole process off the CPU, even where the
	// trace shows a goroutine running through it. It overlaps Ran and
	// Unrun.
	Silent time.Duration
	// Sampled is what the CPU profiler's samples in the windows caught
	// computing (a trace holds them while a CPU profile is taken: run.sh
	// takes one beside each trace), by innermost function and goroutine,
	// most first.
	Sampled []Count
}

// A Count is how many samples caught Name in the windows, and in the
// whole trace.
type Count struct {
	Name        string
	In, InTrace int
}

// A Window is a stretch of the trace in which some goroutine waited
// past the threshold: At from the trace's start, what ran in it and the
// ranges that overlapped it, largest first.
type Window struct {
	At, Length time.Duration
	By         []Share
	// Samples counts the CPU samples in the window (none without a CPU
	// profile beside the trace).
	Samples int
}

// A Share is the time a goroutine (named by the function it started
// with; the runtime's ranges in brackets) had in the windows, and, for
// Report.Ran and Ranges, in the whole trace.
type Share struct {
	Name        string
	In, InTrace time.Duration
}

// interval is [a, b) of the trace's clock, of goroutine g (ranges: of
// the range named name).
type interval struct {
	a, b trace.Time
	g    trace.GoID
	name string
}

// Silence is the shortest stretch without an event that Analyze counts
// as the process off the CPU: the scheduler preempts a goroutine that has
// run 10 ms (forcePreemptNS) when its monitor next looks, at most 10 ms
// later, and a preemption is an event. Shorter silences may be a
// goroutine computing.
const Silence = 20 * time.Millisecond

// reading is the state of one pass over a trace.
type reading struct {
	name      map[trace.GoID]string
	runnable  map[trace.GoID]trace.Time
	running   map[trace.GoID]trace.Time
	open      map[string]trace.Time
	spans     []interval // a goroutine running
	waits     []interval // a goroutine runnable, not running
	ranges    []interval
	silences  []interval // no event of any thread for Silence or more
	samples   []sample   // the CPU profiler's, in time order
	first, at trace.Time
}

// sampleEvery is the CPU time a sample stands for at the CPU profiler's
// default rate (100 Hz), which net/http/pprof's profile uses.
const sampleEvery = 10 * time.Millisecond

// sample is one of the CPU profiler's samples: when, and what it
// caught computing (innermost function, goroutine).
type sample struct {
	t    trace.Time
	what string
}

// Analyze reads a trace from r and reports the scheduler waits of threshold or
// more (0: the trace's 99.9th percentile wait) and what ran meanwhile.
func Analyze(r io.Reader, threshold time.Duration) (*Report, error) {
	tr, err := trace.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("tracestall: %w", err)
	}
	rd := &reading{
		name:     map[trace.GoID]string{},
		runnable: map[trace.GoID]trace.Time{},
		running:  map[trace.GoID]trace.Time{},
		open:     map[string]trace.Time{},
	}
	for {
		ev, err := tr.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("tracestall: %w", err)
		}
		rd.event(ev)
	}
	if len(rd.waits) == 0 {
		return nil, fmt.Errorf("tracestall: the trace holds no scheduler waits")
	}
	return rd.report(threshold), nil
}

func (rd *reading) event(ev trace.Event) {
	t := ev.Time()
	if rd.first == 0 {
		rd.first = t
	} else if time.Duration(t-rd.at) >= Silence {
		rd.silences = append(rd.silences, interval{a: rd.at, b: t})
	}
	rd.at = t
	switch ev.Kind() {
	case trace.EventStateTransition:
		if st := ev.StateTransition(); st.Resource.Kind == trace.ResourceGoroutine {
			rd.transition(t, st)
		}
	case trace.EventStackSample:
		rd.samples = append(rd.samples, sample{t: t, what: rd.sampled(ev)})
	case trace.EventRangeBegin, trace.EventRangeActive:
		rd.open[rangeKey(ev)] = t
	case trace.EventRangeEnd:
		k := rangeKey(ev)
		if a, ok := rd.open[k]; ok {
			rd.ranges = append(rd.ranges, interval{a: a, b: t, name: "[" + ev.Range().Name + "]"})
			delete(rd.open, k)
		}
	}
}

// rangeKey tells apart the ranges open at once: one of a name per
// goroutine (or globally).
func rangeKey(ev trace.Event) string {
	rg := ev.Range()
	if rg.Scope.Kind == trace.ResourceGoroutine {
		return fmt.Sprint(rg.Name, " ", rg.Scope.Goroutine())
	}
	return rg.Name
}

func (rd *reading) transition(t trace.Time, st trace.StateTransition) {
	g := st.Resource.Goroutine()
	from, to := st.Goroutine()
	switch {
	case from == trace.GoNotExist && to == trace.GoRunnable:
		// A new goroutine: its stack is the function it starts with.
		for f := range st.Stack.Frames() {
			rd.name[g] = f.Func
			break
		}
	case rd.name[g] == "":
		// One that predates the trace: the outermost frame of its own
		// stack.
		for f := range st.Stack.Frames() {
			if f.Func != "runtime.goexit" {
				rd.name[g] = f.Func
			}
		}
	}
	if from == trace.GoRunning {
		if a, ok := rd.running[g]; ok {
			rd.spans = append(rd.spans, interval{a: a, b: t, g: g})
			delete(rd.running, g)
		}
	}
	switch to {
	case trace.GoRunnable:
		rd.runnable[g] = t
	case trace.GoRunning:
		rd.running[g] = t
		if a, ok := rd.runnable[g]; ok {
			rd.waits = append(rd.waits, interval{a: a, b: t, g: g})
			delete(rd.runnable, g)
		}
	}
}

func (rd *reading) report(threshold time.Duration) *Report {
	ds := make([]time.Duration, len(rd.waits))
	for i, w := range rd.waits {
		ds[i] = time.Duration(w.b - w.a)
	}
	slices.Sort(ds)
	q := func(p float64) time.Duration { return ds[int(p*float64(len(ds)-1))] }
	r := &Report{Length: time.Duration(rd.at - rd.first), Waits: len(ds),
		P50: q(.5), P99: q(.99), P999: q(.999), MaxWait: ds[len(ds)-1], Threshold: threshold}
	if r.Threshold <= 0 {
		r.Threshold = r.P999
	}
	wins := rd.windows(r)
	byWin := make([]map[string]time.Duration, len(wins))
	for i := range byWin {
		byWin[i] = map[string]time.Duration{}
	}
	ran, ranTrace := map[string]time.Duration{}, map[string]time.Duration{}
	cover := make([][]interval, len(wins)) // what ran, per window
	add := func(iv interval, name string, in, inTrace map[string]time.Duration, running bool) {
		inTrace[name] += time.Duration(iv.b - iv.a)
		for i := windowAfter(wins, iv.a); i < len(wins) && wins[i].a < iv.b; i++ {
			lo, hi := max(iv.a, wins[i].a), min(iv.b, wins[i].b)
			if hi <= lo {
				continue
			}
			in[name] += time.Duration(hi - lo)
			byWin[i][name] += time.Duration(hi - lo)
			if running {
				cover[i] = append(cover[i], interval{a: lo, b: hi})
			}
		}
	}
	for _, s := range rd.spans {
		add(s, rd.goName(s.g), ran, ranTrace, true)
	}
	rin, rTrace := map[string]time.Duration{}, map[string]time.Duration{}
	for _, x := range rd.ranges {
		add(x, x.name, rin, rTrace, false)
	}
	r.Ran, r.Ranges = shares(ran, ranTrace), shares(rin, rTrace)
	r.Sampled = rd.sampledIn(wins)
	perWin := rd.samplesPer(wins)
	for i, w := range wins {
		length := time.Duration(w.b - w.a)
		unrun := length - union(cover[i])
		r.Unrun += unrun
		if unrun > 0 {
			byWin[i]["(nothing of the process ran)"] = unrun
		}
		if silent := overlap(rd.silences, w); silent > 0 {
			r.Silent += silent
			byWin[i]["(the process silent: off the CPU)"] = silent
		}
		r.Windows = append(r.Windows, Window{At: time.Duration(w.a - rd.first), Length: length, By: shares(byWin[i], nil), Samples: perWin[i]})
	}
	slices.SortStableFunc(r.Windows, func(a, b Window) int { return cmp.Compare(b.Length, a.Length) })
	return r
}

// goName is the name of g's goroutine.
func (rd *reading) goName(g trace.GoID) string {
	if n := rd.name[g]; n != "" {
		return n
	}
	return "(unknown)"
}

// windows merges the waits of r.Threshold or more into the stretches
// they cover, in time order, and sets r's Stalls and Stalled.
func (rd *reading) windows(r *Report) []interval {
	var long []interval
	for _, w := range rd.waits {
		if time.Duration(w.b-w.a) >= r.Threshold {
			long = append(long, w)
		}
	}
	r.Stalls = len(long)
	slices.SortFunc(long, func(a, b interval) int { return cmp.Compare(a.a, b.a) })
	var merged []interval
	for _, w := range long {
		if n := len(merged); n > 0 && w.a <= merged[n-1].b {
			merged[n-1].b = max(merged[n-1].b, w.b)
			continue
		}
		merged = append(merged, interval{a: w.a, b: w.b})
	}
	for _, m := range merged {
		r.Stalled += time.Duration(m.b - m.a)
	}
	return merged
}

// windowAfter is the first of wins (in time order, disjoint) that ends
// after t.
func windowAfter(wins []interval, t trace.Time) int {
	i, _ := slices.BinarySearchFunc(wins, t, func(w interval, t trace.Time) int {
		if w.b <= t {
			return -1
		}
		return 1
	})
	return i
}

// overlap is how much of w ivs (in time order, disjoint) cover.
func overlap(ivs []interval, w interval) time.Duration {
	var d time.Duration
	for i := windowAfter(ivs, w.a); i < len(ivs) && ivs[i].a < w.b; i++ {
		d += time.Duration(min(ivs[i].b, w.b) - max(ivs[i].a, w.a))
	}
	return d
}

// union is how much of the clock ivs cover together.
func union(ivs []interval) time.Duration {
	slices.SortFunc(ivs, func(a, b interval) int { return cmp.Compare(a.a, b.a) })
	var d time.Duration
	var end trace.Time
	for _, iv := range ivs {
		if iv.b <= end {
			continue
		}
		d += time.Duration(iv.b - max(iv.a, end))
		end = iv.b
	}
	return d
}

// shares lists in by name, largest first, with inTrace's figure for the
// same name (nil: none).
func shares(in, inTrace map[string]time.Duration) []Share {
	out := make([]Share, 0, len(in))
	for n, d := range in {
		out = append(out, Share{Name: n, In: d, InTrace: inTrace[n]})
	}
	slices.SortFunc(out, func(a, b Share) int { return cmp.Or(cmp.Compare(b.In, a.In), strings.Compare(a.Name, b.Name)) })
	return out
}

// Write prints r, with the first n of its windows.
func (r *Report) Write(w io.Writer, n int) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }
	fmt.Fprintf(w, "trace %.2f s, %d scheduler waits: p50 %s, p99 %s, p99.9 %s, max %s\n",
		r.Length.Seconds(), r.Waits, ms(r.P50), ms(r.P99), ms(r.P999), ms(r.MaxWait))
	fmt.Fprintf(w, "%d waits of %s or more, in %d windows covering %s (%.2f%% of the trace); nothing of the process ran for %s of them\n",
		r.Stalls, ms(r.Threshold), len(r.Windows), ms(r.Stalled), 100*float64(r.Stalled)/float64(r.Length), ms(r.Unrun))
	fmt.Fprintf(w, "the process was silent (no event of any thread for %s or more: the kernel kept it off the CPU) for %s of them\n",
		ms(Silence), ms(r.Silent))
	list := func(title string, ss []Share) {
		fmt.Fprintf(w, "\n%s (in the windows, share of the windows | of the whole trace):\n", title)
		for i, s := range ss {
			if i == 10 {
				break
			}
			fmt.Fprintf(w, "  %9s %5.1f%% | %5.1f%%  %s\n", ms(s.In), pct(s.In, r.Stalled), pct(s.InTrace, r.Length), short(s.Name))
		}
	}
	list("what ran", r.Ran)
	list("runtime ranges", r.Ranges)
	if len(r.Sampled) > 0 {
		n := 0
		for _, c := range r.Sampled {
			n += c.In
		}
		// A sample is 10 ms of a thread's CPU time at the profiler's
		// default rate: what the process computed in the windows, against
		// their length, says how much of them the kernel gave to others.
		fmt.Fprintf(w, "\nCPU samples in the windows: %d, about %s of CPU in the windows' %s (innermost function (goroutine): in the windows | in the whole trace):\n",
			n, ms(time.Duration(n)*sampleEvery), ms(r.Stalled))
		for i, c := range r.Sampled {
			if i == 15 {
				break
			}
			fmt.Fprintf(w, "  %4d | %5d  %s\n", c.In, c.InTrace, short(c.Name))
		}
	}
	fmt.Fprintln(w, "\nlongest windows:")
	for i, win := range r.Windows {
		if i == n {
			break
		}
		fmt.Fprintf(w, "  at %.3f s, %s", win.At.Seconds(), ms(win.Length))
		if len(r.Sampled) > 0 {
			fmt.Fprintf(w, " (CPU sampled: about %s)", ms(time.Duration(win.Samples)*sampleEvery))
		}
		fmt.Fprint(w, ":")
		for j, s := range win.By {
			if j == 5 {
				break
			}
			fmt.Fprintf(w, " %s %s;", short(s.Name), ms(s.In))
		}
		fmt.Fprintln(w)
	}
}

func pct(d, of time.Duration) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(d) / float64(of)
}

// short drops the module paths from a function's name.
func short(name string) string {
	name = strings.ReplaceAll(name, "github.com/recallproxy/recall/", "")
	return strings.ReplaceAll(name, "github.com/", "")
}

// sampled names what a CPU sample caught: its innermost function, and
// the goroutine's name in parentheses.
func (rd *reading) sampled(ev trace.Event) string {
	leaf := "(no stack)"
	for f := range ev.Stack().Frames() {
		leaf = f.Func
		break
	}
	if g := ev.Goroutine(); g != trace.NoGoroutine {
		return leaf + " (" + rd.goName(g) + ")"
	}
	return leaf + " (no goroutine)"
}

// samplesPer counts the samples in each of wins.
func (rd *reading) samplesPer(wins []interval) []int {
	n := make([]int, len(wins))
	for _, s := range rd.samples {
		if i := windowAfter(wins, s.t); i < len(wins) && wins[i].a <= s.t {
			n[i]++
		}
	}
	return n
}

// sampledIn counts the samples in wins by what they caught, and in the
// whole trace, most in wins first.
func (rd *reading) sampledIn(wins []interval) []Count {
	in, inTrace := map[string]int{}, map[string]int{}
	for _, s := range rd.samples {
		inTrace[s.what]++
		if i := windowAfter(wins, s.t); i < len(wins) && wins[i].a <= s.t {
			in[s.what]++
		}
	}
	out := make([]Count, 0, len(in))
	for n, c := range in {
		out = append(out, Count{Name: n, In: c, InTrace: inTrace[n]})
	}
	slices.SortFunc(out, func(a, b Count) int { return cmp.Or(cmp.Compare(b.In, a.In), strings.Compare(a.Name, b.Name)) })
	return out
}
