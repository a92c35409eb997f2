package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// result is one run's summary: the JSON line the load script collects.
type result struct {
	Label         string  `json:"label"`
	Mode          string  `json:"mode"` // "open" or "closed"
	Rate          float64 `json:"rate,omitempty"`
	Concurrency   int     `json:"concurrency"`
	Conversations int     `json:"conversations"`
	Prefill       int     `json:"prefill,omitempty"`
	Stream        bool    `json:"stream"`
	Seconds       float64 `json:"seconds"`
	Requests      int     `json:"requests"`
	Errors        int     `json:"errors"`
	FirstError    string  `json:"first_error,omitempty"`
	RPS           float64 `json:"rps"`
	P50           float64 `json:"p50_ms"`
	P90           float64 `json:"p90_ms"`
	P99           float64 `json:"p99_ms"`
	Max           float64 `json:"max_ms"`
	TTFB50        float64 `json:"ttfb_p50_ms,omitempty"`
	TTFB99        float64 `json:"ttfb_p99_ms,omitempty"`
	History       string  `json:"history,omitempty"` // last X-Recall-History seen: included/stored turns
	PeakRSSMiB    float64 `json:"peak_rss_mib,omitempty"`
	RSSMiB        float64 `json:"rss_mib,omitempty"`
	AnonMiB       float64 `json:"rss_anon_mib,omitempty"` // of RSSMiB: the heap and other private memory
	FileMiB       float64 `json:"rss_file_mib,omitempty"` // of RSSMiB: mapped files' pages (Badger's tables and logs)
	// Recall's own added time over the measured part, from its
	// recall_overhead_seconds histogram (-metrics), linear within buckets.
	RecallP50 float64 `json:"recall_p50_ms,omitempty"`
	RecallP99 float64 `json:"recall_p99_ms,omitempty"`
	// The p99s of Recall's whole handling of a request
	// (recall_request_duration_seconds) and of the upstream's answers
	// within it (recall_upstream_duration_seconds), and, open loop, of
	// the wait for a free worker of the load generator's (from when a
	// request was due to when it was sent; it waits only while every
	// worker's request is in flight). A request's latency counts all
	// three; beside them its p99 says where a stall waited.
	InRecallP99 float64 `json:"in_recall_p99_ms,omitempty"`
	UpstreamP99 float64 `json:"upstream_p99_ms,omitempty"`
	QueuedP99   float64 `json:"queued_p99_ms,omitempty"`
	// Each CPU's busy share over the measured part, in percent (-cpu-busy).
	CPUBusy []float64 `json:"cpu_busy_pct,omitempty"`
	// Badger's durable log syncs over the measured part, from
	// recall_store_duration_seconds{op="sync"}: p99 (linear within
	// buckets), and the upper bound of the highest bucket reached
	// (SyncOver: past the last finite bound, which SyncMax is then).
	SyncP99  float64 `json:"sync_p99_ms,omitempty"`
	SyncMax  float64 `json:"sync_max_ms,omitempty"`
	SyncOver bool    `json:"sync_over,omitempty"`
	// Syncs is how many of them there were: a sync covers every durable
	// commit written before it began, so Requests over Syncs is how many
	// requests a sync served.
	Syncs uint64 `json:"syncs,omitempty"`
	// The runtime's assists over the measured part, CPU milliseconds
	// summed over the replicas (Assists: Recall exposed them): the
	// scavenger's, returning memory to the kernel on the allocating
	// goroutine, and the collector's marking.
	ScavengeAssistMs float64 `json:"scavenge_assist_ms,omitempty"`
	MarkAssistMs     float64 `json:"mark_assist_ms,omitempty"`
	Assists          bool    `json:"assists,omitempty"`
	// CPU time of -cpu's process and its children over the measured
	// part, a measured request.
	CPUMsPerRequest float64 `json:"cpu_ms_per_req,omitempty"`
	// The proxy's CPU time (-proxy-cpu's processes, summed) over the
	// measured part, a measured request.
	ProxyCPUMsPerRequest float64 `json:"proxy_cpu_ms_per_req,omitempty"`
	// The proxy's context switches (-proxy-cpu's processes' threads,
	// summed) over the measured part, a measured request: all of them,
	// and those where the kernel preempted a runnable thread.
	ProxySwitchesPerRequest  float64 `json:"proxy_switches_per_req,omitempty"`
	ProxyPreemptedPerRequest float64 `json:"proxy_preempted_per_req,omitempty"`
	// The disk's own syncs over the measured part (-disk-probe):
	// how many, their p99 and longest, and how many took diskStall or
	// more and how long those took in all.
	DiskSyncs     int     `json:"disk_syncs,omitempty"`
	DiskP99       float64 `json:"disk_p99_ms,omitempty"`
	DiskMax       float64 `json:"disk_max_ms,omitempty"`
	DiskStalls    int     `json:"disk_stalls,omitempty"`
	DiskStalledMs float64 `json:"disk_stalled_ms,omitempty"`
	// From a process's start to its first answered request (-cold-start).
	ColdStartMs float64 `json:"cold_start_ms,omitempty"`
}

