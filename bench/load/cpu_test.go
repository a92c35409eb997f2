package main

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain doubles as the child process the CPU tests measure: with
// LOAD_TEST_SPIN set it burns that much CPU, then, with LOAD_TEST_HOLD,
// says so on its stdout and waits for its stdin to close.
func TestMain(m *testing.M) {
	if v := os.Getenv("LOAD_TEST_SPIN"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			os.Exit(2)
		}
		spin(d)
		if os.Getenv("LOAD_TEST_HOLD") != "" {
			_, _ = os.Stdout.Write([]byte{'\n'})
			_, _ = os.Stdin.Read(make([]byte, 1))
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// spin burns at least d of this process's CPU time.
func spin(d time.Duration) {
	start, _ := treeCPU(os.Getpid())
	x := 0
	for {
		for i := range 1 << 20 {
			x += i
		}
		if now, ok := treeCPU(os.Getpid()); !ok || now-start >= d {
			break
		}
	}
	_ = x
}

func spinner(t *testing.T, d time.Duration, hold bool) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LOAD_TEST_SPIN="+d.String())
	if hold {
		cmd.Env = append(cmd.Env, "LOAD_TEST_HOLD=1")
	}
	return cmd
}

func self(t *testing.T) time.Duration {
	t.Helper()
	f, ok := statFields(os.Getpid())
	if !ok {
		t.Skip("no /proc")
	}
	return time.Duration(atoi(f[11])+atoi(f[12])+atoi(f[13])+atoi(f[14])) * clockTick
}

// TestTreeCPUCountsExitedChildren: a child's CPU time counts once the
// parent waited for it, as a postmaster's exited backends do.
func TestTreeCPUCountsExitedChildren(t *testing.T) {
	before, ok := treeCPU(os.Getpid())
	if !ok {
		t.Skip("no /proc")
	}
	if err := spinner(t, 300*time.Millisecond, false).Run(); err != nil {
		t.Fatal(err)
	}
	after, _ := treeCPU(os.Getpid())
	if after-before < 300*time.Millisecond {
		t.Fatalf("tree CPU grew %v over a child that spun 300ms", after-before)
	}
}

// TestTreeCPUCountsLiveChildren: a live child's CPU time counts, as a
// connected backend's does.
func TestTreeCPUCountsLiveChildren(t *testing.T) {
	cmd := spinner(t, 300*time.Millisecond, true)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); _ = cmd.Wait() }()
	if _, err := out.Read(make([]byte, 1)); err != nil { // it spun
		t.Fatal(err)
	}
	child, ok := treeCPU(cmd.Process.Pid)
	if !ok {
		t.Skip("no /proc")
	}
	if child < 300*time.Millisecond {
		t.Fatalf("child reports %v of CPU after spinning 300ms", child)
	}
	own := self(t)
	tree, _ := treeCPU(os.Getpid())
	if tree < own+child {
		t.Fatalf("tree CPU %v, want at least own %v + the live child's %v", tree, own, child)
	}
}

// TestTreeCPUOfNoProcess: a pid /proc does not hold is reported as such.
func TestTreeCPUOfNoProcess(t *testing.T) {
	if _, ok := treeCPU(1 << 30); ok {
		t.Fatal("treeCPU of a pid that cannot exist reported ok")
	}
}

// The report puts each row's server CPU a request (-cpu) in a table of
// its own, a target a line.
func TestReportServerCPU(t *testing.T) {
	out := reportOf(t, `{"label":"recall-pg/plain/closed","mode":"closed","concurrency":32,"conversations":1000,"rps":1100,"cpu_ms_per_req":0.5123}
{"label":"recall-pg/stream/open","mode":"open","rate":1000,"concurrency":32,"conversations":1000,"stream":true,"rps":990,"cpu_ms_per_req":0.61}
{"label":"recall-sync/plain/closed","mode":"closed","concurrency":32,"conversations":1000,"rps":2000}
`)
	if want := "| recall-pg | 0.512 | – | – | 0.610 |"; !strings.Contains(out, want) {
		t.Errorf("report lacks %q:\n%s", want, out)
	}
	if strings.Contains(out, "| recall-sync | –") {
		t.Errorf("a target without -cpu has a server CPU line:\n%s", out)
	}
}

// Each CPU's busy share comes from /proc/stat's cpuN lines, idle and
// iowait excluded, between two readings; the summary line is skipped.
func TestCPUBusy(t *testing.T) {
	before := parseCPUTimes([]byte("cpu  300 0 100 600 0 0 0 0 0 0\ncpu0 200 0 50 250 0 0 0 0 0 0\ncpu1 100 0 50 350 0 0 0 0 0 0\nintr 1 2 3\n"))
	after := parseCPUTimes([]byte("cpu  ...\ncpu0 270 0 70 260 0 0 0 0 0 0\ncpu1 110 0 50 430 10 0 0 0 0 0\n"))
	got := busyPercent(before, after)
	if len(got) != 2 || got[0] != 90 || got[1] != 10 {
		t.Errorf("busy = %v, want [90 10] (CPU 0: 90 of 100 ticks; CPU 1: 10 of 100, iowait idle)", got)
	}
	if got := busyPercent(before, after[:1]); got != nil {
		t.Errorf("readings of different CPUs gave %v, want nil", got)
	}
	if live := readCPUTimes(); live == nil {
		t.Skip("no /proc/stat")
	} else if b := busyPercent(live, readCPUTimes()); len(b) != len(live) {
		t.Errorf("two live readings gave %v for %d CPUs", b, len(live))
	}
}

// TestParseSwitches reads both counts out of a thread's status file.
func TestParseSwitches(t *testing.T) {
	status := []byte("Name:\trecall\nState:\tS (sleeping)\nvoluntary_ctxt_switches:\t1234\nnonvoluntary_ctxt_switches:\t56\n")
	if got := parseSwitches(status); got != (switchCount{voluntary: 1234, involuntary: 56}) {
		t.Fatalf("parseSwitches = %+v, want 1234 voluntary, 56 involuntary", got)
	}
}

// TestSumSwitchesCountsBlocking: a thread that blocks adds to its
// process's switches, and a pid /proc does not hold is reported as such.
func TestSumSwitchesCountsBlocking(t *testing.T) {
	pid := os.Getpid()
	before, ok := sumSwitches([]int{pid})
	if !ok {
		t.Skip("no /proc")
	}
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread() // one thread, which blocks 50 times
		defer runtime.UnlockOSThread()
		for range 50 {
			time.Sleep(time.Millisecond)
		}
		close(done)
	}()
	<-done
	after, _ := sumSwitches([]int{pid})
	if after.voluntary-before.voluntary < 50 {
		t.Fatalf("voluntary switches grew by %d over a thread that slept 50 times", after.voluntary-before.voluntary)
	}
	if _, ok := sumSwitches([]int{1 << 30}); ok {
		t.Fatal("sumSwitches of a pid that cannot exist reported ok")
	}
}
