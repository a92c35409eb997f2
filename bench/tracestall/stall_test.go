package main

import (
	"bytes"
	"runtime"
	"runtime/trace"
	"strings"
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