func summarise(o options, samples []sample, elapsed time.Duration) result {
	r := result{
		Label: o.label, Mode: "closed", Concurrency: o.concurrency, Conversations: o.conversations,
		Prefill: o.prefill, Stream: o.stream, Seconds: elapsed.Seconds(),
	}
	if r.Prefill == 0 {
		r.Prefill = o.seeded
	}
	if o.rate > 0 {
		r.Mode, r.Rate = "open", o.rate
	}
	var total, ttfb, queued []time.Duration
	for _, s := range samples {
		if o.rate > 0 {
			queued = append(queued, s.sent.Sub(s.due))
		}
		if s.err != nil {
			r.Errors++
			if r.FirstError == "" {
				r.FirstError = s.err.Error()
			}
			continue
		}
		total = append(total, s.total)
		ttfb = append(ttfb, s.ttfb)
	}
	r.Requests = len(samples)
	r.RPS = float64(len(total)) / elapsed.Seconds()
	slices.Sort(total)
	slices.Sort(ttfb)
	r.P50, r.P90, r.P99, r.Max = pct(total, 0.50), pct(total, 0.90), pct(total, 0.99), pct(total, 1)
	if o.stream {
		r.TTFB50, r.TTFB99 = pct(ttfb, 0.50), pct(ttfb, 0.99)
	}
	slices.Sort(queued)
	r.QueuedP99 = pct(queued, 0.99)
	return r
}

// pct returns the q-quantile of sorted d in milliseconds (nearest rank).
func pct(d []time.Duration, q float64) float64 {
	if len(d) == 0 {
		return 0
	}
	i := int(q*float64(len(d))+0.5) - 1
	i = min(max(i, 0), len(d)-1)
	return float64(d[i].Microseconds()) / 1000
}

