// Command perfbudget reads `perf script -F cpu,comm,time,ip,sym` of a
// `perf record -a -g` taken over one load-script row and writes each CPU's
// time by what ran on it, in microseconds a request: Recall's goroutines
// by a frame that names their work (the request handler, Badger's
// writer, the committer, the search folder...), the kernel's AIO fsync
// workers, and every other process by its name (nginx, postgres, the
// load generator, the fake upstream). It shows where a saturated core's
// time goes, kernel included, which a Go CPU profile does not
// (docs/performance.md, "Each core's time by what ran on it"):
//
//	perf record -a -g -o perf.data -- sleep 6   # inside a row's measured part
//	perf script -i perf.data -F cpu,comm,time,ip,sym | go run ./bench/perfbudget -rate 3532 [-end load] [-flat postgres] [-within "stream relay"]
//
// -rate is the row's requests a second; -end drops the samples taken
// after that process began to exit (the load generator: the recording,
// started a little after the row's warm-up, outlasts its measured part,
// and the cores idle in that tail); -flat also lists the functions one
// process's samples ended in; -within lists the functions one category's
// samples passed through, by their time inclusive.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// roots names a Recall goroutine's work by a frame of its stack (see
// category).
var roots = []struct{ frame, name string }{
	{"(*DB).doWrites", "Badger's writer (memtable, WAL, value log)"},
	{"(*DB).flushMemtable", "Badger's memtable flush"},
	{"(*levelsController).runCompactor", "Badger's compactions"},
	{"(*Store).folder", "search folder"},
	{"summary.(*Manager).worker", "summary worker"},
	{"net/http.(*persistConn)", "summary worker's HTTP connections"},
	{"(*Deps).Commit.func1", "commit step (after the answer)"},
	{"pipeline.Relay", "stream relay"},
	{"(*Store).logSyncer", "log syncer"},
	{"(*Store).committer", "committer"},
	{"inspect.(*Writer).run", "inspector's records"},
	{"fasthttp.(*Server).serveConn", "request handler"},
	{"gcBgMarkWorker", "GC mark"},
	{"runtime.bgsweep", "GC sweep"},
	{"runtime.mcall", "Go scheduler"},
	{"runtime.mstart", "Go scheduler"},
	{"do_idle", "idle"},
	{"handle_softirqs", "softirq (network)"},
}

type sample struct {
	cpu   int
	comm  string
	at    float64  // seconds, perf's clock (0: no time field)
	stack []string // leaf first
}

func main() {
	rate := flag.Float64("rate", 0, "the row's requests a second over the recording (0: shares only)")
	end := flag.String("end", "", "drop the samples from when this process began to exit (its first sample in do_exit)")
	flat := flag.String("flat", "", "also list the leaf functions of this process name")
	within := flag.String("within", "", "also list the functions this category's samples passed through")
	flag.Parse()
	samples, err := read(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "perfbudget:", err)
		os.Exit(1)
	}
	if *end != "" {
		samples = until(samples, *end)
	}
	write(os.Stdout, samples, *rate, *flat)
	if *within != "" {
		writeWithin(os.Stdout, samples, *rate, *within)
	}
}

// writeWithin lists the functions the samples of category cat passed
// through (each counted once a sample, however deep it recursed), the
// most first: where a category's time goes, inclusive.
func writeWithin(w io.Writer, samples []sample, rate float64, cat string) {
	funcs := map[string]int{}
	total := map[int]int{}
	for _, s := range samples {
		total[s.cpu]++
	}
	var cpu, n int
	for _, s := range samples {
		if category(s) != cat {
			continue
		}
		cpu = s.cpu
		n++
		seen := map[string]bool{}
		for _, f := range s.stack {
			if !seen[f] {
				seen[f] = true
				funcs[f]++
			}
		}
	}
	fmt.Fprintf(w, "%s: functions, inclusive (%d samples)\n", cat, n)
	for i, kv := range sorted(funcs) {
		if i == 60 {
			break
		}
		if rate > 0 && total[cpu] > 0 {
			fmt.Fprintf(w, "  %7.1f µs a request  %s\n", float64(kv.n)/float64(total[cpu])/rate*1e6, kv.k)
		} else {
			fmt.Fprintf(w, "  %5.1f%%  %s\n", 100*float64(kv.n)/float64(n), kv.k)
		}
	}
}

