package main

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of /proc's CPU times (USER_HZ, 100 on every
// architecture Linux exposes it on).
const clockTick = 10 * time.Millisecond

// treeCPU returns the CPU time pid and its children have used so far:
// its own, its exited children's that it waited for (cutime and cstime,
// as a PostgreSQL postmaster waits for its backends), and its live (or
// not yet waited-for) children's. A server that forks a process a
// connection, a worker or a checkpoint is measured whole this way. ok is
// false if /proc cannot tell (pid gone, not Linux).
func treeCPU(pid int) (d time.Duration, ok bool) {
	f, ok := statFields(pid)
	if !ok || len(f) < 15 {
		return 0, false
	}
	// f[0] is the state (field 3 of proc(5)); utime is field 14.
	ticks := atoi(f[11]) + atoi(f[12]) + atoi(f[13]) + atoi(f[14])
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil || child == pid {
			continue
		}
		cf, ok := statFields(child)
		if !ok || len(cf) < 13 || atoi(cf[1]) != int64(pid) {
			continue
		}
		ticks += atoi(cf[11]) + atoi(cf[12])
	}
	return time.Duration(ticks) * clockTick, true
}

// statFields returns the fields of /proc/PID/stat after the command's
// name (which may hold spaces and parentheses): the state first.
func statFields(pid int) ([][]byte, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, false
	}
	return bytes.Fields(b[i+1:]), true
}

func atoi(b []byte) int64 {
	n, _ := strconv.ParseInt(string(b), 10, 64)
	return n
}

// pidList parses a comma list of pids; what is not a pid is skipped.
func pidList(s string) []int {
	var pids []int
	for f := range strings.SplitSeq(s, ",") {
		if pid, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids
}

// sumCPU is treeCPU summed over pids: ok only if every one could be read.
func sumCPU(pids []int) (time.Duration, bool) {
	var sum time.Duration
	for _, pid := range pids {
		d, ok := treeCPU(pid)
		if !ok {
			return 0, false
		}
		sum += d
	}
	return sum, true
}

// cpuTimes are one CPU's busy and total times so far, in clock ticks,
// from /proc/stat.
type cpuTimes struct{ busy, total int64 }

// readCPUTimes returns every CPU's times, in the order of /proc/stat's
// cpuN lines (nil if it cannot be read).
func readCPUTimes() []cpuTimes {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil
	}
	return parseCPUTimes(b)
}

// parseCPUTimes reads /proc/stat's cpuN lines: user, nice, system, idle,
// iowait, irq, softirq, steal; busy is all but idle and iowait.
func parseCPUTimes(stat []byte) []cpuTimes {
	var out []cpuTimes
	for line := range bytes.Lines(stat) {
		f := bytes.Fields(line)
		if len(f) < 9 || !bytes.HasPrefix(f[0], []byte("cpu")) || len(f[0]) == 3 {
			continue
		}
		var t cpuTimes
		for i, v := range f[1:9] {
			n := atoi(v)
			t.total += n
			if i != 3 && i != 4 {
				t.busy += n
			}
		}
		out = append(out, t)
	}
	return out
}

// busyPercent is each CPU's busy share, in percent, between two readings
// (nil if they do not match).
func busyPercent(before, after []cpuTimes) []float64 {
	if len(before) == 0 || len(before) != len(after) {
		return nil
	}
	out := make([]float64, len(after))
	for i := range after {
		if dt := after[i].total - before[i].total; dt > 0 {
			out[i] = 100 * float64(after[i].busy-before[i].busy) / float64(dt)
		}
	}
	return out
}

// switchCount is a process's context switches so far, summed over its
// threads: voluntary (it blocked: a read, a futex, a sleep) and not (the
// kernel preempted it for another runnable task on its CPU).
type switchCount struct{ voluntary, involuntary int64 }

// sumSwitches is switches summed over pids: ok only if every one could
// be read. Two servers sharing one core hand it to each other at every
// switch, and each comes back to caches the other filled.
func sumSwitches(pids []int) (switchCount, bool) {
	var sum switchCount
	for _, pid := range pids {
		tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		if err != nil {
			return switchCount{}, false
		}
		for _, t := range tasks {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/status")
			if err != nil {
				continue // a thread that exited meanwhile
			}
			c := parseSwitches(b)
			sum.voluntary += c.voluntary
			sum.involuntary += c.involuntary
		}
	}
	return sum, true
}

// parseSwitches reads a /proc status file's voluntary_ctxt_switches and
// nonvoluntary_ctxt_switches.
func parseSwitches(status []byte) switchCount {
	var c switchCount
	for line := range bytes.Lines(status) {
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		switch string(name) {
		case "voluntary_ctxt_switches":
			c.voluntary = atoi(bytes.TrimSpace(value))
		case "nonvoluntary_ctxt_switches":
			c.involuntary = atoi(bytes.TrimSpace(value))
		}
	}
	return c
}