func (r result) human() string {
	if r.Mode == "cold" {
		return fmt.Sprintf("%-28s cold start %.1f ms (%d attempts)", r.Label, r.ColdStartMs, r.Requests)
	}
	s := fmt.Sprintf("%-28s %-6s stream=%-5t %8.0f req/s  p50 %6.2f ms  p90 %6.2f ms  p99 %6.2f ms  max %7.2f ms  errors %d/%d",
		r.Label, r.Mode, r.Stream, r.RPS, r.P50, r.P90, r.P99, r.Max, r.Errors, r.Requests)
	if r.Stream {
		s += fmt.Sprintf("  ttfb p50 %.2f p99 %.2f ms", r.TTFB50, r.TTFB99)
	}
	if r.History != "" {
		s += "  history " + r.History
	}
	if r.RecallP99 > 0 {
		s += fmt.Sprintf("  recall adds p50 %.2f p99 %.2f ms", r.RecallP50, r.RecallP99)
	}
	if r.InRecallP99 > 0 {
		s += fmt.Sprintf("  in Recall p99 %.2f upstream p99 %.2f ms", r.InRecallP99, r.UpstreamP99)
	}
	if r.Mode == "open" {
		s += fmt.Sprintf("  queued p99 %.2f ms", r.QueuedP99)
	}
	if len(r.CPUBusy) > 0 {
		busy := make([]string, len(r.CPUBusy))
		for i, b := range r.CPUBusy {
			busy[i] = strconv.FormatFloat(b, 'f', 0, 64)
		}
		s += "  CPUs busy " + strings.Join(busy, "/") + "%"
	}
	if r.SyncMax > 0 {
		s += fmt.Sprintf("  log syncs p99 %.2f max %s ms", r.SyncP99, r.syncMax())
		if r.Syncs > 0 {
			s += fmt.Sprintf(" (%.1f requests a sync)", float64(r.Requests)/float64(r.Syncs))
		}
	}
	if r.DiskSyncs > 0 {
		s += "  disk syncs " + r.disk() + " ms"
	}
	if r.Assists {
		s += fmt.Sprintf("  assists: scavenge %.1f mark %.1f ms", r.ScavengeAssistMs, r.MarkAssistMs)
	}
	if r.ProxyCPUMsPerRequest > 0 {
		s += fmt.Sprintf("  proxy CPU %.0f µs/req", r.ProxyCPUMsPerRequest*1000)
	}
	if r.ProxySwitchesPerRequest > 0 {
		s += fmt.Sprintf("  switches %.2f/req (preempted %.2f)", r.ProxySwitchesPerRequest, r.ProxyPreemptedPerRequest)
	}
	if r.PeakRSSMiB > 0 {
		s += fmt.Sprintf("  peak RSS %.0f MiB", r.PeakRSSMiB)
	}
	if r.FirstError != "" {
		s += "  first error: " + r.FirstError
	}
	return s
}

// procMemory reads a process's peak and current resident set, and the
// current one's private (anonymous) and file-backed parts, in MiB.
func procMemory(pid int) (peak, now, anon, file float64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, 0, 0
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmHWM:":
			peak = kb / 1024
		case "VmRSS:":
			now = kb / 1024
		case "RssAnon:":
			anon = kb / 1024
		case "RssFile:":
			file = kb / 1024
		}
	}
	return peak, now, anon, file
}

// readResults reads JSON result lines, skipping anything else.
func readResults(path string) ([]result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []result
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r result
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Label != "" {
			out = append(out, r)
		}
	}
	return out, sc.Err()
}

// report renders the results of a load-script run as markdown tables. Labels
// follow the script's convention "target/stream|plain/open|closed" for the
// main matrix, "turns-N" for the history-length series and "rss" for the
// memory run.
func report(w io.Writer, path string) error {
	rs, err := readResults(path)
	if err != nil {
		return err
	}
	by := map[string]result{}
	var targets []string
	for _, r := range rs {
		by[r.Label] = r
		if t, _, ok := strings.Cut(r.Label, "/"); ok && !slices.Contains(targets, t) {
			targets = append(targets, t)
		}
	}
	mainMatrix(w, by, targets)
	syncTable(w, rs, by)
	diskTable(w, rs, by)
	assistTable(w, rs, by)
	waitTable(w, rs, by)
	busyTable(w, rs, by)
	proxyCPUTable(w, rs, by)
	cpuTable(w, rs, by)
	protocolMatrix(w, by)
	pairsTable(w, rs, by)
	historySeries(w, rs)
	if r, ok := by["rss"]; ok {
		fmt.Fprintf(w, "\n**Memory**: Recall peak RSS (VmHWM) %.0f MiB, RSS at the end %.0f MiB (%.0f MiB private, %.0f MiB pages of Badger's mapped files), after %d requests over %d conversations (%.0f req/s, closed loop, each prefilled with %d turns); errors %d.\n",
			r.PeakRSSMiB, r.RSSMiB, r.AnonMiB, r.FileMiB, r.Requests, r.Conversations, r.RPS, r.Prefill, r.Errors)
	}
	ceilingTable(w, rs, by)
	return nil
}

// ctxTarget returns the first of targets named prefix-ctx…, the target
// of the same kind that sends history, else prefix.
func ctxTarget(targets []string, prefix string) string {
	for _, t := range targets {
		if strings.HasPrefix(t, prefix+"-ctx") {
			return t
		}
	}
	return prefix
}

