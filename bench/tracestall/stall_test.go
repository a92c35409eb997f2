package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// spin holds its processor for d: the background computation a stall
// waits behind.
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

func TestAnalyzeNamesWhatHeldTheProcessor(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	spun := make(chan struct{})
	// With one P, the spinner holds it until the scheduler takes it back
	// (a 10 ms slice, fresh after the Gosched: a goroutine run next would
	// inherit what was left of its maker's), and only then does the
	// waiter it made run.
	go func() {
		runtime.Gosched()
		go func() { close(done) }()
		spin(30 * time.Millisecond)
		close(spun)
	}()
	<-done
	<-spun
	trace.Stop()

	r, err := Analyze(&buf, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if r.Stalls == 0 || len(r.Windows) == 0 {
		t.Fatalf("got %d stalls in %d windows (max wait %v), want the waiter's wait behind spin", r.Stalls, len(r.Windows), r.MaxWait)
	}
	if got := r.Ran[0].Name; !strings.HasSuffix(got, "TestAnalyzeNamesWhatHeldTheProcessor.func1") {
		t.Errorf("what ran most in the windows: got %q, want the spinning goroutine", got)
	}
	if r.Ran[0].In < 5*time.Millisecond {
		t.Errorf("spin's time in the windows: got %v, want 5ms or more", r.Ran[0].In)
	}
	var out bytes.Buffer
	r.Write(&out, 3)
	if !strings.Contains(out.String(), "longest windows:\n  at ") {
		t.Errorf("the report lists no window:\n%s", out.String())
	}
}

func TestAnalyzeRefusesWhatIsNotATrace(t *testing.T) {
	if _, err := Analyze(strings.NewReader("not a trace"), 0); err == nil {
		t.Error("got no error for a body that is not a trace")
	}
}

// TestAnalyzeTellsTheKernelsTimeFromAGoroutines freezes the process
// (SIGSTOP from a child that sends SIGCONT 60 ms later) while a goroutine
// computes and others wait behind it: the trace shows the goroutine
// running through the freeze, and Analyze must count the freeze as the
// process off the CPU, not as the goroutine's work.
func TestAnalyzeTellsTheKernelsTimeFromAGoroutines(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to freeze the process from")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	var thawed atomic.Bool
	spun := make(chan struct{})
	// The spinner makes a goroutine every few hundred microseconds: each
	// waits behind it for the rest of its slice, the ones made before the
	// freeze through the freeze.
	go func() {
		defer close(spun)
		for !thawed.Load() {
			go func() {}()
			spin(200 * time.Microsecond)
		}
	}()
	freeze := exec.Command("sh", "-c", fmt.Sprintf("kill -STOP %d; sleep 0.06; kill -CONT %d", os.Getpid(), os.Getpid()))
	err := freeze.Run()
	thawed.Store(true)
	<-spun
	trace.Stop()
	if err != nil {
		t.Fatalf("freezing the process: %v", err)
	}

	r, err := Analyze(&buf, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if r.Silent < Silence {
		t.Fatalf("the windows' silent time: got %v, want the 60 ms freeze (%v or more) in it", r.Silent, Silence)
	}
	var out bytes.Buffer
	r.Write(&out, 3)
	if !strings.Contains(out.String(), "(the process silent: off the CPU)") {
		t.Errorf("no window names the freeze:\n%s", out.String())
	}
}

// TestAnalyzeListsWhatTheSamplesCaught takes a CPU profile beside the
// trace, as run.sh does: the samples in the windows must name the
// goroutine that held the processor.
func TestAnalyzeListsWhatTheSamplesCaught(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	if err := pprof.StartCPUProfile(io.Discard); err != nil {
		t.Skipf("no CPU profile: %v", err)
	}
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		pprof.StopCPUProfile()
		t.Fatal(err)
	}
	spun := make(chan struct{})
	// Goroutines made every few hundred microseconds wait behind the
	// spinner for the rest of its slice: windows, with the spinner in them.
	go func() {
		defer close(spun)
		for start := time.Now(); time.Since(start) < 200*time.Millisecond; {
			go func() {}()
			spin(200 * time.Microsecond)
		}
	}()
	<-spun
	trace.Stop()
	pprof.StopCPUProfile()

	r, err := Analyze(&buf, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range r.Sampled {
		found = found || strings.Contains(c.Name, "(github.com/recallproxy/recall/bench/tracestall.TestAnalyzeListsWhatTheSamplesCaught.func1)")
	}
	if !found {
		t.Errorf("no sample in the windows caught the spinner: %+v", r.Sampled)
	}
	var out bytes.Buffer
	r.Write(&out, 3)
	if !strings.Contains(out.String(), "CPU samples in the windows: ") {
		t.Errorf("the report lists no samples:\n%s", out.String())
	}
	perWindow := 0
	for _, w := range r.Windows {
		perWindow += w.Samples
	}
	inWindows := 0
	for _, c := range r.Sampled {
		inWindows += c.In
	}
	if perWindow != inWindows || perWindow == 0 {
		t.Errorf("samples counted per window: got %d, want the %d in the windows", perWindow, inWindows)
	}
}
