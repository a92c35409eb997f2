package pipeline

import (
	"errors"
	"strings"
	"testing"

	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/wire"
)

// eventRenderer renders each upstream event as "<" the event ">", its
// first and those after the hold-th unflushed (EventRenderer), the end as
// "end"; reads says whether it reads the assembler's events.
type eventRenderer struct {
	reads   bool
	hold    int // events after this one wait (0: none)
	events  int
	deltas  int
	w       *flushWriter
	flushed []string // what the client had at each event
}

func (r *eventRenderer) Reads(wire.Assembler) bool { return r.reads }
func (r *eventRenderer) Event(dst, raw []byte) ([]byte, bool) {
	r.events++
	if r.w != nil {
		r.flushed = append(r.flushed, r.w.flushed.String())
	}
	return append(append(append(dst, '<'), raw...), '>'), r.events > 1 && (r.hold == 0 || r.events <= r.hold)
}
func (r *eventRenderer) Delta(dst []byte, _ wire.Delta) []byte { r.deltas++; return append(dst, 'd') }
func (r *eventRenderer) End(dst []byte, _ *wire.Answer) []byte { return append(dst, "end"...) }

// TestStreamRendersFromEvents: a renderer that renders from the
// upstream's events (EventRenderer) gets each event as it came, none of
// its deltas; what it asks not to flush waits for the next event; its end
// goes out after the commit. One that does not read the assembler's
// events renders deltas.
func TestStreamRendersFromEvents(t *testing.T) {
	const role, text, stop, done = chatRole, chatText, chatStop, chatDone
	t.Run("events", func(t *testing.T) {
		w := &flushWriter{}
		x := &fakeExchange{w: w}
		ren := &eventRenderer{reads: true, w: w}
		if err := Stream(w, eventReads(role, text, stop, done), x, chat.Protocol{}.NewAssembler(), 1<<20, ren, false, true); err != nil {
			t.Fatal(err)
		}
		w.Flush() // as Relay does once work returns
		if ren.deltas != 0 {
			t.Errorf("rendered %d deltas, want none", ren.deltas)
		}
		first, second := "<"+role+">", "<"+text+">"
		if want := []string{"", "", first + second, first + second + "<" + stop + ">"}; strings.Join(ren.flushed, "|") != strings.Join(want, "|") {
			t.Errorf("the client had %q at each event, want %q", ren.flushed, want)
		}
		// The event read last, with the answer's end, goes out with the
		// end, after the commit.
		if want := first + second + "<" + stop + ">"; x.written != want {
			t.Errorf("at the commit the client had %q, want %q", x.written, want)
		}
		all := first + second + "<" + stop + "><" + done + ">"
		if got, want := w.flushed.String(), all+"end"; got != want {
			t.Errorf("the client got %q, want %q", got, want)
		}
		// The first event waits for the second and goes out in its write.
		if w.writes != 4 {
			t.Errorf("%d writes, want 4: the unflushed event in the next one's", w.writes)
		}
	})
	t.Run("commit failed", func(t *testing.T) {
		w := &flushWriter{}
		x := &fakeExchange{w: w, commitErr: errors.New("store down")}
		ren := &eventRenderer{reads: true, hold: 2}
		err := Stream(w, strings.NewReader(role+text+stop+done), x, chat.Protocol{}.NewAssembler(), 1<<20, ren, false, true)
		if !errors.Is(err, x.commitErr) {
			t.Fatalf("got %v, want %v", err, x.commitErr)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		// The events that waited go out ahead of the error event; the end
		// never does.
		want := "<" + role + "><" + text + "><" + stop + "><" + done + ">event: error\n\n"
		if got := w.flushed.String(); got != want {
			t.Errorf("the client got %q, want %q", got, want)
		}
	})
	t.Run("cut", func(t *testing.T) {
		w := &flushWriter{}
		x := &fakeExchange{w: w}
		ren := &eventRenderer{reads: true}
		err := Stream(w, strings.NewReader(role), x, chat.Protocol{}.NewAssembler(), 1<<20, ren, false, true)
		if err == nil || x.commits != 0 {
			t.Fatalf("got %v after %d commits, want the stream cut", err, x.commits)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		// The event that waited goes out ahead of the error event.
		if got, want := w.flushed.String(), "<"+role+">event: error\n\n"; got != want {
			t.Errorf("the client got %q, want %q", got, want)
		}
	})
	t.Run("deltas", func(t *testing.T) {
		w := &flushWriter{}
		x := &fakeExchange{w: w}
		ren := &eventRenderer{}
		if err := Stream(w, strings.NewReader(role+text+stop+done), x, chat.Protocol{}.NewAssembler(), 1<<20, ren, false, true); err != nil {
			t.Fatal(err)
		}
		w.Flush() // as Relay does once work returns
		if ren.events != 0 || ren.deltas == 0 {
			t.Errorf("rendered %d events and %d deltas, want deltas only", ren.events, ren.deltas)
		}
	})
}