// mainMatrix writes the main matrix, a table per kind (plain, stream)
// with a row per target. Rows that carry history (Recall with
// conversations, or a client resending earlier turns: "-ctx" labels)
// are compared with the direct call of the same context size when the
// run has one.
func mainMatrix(w io.Writer, by map[string]result, targets []string) {
	directCtx, nginxCtx := ctxTarget(targets, "direct"), ctxTarget(targets, "nginx")
	fmt.Fprintf(w, "\nRatios: × nginx is closed-loop req/s over nginx's; × %s over the same-context nginx row. Added latency is open-loop p50/p99 minus the direct call's: `direct` for rows without history, `%s` for rows with it. Recall adds is Recall's own added time over the same requests (its `recall_overhead_seconds` histogram, linear within buckets), free of the load generator's queueing on its shared core.\n", nginxCtx, directCtx)
	for _, kind := range []string{"plain", "stream"} {
		tableHead(w, "**"+map[string]string{"plain": "Non-streaming", "stream": "Streaming"}[kind]+"** (closed loop: max throughput; open loop: fixed rate, latency from the scheduled send time)",
			"lrrrrrrrrrrrrrrl", "target", "closed req/s", "× nginx", "× "+nginxCtx, "open rate", "p50 ms", "p90 ms", "p99 ms", "max ms",
			"added p50", "added p99", "Recall adds p50 / p99", "TTFB p50 / p99 ms", "added TTFB p50 / p99", "errors", "history")
		for _, t := range targets {
			if cells, ok := matrixRow(by, kind, t, directCtx, nginxCtx); ok {
				fmt.Fprintln(w, "| "+strings.Join(cells, " | ")+" |")
			}
		}
	}
}

// matrixRow returns the cells of target t's row in kind's table, or
// false when the run has neither of its rows (closed, open).
func matrixRow(by map[string]result, kind, t, directCtx, nginxCtx string) ([]string, bool) {
	c, hasC := by[t+"/"+kind+"/closed"]
	op, hasO := by[t+"/"+kind+"/open"]
	if !hasC && !hasO {
		return nil, false
	}
	base := "direct"
	if strings.Contains(t, "-ctx") || c.Conversations > 0 || op.Conversations > 0 {
		base = directCtx
	}
	direct, hasDirect := by[base+"/"+kind+"/open"]
	hasDirect = hasDirect && t != base
	cells := []string{t, "–", "–", "–", "–", "–", "–", "–", "–", "–", "–", "–", "–", "–", "", ""}
	errs := 0
	if hasC {
		nginxClosed, hasNginx := by["nginx/"+kind+"/closed"]
		nginxCtxClosed, hasNginxCtx := by[nginxCtx+"/"+kind+"/closed"]
		cells[1] = fmt.Sprintf("%.0f", c.RPS)
		if hasNginx && nginxClosed.RPS > 0 {
			cells[2] = fmt.Sprintf("%.2f", c.RPS/nginxClosed.RPS)
		}
		if hasNginxCtx && nginxCtxClosed.RPS > 0 && nginxCtx != "nginx" {
			cells[3] = fmt.Sprintf("%.2f", c.RPS/nginxCtxClosed.RPS)
		}
		errs += c.Errors
		cells[15] = c.History
	}
	if hasO {
		cells[4] = fmt.Sprintf("%.0f", op.RPS)
		cells[5], cells[6], cells[7], cells[8] = ms(op.P50), ms(op.P90), ms(op.P99), ms(op.Max)
		if hasDirect {
			cells[9], cells[10] = ms(op.P50-direct.P50), ms(op.P99-direct.P99)
		}
		if op.RecallP99 > 0 {
			cells[11] = ms(op.RecallP50) + " / " + ms(op.RecallP99)
		}
		if op.Stream {
			cells[12] = ms(op.TTFB50) + " / " + ms(op.TTFB99)
			if hasDirect {
				cells[13] = ms(op.TTFB50-direct.TTFB50) + " / " + ms(op.TTFB99-direct.TTFB99)
			}
		}
		errs += op.Errors
		if op.History != "" {
			cells[15] = op.History
		}
	}
	cells[14] = strconv.Itoa(errs)
	return cells, true
}