// read parses perf script's output: a header line (comm [cpu]) and the
// call chain, one frame a line (address and symbol), per sample.
func read(r io.Reader) ([]sample, error) {
	var out []sample
	var cur *sample
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		t := strings.TrimSpace(line)
		switch {
		case t == "":
			cur = nil
		case cur == nil:
			open := strings.LastIndex(t, "[")
			end := strings.LastIndex(t, "]")
			if open < 0 || end < open {
				return nil, fmt.Errorf("no [cpu] in %q", t)
			}
			cpu, err := strconv.Atoi(t[open+1 : end])
			if err != nil {
				return nil, fmt.Errorf("cpu in %q: %w", t, err)
			}
			at, err := stamp(t[end+1:])
			if err != nil {
				return nil, fmt.Errorf("time in %q: %w", t, err)
			}
			out = append(out, sample{cpu: cpu, comm: strings.TrimSpace(t[:open]), at: at})
			cur = &out[len(out)-1]
		default:
			_, sym, _ := strings.Cut(t, " ")
			cur.stack = append(cur.stack, sym)
		}
	}
	return out, sc.Err()
}

// category names what a sample's CPU was doing: the first of roots that
// a frame of its stack holds (roots is in order of precedence: the log
// syncer's goroutine is started by the committer's, whose name its
// outermost frame keeps).
func category(s sample) string {
	for _, r := range roots {
		if r.name != "idle" && r.name != "softirq (network)" && s.comm != "recall" {
			continue
		}
		for _, f := range s.stack {
			if strings.Contains(f, r.frame) {
				return r.name
			}
		}
	}
	for _, f := range s.stack {
		if strings.Contains(f, "aio_fsync_work") {
			return "kernel: AIO fsync"
		}
	}
	if s.comm == "recall" {
		return "recall: other"
	}
	name, _, _ := strings.Cut(s.comm, "/") // kworker/0:1 -> kworker
	return "process: " + name
}

func write(w io.Writer, samples []sample, rate float64, flat string) {
	byCPU := map[int]map[string]int{}
	total := map[int]int{}
	leaves := map[string]int{}
	for _, s := range samples {
		if byCPU[s.cpu] == nil {
			byCPU[s.cpu] = map[string]int{}
		}
		byCPU[s.cpu][category(s)]++
		total[s.cpu]++
		if flat != "" && s.comm == flat && len(s.stack) > 0 {
			leaves[s.stack[0]]++
		}
	}
	cpus := make([]int, 0, len(byCPU))
	for c := range byCPU {
		cpus = append(cpus, c)
	}
	sort.Ints(cpus)
	for _, c := range cpus {
		fmt.Fprintf(w, "CPU %d (%d samples)\n", c, total[c])
		for _, kv := range sorted(byCPU[c]) {
			share := float64(kv.n) / float64(total[c])
			if rate > 0 {
				// Samples come at a steady rate a CPU, idle included: a
				// share of the recording's time, a second of it a request.
				fmt.Fprintf(w, "  %5.1f%%  %7.1f µs a request  %s\n", 100*share, share/rate*1e6, kv.k)
			} else {
				fmt.Fprintf(w, "  %5.1f%%  %s\n", 100*share, kv.k)
			}
		}
	}
	if flat != "" {
		n := 0
		for _, kv := range sorted(leaves) {
			n += kv.n
		}
		fmt.Fprintf(w, "%s: leaf functions\n", flat)
		for i, kv := range sorted(leaves) {
			if i == 25 {
				break
			}
			fmt.Fprintf(w, "  %5.1f%%  %s\n", 100*float64(kv.n)/float64(n), kv.k)
		}
	}
}

type count struct {
	k string
	n int
}

// sorted returns m's entries, the largest first.
func sorted(m map[string]int) []count {
	out := make([]count, 0, len(m))
	for k, n := range m {
		out = append(out, count{k, n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].n != out[j].n {
			return out[i].n > out[j].n
		}
		return out[i].k < out[j].k
	})
	return out
}

// stamp parses what follows a sample header's [cpu]: its time
// ("775.388045:"), or nothing when the time field was not asked for.
func stamp(s string) (float64, error) {
	s = strings.TrimSuffix(strings.TrimSpace(s), ":")
	if s == "" {
		return 0, nil
	}
	return strconv.ParseFloat(s, 64)
}

// until returns the samples taken before process comm's first sample in
// do_exit: a recording that outlasts the load generator's run ends with
// idle cores, which would count as the row's time. Without such a
// sample (or without times) it returns samples whole.
func until(samples []sample, comm string) []sample {
	for _, s := range samples {
		if s.comm != comm || s.at == 0 || !slices.Contains(s.stack, "do_exit") {
			continue
		}
		kept := samples[:0:0]
		for _, o := range samples {
			if o.at < s.at {
				kept = append(kept, o)
			}
		}
		return kept
	}
	return samples
}
