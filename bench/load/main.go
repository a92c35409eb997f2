// Command load is Recall's load generator: it drives a chat-completions,
// Responses or Messages endpoint (Recall, nginx in front of the fake
// upstream, or the fake upstream itself) and prints one JSON line of results on stdout
// and a human-readable line on stderr.
//
//	load -url URL -rate 1000 -duration 10s                open loop: a fixed arrival rate
//	load -url URL -concurrency 32 -duration 10s           closed loop: maximum throughput
//	load ... -conversations 1000                          name one of K conversations per request (delta mode)
//	load ... -stream                                      stream, and measure time to first byte
//	load ... -protocol responses|messages                 speak the Responses API or Anthropic Messages instead of chat completions
//	load ... -conversations 1000 -prefill 50              grow each conversation to 50 turns first
//	load -seed-dir DIR -conversations 16 -prefill 10000   write the turns straight into a stopped Recall's data dir, and exit
//	load -seed-url postgres://... -conversations 16 -prefill 10000   the same into a PostgreSQL store
//	load -url URL1,URL2 ...                               two replicas, each conversation's requests alternating between them
//	load ... -context-turns 50                            resend 50 earlier turns in every body (stateless-client baseline)
//	load -report results.jsonl                            render result lines as a markdown table
//
// The open loop is free of coordinated omission: request i is due at
// start + i/rate whatever happened to earlier requests, and its latency is
// measured from when it was due, not from when a worker got to it.
//
// With -conversations, every request carries X-Conversation-ID and sends
// only the new user message; conversations are taken round-robin, so
// concurrent requests name different conversations as long as the
// concurrency is below K.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"
)

// options are the command-line flags.
type options struct {
	url           string
	protocol      string
	key           string
	model         string
	label         string
	rate          float64
	concurrency   int
	duration      time.Duration
	warmup        time.Duration
	conversations int
	affinity      bool // several URLs: each conversation's requests all to one
	convPrefix    string
	stream        bool
	prefill       int
	seeded        int
	summarized    bool
	seedDir       string
	seedURL       string
	namespace     string
	words         int
	contextTurns  int
	printBody     bool
	report        string
	wrk           string
	pid           int
	cpu           int
	cpuNow        int
	proxyCPU      string
	cpuBusy       bool
	diskProbe     string
	diskEvery     time.Duration
	coldStart     int64
	samples       string
	metrics       string
}