// cpuTable writes the database server's CPU a request, for the targets
// whose rows measured it.
func cpuTable(w io.Writer, rs []result, by map[string]result) {
	kindTable(w, rs, by, "**The database server's CPU a request** (ms: its processes' CPU time over each row's measured part, over the row's requests)",
		func(r result) (string, bool) { return fmt.Sprintf("%.3f", r.CPUMsPerRequest), r.CPUMsPerRequest > 0 })
}

// syncMax is SyncMax as the report gives it: "≤ X", or "> X" past the
// histogram's last bound.
func (r result) syncMax() string {
	if r.SyncOver {
		return "> " + strconv.FormatFloat(r.SyncMax, 'f', -1, 64)
	}
	return "≤ " + strconv.FormatFloat(r.SyncMax, 'f', -1, 64)
}

// proxyCPUTable writes the proxy's CPU a request, for the targets whose
// rows measured it: on the proxy's one saturated core, the closed loop's
// req/s is about its inverse, and it moves less with the machine's load.
func proxyCPUTable(w io.Writer, rs []result, by map[string]result) {
	kindTable(w, rs, by, "**The proxy's CPU a request** (µs: its processes' CPU time over each row's measured part, over the row's requests)",
		func(r result) (string, bool) {
			return strconv.FormatFloat(r.ProxyCPUMsPerRequest*1000, 'f', 0, 64), r.ProxyCPUMsPerRequest > 0
		})
}

// diskTable writes the disk's own syncs beside each row (-disk-probe):
// a stall here in a row's seconds is the disk's, whatever the proxy did.
func diskTable(w io.Writer, rs []result, by map[string]result) {
	kindTable(w, rs, by, "**The disk's own syncs beside each row** (ms: a 4 KB block of a preallocated file, fdatasync every 10 ms over the row's measured part: p99 / longest, and the syncs of 100 ms or more, their time in all)",
		func(r result) (string, bool) { return r.disk(), r.DiskSyncs > 0 })
}

// disk is what the disk probe saw, as the report and the row's line give
// it.
func (r result) disk() string {
	s := ms(r.DiskP99) + " / " + ms(r.DiskMax)
	if r.DiskStalls > 0 {
		s += fmt.Sprintf(", %d ≥ 100 (%s)", r.DiskStalls, ms(r.DiskStalledMs))
	}
	return s
}

// assistTable writes the runtime's assists by row, for the targets that
// report them: the collector's and the scavenger's work done on the
// goroutines that allocate, Badger's writer among them.
func assistTable(w io.Writer, rs []result, by map[string]result) {
	kindTable(w, rs, by, "**The runtime's assists** (ms of CPU over each row's measured part, scavenge / mark: `go_cpu_classes_scavenge_assist_cpu_seconds_total` and `go_cpu_classes_gc_mark_assist_cpu_seconds_total`, summed over the replicas; a scavenge assist returns memory to the kernel on the goroutine that allocates)",
		func(r result) (string, bool) {
			return fmt.Sprintf("%.1f / %.1f", r.ScavengeAssistMs, r.MarkAssistMs), r.Assists
		})
}

// waitTable writes, by row, the p99s of Recall's whole handling, of the
// upstream's answers and (open rows) of the load generator's queue, for
// the targets that report them: beside a row's p99, where its slow
// requests waited.
func waitTable(w io.Writer, rs []result, by map[string]result) {
	kindTable(w, rs, by, "**Where the requests waited** (p99s in ms, in Recall / the upstream's answers within it / queued in the load generator for a free worker, open rows only: `recall_request_duration_seconds` and `recall_upstream_duration_seconds` over each row's measured part, summed over the replicas; a request's latency counts all three and the wait before Recall's handler read it)",
		func(r result) (string, bool) {
			q := "–"
			if r.Mode == "open" {
				q = ms(r.QueuedP99)
			}
			return ms(r.InRecallP99) + " / " + ms(r.UpstreamP99) + " / " + q, r.InRecallP99 > 0
		})
}

