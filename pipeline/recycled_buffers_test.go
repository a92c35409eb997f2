package pipeline

import (
	"bufio"
	"context"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/wire"
)

// bytesPerRun is what f allocates a run, in bytes, averaged over runs
// after a warm-up run (as testing.AllocsPerRun counts allocations).
func bytesPerRun(t *testing.T, runs int, f func()) float64 {
	t.Helper()
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops items at random: counts mean nothing")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return float64(after.TotalAlloc-before.TotalAlloc) / float64(runs)
}

// A stream's pump reads its events with a recycled reader: the reader's
// 4 KiB buffer is not allocated again for every stream.
func TestPumpRecyclesItsEventReader(t *testing.T) {
	const stream = chatRole + chatText + chatStop + chatDone
	r := strings.NewReader(stream)
	got := bytesPerRun(t, 200, func() {
		r.Reset(stream)
		if _, err := Pump(r, chat.Protocol{}.NewAssembler(), 1<<20, true,
			func([]byte, []wire.Delta, bool) error { return nil }); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.0f bytes a stream", got)
	if got >= 4096 {
		t.Errorf("a pumped stream allocates %.0f bytes, want less than the 4096 of an event reader's buffer", got)
	}
}

// A relay writes the client's stream through a recycled buffered writer:
// its 4 KiB buffer is not allocated again for every stream.
func TestRelayRecyclesItsWriter(t *testing.T) {
	const stream = chatRole + chatText + chatStop + chatDone
	up := &replayedUpstream{}
	got := bytesPerRun(t, 200, func() {
		up.Reset(stream)
		var ended error
		Relay(context.Background(), Owned{}, discardBody{}, up, time.Minute, func(w *bufio.Writer, r io.Reader) error {
			_, err := w.ReadFrom(r)
			return err
		}, func(err error) { ended = err })
		if ended != nil {
			t.Fatal(ended)
		}
	})
	t.Logf("%.0f bytes a stream", got)
	if got >= 4096 {
		t.Errorf("a relayed stream allocates %.0f bytes, want less than the 4096 of a buffered writer's buffer", got)
	}
}

// replayedUpstream is an upstream answer read from a string, reset for
// every run.
type replayedUpstream struct{ strings.Reader }

func (*replayedUpstream) Interrupt() {}
func (*replayedUpstream) Release()   {}

// discardBody is a response body stream whose connection takes every
// byte at once.
type discardBody struct{}

func (discardBody) Write(p []byte) (int, error) { return len(p), nil }
func (discardBody) End()                        {}
func (discardBody) Abort(error)                 {}
func (discardBody) Last()                       {}
func (discardBody) Wait() error                 { return nil }

// roomRenderer renders each event as it came, into room it grows for a
// stream's opening first (as a Responses renderer renders its opening
// events, about 4 KiB: its startRoom).
type roomRenderer struct{}

func (roomRenderer) Reads(wire.Assembler) bool { return true }
func (roomRenderer) Event(dst, raw []byte) ([]byte, bool) {
	return append(slices.Grow(dst, 4<<10), raw...), true
}
func (roomRenderer) Delta(dst []byte, _ wire.Delta) []byte { return dst }
func (roomRenderer) End(dst []byte, _ *wire.Answer) []byte { return append(dst, "end"...) }

// A stream's held events go through a recycled buffer: the room a
// renderer grows in it is not allocated again for every stream.
func TestStreamRecyclesItsHeldEvents(t *testing.T) {
	const stream = chatRole + chatText + chatStop + chatDone
	r := strings.NewReader(stream)
	x := &fakeExchange{w: &flushWriter{}}
	got := bytesPerRun(t, 200, func() {
		r.Reset(stream)
		if err := Stream(discardWriter{}, r, x, chat.Protocol{}.NewAssembler(), 1<<20, roomRenderer{}, false, true); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.0f bytes a stream", got)
	if got >= 4096 {
		t.Errorf("a rendered stream allocates %.0f bytes, want less than the 4096 its renderer grows", got)
	}
}

// discardWriter is a client's connection that takes every byte.
type discardWriter struct{}

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (discardWriter) Flush() error                { return nil }