func main() {
	var o options
	flag.StringVar(&o.url, "url", "", "URL to drive (default http://127.0.0.1:8080 and the -protocol's path); a comma list of replicas' URLs spreads the requests over them, each conversation's alternating between them")
	flag.StringVar(&o.protocol, "protocol", "chat", "API to speak: chat (completions), responses or messages (Anthropic: x-api-key, anthropic-version, max_tokens); also the protocol -seed-dir/-seed-url store turns in")
	flag.StringVar(&o.key, "key", "sk-bench", "key sent as Authorization: Bearer (messages: as x-api-key)")
	flag.StringVar(&o.model, "model", "gpt-4o-mini", "model named in each request")
	flag.StringVar(&o.label, "label", "", "label copied into the result line")
	flag.StringVar(&o.samples, "samples", "", "write every measured request to this file as a CSV line: when it was due and when sent (ms from the start of the run), its latency (ms) and its error; for finding stalls in time")
	flag.Float64Var(&o.rate, "rate", 0, "open loop: requests per second (0: closed loop)")
	flag.IntVar(&o.concurrency, "concurrency", 32, "closed loop: requests in flight; open loop: most requests in flight")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "measured duration")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "unmeasured load before the measured duration")
	flag.IntVar(&o.conversations, "conversations", 0, "conversations to spread requests over (0: no X-Conversation-ID)")
	flag.BoolVar(&o.affinity, "affinity", false, "with several -url replicas: send each conversation's requests all to one of them (a balancer's affinity) instead of alternating")
	flag.StringVar(&o.convPrefix, "conv-prefix", "bench-", "prefix of the conversation ids")
	flag.BoolVar(&o.stream, "stream", false, "ask for a streamed answer and measure time to first byte")
	flag.IntVar(&o.prefill, "prefill", 0, "grow each conversation to this many turns before measuring")
	flag.IntVar(&o.seeded, "seeded", 0, "turns already seeded into each conversation (recorded in the result only)")
	flag.BoolVar(&o.summarized, "summarized", true, "with -seed-dir/-seed-url: leave a summary as Recall's default summaries would (all but the newest 3 turns, once more than 10 are stored)")
	flag.StringVar(&o.seedDir, "seed-dir", "", "with -prefill: write the turns into this Badger data dir (Recall stopped) and exit")
	flag.StringVar(&o.seedURL, "seed-url", "", "with -prefill: write the turns into this PostgreSQL database (postgres://...) and exit")
	flag.StringVar(&o.namespace, "namespace", "", "tenant namespace for -seed-dir (default: the pass-through namespace of -key)")
	flag.IntVar(&o.words, "words", 40, "words in each user message (answers are echoed by the fake upstream)")
	flag.IntVar(&o.contextTurns, "context-turns", 0, "resend this many earlier turns in every request, as a stateless client does (a baseline for the history rows)")
	flag.BoolVar(&o.printBody, "print-body", false, "print the first request's body (with -context-turns, -stream, -words, -protocol) and exit: bareproxy -body's file for the memory floor row")
	flag.StringVar(&o.report, "report", "", "render the JSON result lines of this file as a markdown table and exit")
	flag.StringVar(&o.wrk, "wrk", "", "print the output of `wrk --latency` in this file as a result line (with -label and -concurrency) and exit")
	flag.StringVar(&o.metrics, "metrics", "", "Recall's /metrics URL: report its own added time (recall_overhead_seconds) over the measured part; a comma list sums replicas'")
	flag.IntVar(&o.pid, "pid", 0, "report this process's peak RSS (VmHWM) with the result")
	flag.IntVar(&o.cpu, "cpu", 0, "report the CPU time this process and its children (a server: PostgreSQL's postmaster and its backends) used over the measured part, in ms a measured request")
	flag.StringVar(&o.proxyCPU, "proxy-cpu", "", "report the CPU time these processes (a comma list of pids: the proxy, its replicas) used over the measured part, in ms a measured request")
	flag.BoolVar(&o.cpuBusy, "cpu-busy", false, "report each CPU's busy share over the measured part (/proc/stat): a core the proxy, the load generator or the upstream saturated")
	flag.StringVar(&o.diskProbe, "disk-probe", "", "over the measured part, sync a block of a file in this directory every -disk-every and report the syncs' times: the disk's own stalls beside the row's")
	flag.DurationVar(&o.diskEvery, "disk-every", 10*time.Millisecond, "how often -disk-probe syncs")
	flag.IntVar(&o.cpuNow, "cpu-now", 0, "print the CPU time this process and its children have used so far, in ms, and exit")
	flag.Int64Var(&o.coldStart, "cold-start", 0, "a process start time (Unix ns, e.g. date +%s%N just before starting Recall): send one request in a seeded conversation (-conversations) until it is answered, print the time from the start to that answer as a result line and exit")
	flag.Parse()

	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	p, err := protocolNamed(o.protocol)
	if err != nil {
		return err
	}
	if o.url == "" {
		o.url = "http://127.0.0.1:8080" + p.path
	}
	switch {
	case o.cpuNow > 0:
		d, ok := treeCPU(o.cpuNow)
		if !ok {
			return fmt.Errorf("-cpu-now: no process %d in /proc", o.cpuNow)
		}
		fmt.Println(d.Milliseconds())
		return nil
	case o.coldStart > 0:
		res, err := coldStart(o, time.Unix(0, o.coldStart))
		if err != nil {
			return err
		}
		return printResult(res)
	case o.report != "":
		return report(os.Stdout, o.report)
	case o.wrk != "":
		f, err := os.Open(o.wrk)
		if err != nil {
			return err
		}
		defer f.Close()
		res, err := parseWrk(f, o.label, o.concurrency)
		if err != nil {
			return fmt.Errorf("%s: %w", o.wrk, err)
		}
		line, err := json.Marshal(res)
		if err != nil {
			return err
		}
		fmt.Println(string(line))
		return nil
	case o.seedDir != "" || o.seedURL != "":
		if o.prefill <= 0 || o.conversations <= 0 {
			return fmt.Errorf("-seed-dir and -seed-url need -prefill and -conversations")
		}
		return seed(o)
	}
	if o.concurrency < 1 {
		return fmt.Errorf("-concurrency must be at least 1")
	}
	d := newDriver(o)
	if o.printBody {
		_, err := os.Stdout.Write(d.body(0))
		return err
	}
	if o.prefill > 0 {
		if o.conversations <= 0 {
			return fmt.Errorf("-prefill needs -conversations")
		}
		if err := d.prefill(); err != nil {
			return err
		}
	}
	res := d.run()
	if o.pid > 0 {
		res.PeakRSSMiB, res.RSSMiB, res.AnonMiB, res.FileMiB = procMemory(o.pid)
	}
	return printResult(res)
}

// printResult prints res as a JSON line on stdout (the load script's
// record) and for people on stderr.
func printResult(res result) error {
	line, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Println(string(line))
	fmt.Fprintln(os.Stderr, res.human())
	return nil
}