// busyTable writes each CPU's busy share by row: a core saturated by the
// proxy, or by the load generator and the upstream, in the row's seconds.
func busyTable(w io.Writer, rs []result, by map[string]result) {
	kindTable(w, rs, by, "**The CPUs' busy share** (percent of each row's measured part, CPU 0 / CPU 1 /...: `/proc/stat`; pinned runs put the proxy alone on CPU 0, the load generator and the upstream on CPU 1)",
		func(r result) (string, bool) {
			busy := make([]string, len(r.CPUBusy))
			for i, b := range r.CPUBusy {
				busy[i] = strconv.FormatFloat(b, 'f', 0, 64)
			}
			return strings.Join(busy, " / "), len(r.CPUBusy) > 0
		})
}

// syncTable writes Badger's durable log syncs by row, for the targets
// that report them: where a durable row's tail meets the disk's.
func syncTable(w io.Writer, rs []result, by map[string]result) {
	kindTable(w, rs, by, "**Badger's durable log syncs** (ms: `recall_store_duration_seconds{op=\"sync\"}` over each row's measured part, p99 / the bucket of the longest: a durable commit waits for at least its group's sync)",
		func(r result) (string, bool) { return ms(r.SyncP99) + " / " + r.syncMax(), r.SyncMax > 0 })
}

// kindTable writes title's table of one figure (cell: its text, and
// whether the row has it) for each target with a row that has it, in
// the four kinds of the main matrix: closed, open, closed streamed, open
// streamed ("–" where a kind's row lacks it).
func kindTable(w io.Writer, rs []result, by map[string]result, title string, cell func(result) (string, bool)) {
	var targets []string
	for _, r := range rs {
		if t, _, _ := strings.Cut(r.Label, "/"); !slices.Contains(targets, t) && !strings.HasPrefix(t, pairPrefix) {
			if _, ok := cell(r); ok {
				targets = append(targets, t)
			}
		}
	}
	if len(targets) == 0 {
		return
	}
	tableHead(w, title, "lrrrr", "target", "closed", "open", "closed streamed", "open streamed")
	for _, t := range targets {
		cells := []string{t}
		for _, row := range []string{"plain/closed", "plain/open", "stream/closed", "stream/open"} {
			c := "–"
			if r, ok := by[t+"/"+row]; ok {
				if text, has := cell(r); has {
					c = text
				}
			}
			cells = append(cells, c)
		}
		fmt.Fprintln(w, "| "+strings.Join(cells, " | ")+" |")
	}
}

// historySeries writes the "turns-N" series: the cost against stored
// history length.
func historySeries(w io.Writer, rs []result) {
	series := labelled(rs, "turns-")
	if len(series) == 0 {
		return
	}
	tableHead(w, "**Cost against stored history length** (open loop, default budget, non-streaming)",
		"rrrrrrrrl", "stored turns", "conversations", "rate", "p50 ms", "p90 ms", "p99 ms", "max ms", "errors", "history (sent/stored)")
	for _, r := range series {
		fmt.Fprintf(w, "| %d | %d | %.0f | %s | %s | %s | %s | %d | %s |\n", r.Prefill, r.Conversations, r.RPS,
			ms(r.P50), ms(r.P90), ms(r.P99), ms(r.Max), r.Errors, r.History)
	}
}

// ceilingTable writes the "wrk/" rows: the proxy's ceiling.
func ceilingTable(w io.Writer, rs []result, by map[string]result) {
	ceiling := labelled(rs, "wrk/")
	if len(ceiling) == 0 {
		return
	}
	tableHead(w, "**Proxy ceiling** (wrk, closed loop, no history, an upstream answering from memory: nginx `return 200`)",
		"lrrrrrrr", "target", "req/s", "× nginx", "p50 ms", "p90 ms", "p99 ms", "max ms", "errors")
	nginx := by["wrk/nginx"]
	for _, r := range ceiling {
		ratio := "–"
		if nginx.RPS > 0 {
			ratio = fmt.Sprintf("%.2f", r.RPS/nginx.RPS)
		}
		fmt.Fprintf(w, "| %s | %.0f | %s | %s | %s | %s | %s | %d |\n", strings.TrimPrefix(r.Label, "wrk/"), r.RPS, ratio,
			ms(r.P50), ms(r.P90), ms(r.P99), ms(r.Max), r.Errors)
	}
}

