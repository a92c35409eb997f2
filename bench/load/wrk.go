package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// parseWrk reads the output of `wrk --latency` (wrk 4) and returns it as a
// closed-loop result line labelled label: the load script's proxy-ceiling
// rows, where wrk drives a proxy in front of an upstream that answers from
// memory, because this load generator saturates first (about 11,000 req/s
// here) and would hide the proxy's own ceiling.
func parseWrk(r io.Reader, label string, concurrency int) (result, error) {
	res := result{Label: label, Mode: "closed", Concurrency: concurrency}
	var seen bool
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "Requests/sec:":
			res.RPS, _ = strconv.ParseFloat(f[1], 64)
			seen = true
		case len(f) == 2 && (f[0] == "50%" || f[0] == "90%" || f[0] == "99%"):
			d, err := wrkDuration(f[1])
			if err != nil {
				return res, err
			}
			switch f[0] {
			case "50%":
				res.P50 = d
			case "90%":
				res.P90 = d
			default:
				res.P99 = d
			}
		case len(f) >= 5 && f[1] == "requests" && f[2] == "in":
			res.Requests, _ = strconv.Atoi(f[0])
			d, err := wrkDuration(strings.TrimSuffix(f[3], ","))
			if err != nil {
				return res, err
			}
			res.Seconds = d / 1000
		case len(f) >= 5 && f[0] == "Latency" && f[1] != "Distribution":
			res.Max, _ = wrkDuration(f[3])
		case len(f) == 5 && f[0] == "Non-2xx":
			n, _ := strconv.Atoi(f[4])
			res.Errors += n
		case len(f) >= 2 && f[0] == "Socket" && f[1] == "errors:":
			// "Socket errors: connect 0, read 0, write 0, timeout 0"
			for i := 2; i+1 < len(f); i += 2 {
				n, _ := strconv.Atoi(strings.TrimSuffix(f[i+1], ","))
				res.Errors += n
			}
		}
	}
	if err := sc.Err(); err != nil {
		return res, err
	}
	if !seen {
		return res, fmt.Errorf("no Requests/sec line in wrk's output")
	}
	return res, nil
}

// wrkDuration parses wrk's latencies ("812.00us", "1.05ms", "2.00s",
// "1.00m") into milliseconds.
func wrkDuration(s string) (float64, error) {
	if v, ok := strings.CutSuffix(s, "m"); ok { // minutes: not Go's unit
		f, err := strconv.ParseFloat(v, 64)
		return f * 60_000, err
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("wrk latency %q: %w", s, err)
	}
	return float64(d) / float64(time.Millisecond), nil
}