// labelled returns the results whose label starts with prefix, in order.
func labelled(rs []result, prefix string) []result {
	var out []result
	for _, r := range rs {
		if strings.HasPrefix(r.Label, prefix) {
			out = append(out, r)
		}
	}
	return out
}

// tableHead writes a table's title, after a blank line, and its header
// after another: the columns' names and the row that aligns them, which
// align spells a letter a column, l for left (names), r for right
// (numbers), so that the two rows cannot disagree on the columns.
func tableHead(w io.Writer, title, align string, cols ...string) {
	if len(align) != len(cols) {
		panic(fmt.Sprintf("load: table %q: %d alignments for %d columns", title, len(align), len(cols)))
	}
	fmt.Fprintf(w, "\n%s\n\n| %s |\n|", title, strings.Join(cols, " | "))
	for _, a := range align {
		if a == 'r' {
			fmt.Fprint(w, " ---: |")
		} else {
			fmt.Fprint(w, " --- |")
		}
	}
	fmt.Fprintln(w)
}

func ms(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// matrixRows are the protocol matrix's client APIs and the targets that
// measured them: recall-sync's conversations, each in its API, with the
// API's own upstream (native) and bridged to chat completions.
var matrixRows = []struct{ api, native, bridged string }{
	{"chat completions", "recall-sync", ""},
	{"Responses", "recall-sync-responses", "recall-sync-responses-bridged"},
	{"Anthropic Messages", "recall-sync-messages", "recall-sync-messages-bridged"},
	{"Gemini", "recall-sync-gemini", "recall-sync-gemini-bridged"},
}

// protocolMatrix writes the protocol matrix: each client API's closed-loop
// req/s against recall-sync's, native and bridged, with Recall's peak RSS
// over the native rows and its cold start (process start to the first
// answered request in a seeded conversation). Nothing when the run has no
// protocol rows.
func protocolMatrix(w io.Writer, by map[string]result) {
	base := by["recall-sync/plain/closed"]
	baseStream := by["recall-sync/stream/closed"]
	if _, ok := by["recall-sync-responses/plain/closed"]; !ok {
		return
	}
	rps := func(target string) (string, string) {
		p, hasP := by[target+"/plain/closed"]
		s, hasS := by[target+"/stream/closed"]
		if !hasP || !hasS {
			return "–", "–"
		}
		ratio := "–"
		if base.RPS > 0 && baseStream.RPS > 0 {
			ratio = fmt.Sprintf("%.2f / %.2f", p.RPS/base.RPS, s.RPS/baseStream.RPS)
		}
		return fmt.Sprintf("%.0f / %.0f", p.RPS, s.RPS), ratio
	}
	tableHead(w, "**Protocol matrix** (closed loop req/s non-streamed / streamed, recall-sync's 1,000 conversations of 50 turns in each API; × recall-sync: over the chat row; peak RSS: VmHWM after the native rows; cold start: process start to the first answered request in a seeded conversation)",
		"lrrrrrr", "client API", "native upstream", "× recall-sync", "bridged to chat completions", "× recall-sync", "peak RSS MiB", "cold start ms")
	for _, row := range matrixRows {
		native, nativeRatio := rps(row.native)
		bridged, bridgedRatio := "–", "–"
		if row.bridged != "" {
			bridged, bridgedRatio = rps(row.bridged)
		}
		rss, cold := "–", "–"
		if r, ok := by[row.native+"/stream/closed"]; ok && r.PeakRSSMiB > 0 {
			rss = fmt.Sprintf("%.0f", r.PeakRSSMiB)
		}
		if r, ok := by["coldstart/"+row.native]; ok {
			cold = fmt.Sprintf("%.0f", r.ColdStartMs)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", row.api, native, nativeRatio, bridged, bridgedRatio, rss, cold)
	}
}

// pairPrefix begins the labels of the pairs group's slices:
// pairs-ROW/ROUND/WHO/KIND, WHO base or row, KIND plain or stream.
const pairPrefix = "pairs-"

// pairTargets names the pairs' rows that are not a protocol against the
// chat row: the target and its baseline.
var pairTargets = map[string][2]string{
	"ctx50":         {"recall-sync", "nginx-ctx50"},
	"durable-ctx50": {"floor-durable-ctx50", "nginx-ctx50"},
	"store-ctx50":   {"floor-store-ctx50", "nginx-ctx50"},
	"badger-ctx50":  {"floor-badger-ctx50", "nginx-ctx50"},
	"pg-2":          {"recall-pg-2", "recall-pg"},
	"sync-2":        {"recall-sync-2", "recall-sync"},
	"pg-apart":      {"recall-pg-apart", "recall-pg"},
}

// pairsTable writes the pairs group's table: each row against its
// baseline in alternating slices of the same run (run.sh, "pairs"), as
// the median over the rounds of the row's closed-loop req/s over the
// baseline slice's beside it, and of its proxy's CPU a request over the
// baseline's, lowest and highest in brackets. Nothing when the run has
// no pairs.
func pairsTable(w io.Writer, rs []result, by map[string]result) {
	var rows []string
	rounds := map[string][]string{}
	for _, r := range rs {
		rest, ok := strings.CutPrefix(r.Label, pairPrefix)
		if !ok {
			continue
		}
		parts := strings.Split(rest, "/")
		if len(parts) != 4 {
			continue
		}
		row, round := parts[0], parts[1]
		if !slices.Contains(rows, row) {
			rows = append(rows, row)
		}
		if !slices.Contains(rounds[row], round) {
			rounds[row] = append(rounds[row], round)
		}
	}
	if len(rows) == 0 {
		return
	}
	tableHead(w, "**Pairs** (each row against its baseline in alternating closed-loop slices of the same run, both side by side on the proxy's core: the median over the rounds of the row's req/s over the baseline slice's beside it, and of the row's proxy's CPU a request over the baseline's; lowest and highest in brackets; the protocols' rows against recall-sync's chat row)",
		"llrrrrr", "target", "against", "rounds", "req/s ×, non-streamed", "streamed", "CPU a request ×, non-streamed", "streamed")
	for _, row := range rows {
		names, ok := pairTargets[row]
		if !ok {
			names = [2]string{"recall-sync-" + row, "recall-sync"}
		}
		cells := []string{names[0], names[1], "0"}
		n := 0
		for _, figure := range []func(row, base result) (float64, bool){
			func(row, base result) (float64, bool) { return row.RPS / base.RPS, row.RPS > 0 && base.RPS > 0 },
			func(row, base result) (float64, bool) {
				return row.ProxyCPUMsPerRequest / base.ProxyCPUMsPerRequest, row.ProxyCPUMsPerRequest > 0 && base.ProxyCPUMsPerRequest > 0
			},
		} {
			for _, kind := range []string{"plain", "stream"} {
				var ratios []float64
				for _, round := range rounds[row] {
					at := pairPrefix + row + "/" + round + "/"
					r, hasR := by[at+"row/"+kind]
					b, hasB := by[at+"base/"+kind]
					if v, ok := figure(r, b); hasR && hasB && ok {
						ratios = append(ratios, v)
					}
				}
				cells = append(cells, medianRange(ratios))
				n = max(n, len(ratios))
			}
		}
		cells[2] = strconv.Itoa(n)
		fmt.Fprintln(w, "| "+strings.Join(cells, " | ")+" |")
	}
}

// medianRange is "median (lowest-highest)" of vs, to two places ("–"
// for none; the median of an even count is the mean of the middle two).
func medianRange(vs []float64) string {
	if len(vs) == 0 {
		return "–"
	}
	vs = slices.Sorted(slices.Values(vs))
	m := vs[len(vs)/2]
	if len(vs)%2 == 0 {
		m = (vs[len(vs)/2-1] + m) / 2
	}
	return fmt.Sprintf("%.2f (%.2f-%.2f)", m, vs[0], vs[len(vs)-1])
}
