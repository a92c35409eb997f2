package pipeline

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/wire"
)

// fakeExchange records what the render stage asked of it; commitErr is
// what its Commit returns. written is what the client had when Commit
// was called.
type fakeExchange struct {
	w         *flushWriter
	commitErr error
	commits   int
	written   string
}

func (x *fakeExchange) Stamp(*wire.Answer) error { return nil }
func (x *fakeExchange) Commit(*wire.Answer) error {
	x.commits++
	x.written = x.w.flushed.String()
	return x.commitErr
}
func (x *fakeExchange) UpstreamDone() {}
func (x *fakeExchange) Left() error   { return nil }
func (x *fakeExchange) Committing()   {}
func (x *fakeExchange) ErrorEvent(_ wire.Renderer, err error) []byte {
	return []byte("event: error\n\n")
}

// flushWriter is a client's connection: what was flushed reached it,
// in flushes writes to the connection (a flush of nothing is none).
type flushWriter struct {
	buf, flushed bytes.Buffer
	writes       int
	flushes      int
}

func (w *flushWriter) Write(b []byte) (int, error) { w.writes++; return w.buf.Write(b) }
func (w *flushWriter) Flush() error {
	if w.buf.Len() > 0 {
		w.flushes++
	}
	w.flushed.Write(w.buf.Bytes())
	w.buf.Reset()
	return nil
}

// readsOf is an upstream whose stream comes in reads, one a Read; before
// each it notes what the client had (at).
type readsOf struct {
	reads []string
	w     *flushWriter
	at    []string
}

// eventReads is an upstream that sends each of events in a read of its
// own.
func eventReads(events ...string) *readsOf { return &readsOf{reads: events} }

func (r *readsOf) Read(p []byte) (int, error) {
	if r.w != nil {
		r.at = append(r.at, r.w.flushed.String())
	}
	if len(r.reads) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.reads[0])
	if r.reads[0] = r.reads[0][n:]; r.reads[0] == "" {
		r.reads = r.reads[1:]
	}
	return n, nil
}

// TestStreamWritesWhatCameTogetherAtOnce: the events of one read of the
// upstream reach the client in one write, made before the pump reads
// again; those read with the answer's end go with the end, after the
// commit, in the same write, whether they are relayed as they came,
// rendered from their events or from their deltas.
func TestStreamWritesWhatCameTogetherAtOnce(t *testing.T) {
	const role, text, stop, done = chatRole, chatText, chatStop, chatDone
	for _, tt := range []struct {
		name string
		same bool
		ren  wire.Renderer
	}{
		{name: "relayed", same: true},
		{name: "from events", ren: &eventRenderer{reads: true}},
		{name: "from deltas", ren: &eventRenderer{}},
	} {
		t.Run(tt.name+", one read", func(t *testing.T) {
			w := &flushWriter{}
			x := &fakeExchange{w: w}
			if err := Stream(w, eventReads(role+text+stop+done), x, chat.Protocol{}.NewAssembler(), 1<<20, tt.ren, tt.same, true); err != nil {
				t.Fatal(err)
			}
			w.Flush() // as Relay does once work returns
			if x.commits != 1 || x.written != "" {
				t.Errorf("committed %d times with %q at the client, want once with nothing", x.commits, x.written)
			}
			if w.flushes != 1 || w.buf.Len() != 0 {
				t.Errorf("the client got %d writes (%q unflushed), want the stream in one", w.flushes, w.buf.String())
			}
		})
		t.Run(tt.name+", two reads", func(t *testing.T) {
			w := &flushWriter{}
			x := &fakeExchange{w: w}
			up := &readsOf{reads: []string{role + text, stop + done}, w: w}
			if err := Stream(w, up, x, chat.Protocol{}.NewAssembler(), 1<<20, tt.ren, tt.same, true); err != nil {
				t.Fatal(err)
			}
			w.Flush() // as Relay does once work returns
			// The first read's events were the client's before the
			// second read, which could have waited on the upstream.
			if len(up.at) < 2 || up.at[0] != "" || up.at[1] == "" {
				t.Fatalf("the client had %q before each read, want nothing, then the first read's events", up.at)
			}
			if w.flushes != 2 || x.written != up.at[1] {
				t.Errorf("%d writes, %q at the commit, want 2, the first read's %q", w.flushes, x.written, up.at[1])
			}
		})
	}
}

// TestStreamHoldsTheFinishUntilTheCommit: a recorded stream relayed as it
// came reaches the client up to the event that finishes the answer; that
// event and every later one wait for the commit, and never go out when
// the commit fails: the client gets the error event instead, and keeps
// no answer that was not stored.
func TestStreamHoldsTheFinishUntilTheCommit(t *testing.T) {
	const role, text, stop, done = chatRole, chatText, chatStop, chatDone
	for _, tt := range []struct {
		name      string
		commitErr error
		want      string
	}{
		{name: "committed", want: role + text + stop + done},
		{name: "commit failed", commitErr: errors.New("store down"), want: role + text + "event: error\n\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := &flushWriter{}
			x := &fakeExchange{w: w, commitErr: tt.commitErr}
			err := Stream(w, eventReads(role, text, stop, done), x, chat.Protocol{}.NewAssembler(), 1<<20, nil, true, true)
			if !errors.Is(err, tt.commitErr) || (tt.commitErr == nil) != (err == nil) {
				t.Fatalf("got %v, want %v", err, tt.commitErr)
			}
			if x.commits != 1 || x.written != role+text {
				t.Errorf("committed %d times with %q at the client, want once with %q", x.commits, x.written, role+text)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := w.flushed.String(); got != tt.want {
				t.Errorf("the client got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestWholeCommitsBeforeTheClientHasIt: a recorded whole answer is
// committed before it is answered, not at all when the client already
// left, and answered as it came to a client of the upstream's protocol.
func TestWholeCommitsBeforeTheClientHasIt(t *testing.T) {
	for _, tt := range []struct {
		name   string
		gone   bool
		want   error
		commit int
		body   string
	}{
		{name: "client waits", commit: 1, body: "raw"},
		{name: "client left", gone: true, want: ErrClientLeft},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &fakeClient{gone: tt.gone}
			x := &fakeExchange{w: &flushWriter{}}
			err := Whole(c, x, &wire.Answer{}, []byte("raw"), chat.Protocol{}, &wire.Request{}, true, true)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if x.commits != tt.commit || c.body != tt.body {
				t.Errorf("committed %d times, answered %q; want %d, %q", x.commits, c.body, tt.commit, tt.body)
			}
		})
	}
}

type fakeClient struct {
	gone bool
	body string
}

func (c *fakeClient) Relayed(b []byte)  { c.body = string(b) }
func (c *fakeClient) Rendered(b []byte) { c.body = "rendered:" + string(b) }
func (c *fakeClient) Gone() bool        { return c.gone }

// TestStampStoresWhatTheClientGot: an answer from an upstream of another
// protocol is stored in the client's (its Settings, the upstream's, let
// go), an answer from the client's own protocol as it came; it is timed
// by the exchange unless the request named its response.
func TestStampStoresWhatTheClientGot(t *testing.T) {
	start, now := time.Unix(1000, 0), time.Unix(1002, 0)
	msg := wire.Message{Role: wire.RoleAssistant, Parts: []wire.Part{{Kind: wire.Text, Text: "forty-two"}}}
	raw := []byte(`{"role":"assistant","content":[{"type":"text","text":"forty-two"}]}`)

	a := wire.Answer{Message: msg, Stored: [][]byte{raw}, Settings: []byte(`{"service_tier":"default"}`)}
	if err := Stamp(&a, &wire.Request{}, wire.Messages, wire.ChatCompletions, start, now); err != nil {
		t.Fatal(err)
	}
	if a.Protocol != wire.ChatCompletions || a.Settings != nil || len(a.Stored) != 1 ||
		!strings.Contains(string(a.Stored[0]), `"content":"forty-two"`) {
		t.Errorf("translated: got protocol %v, settings %q, stored %q; want chat's message, no settings", a.Protocol, a.Settings, a.Stored)
	}
	if a.Created != 1000 || a.Completed != 1002 {
		t.Errorf("got created %d, completed %d; want the exchange's 1000, 1002", a.Created, a.Completed)
	}

	a = wire.Answer{Message: msg, Stored: [][]byte{raw}}
	if err := Stamp(&a, &wire.Request{ResponseID: "resp_1", Created: 900}, wire.Messages, wire.Messages, start, now); err != nil {
		t.Fatal(err)
	}
	if a.Protocol != wire.Messages || string(a.Stored[0]) != string(raw) || a.ResponseID != "resp_1" || a.Created != 900 {
		t.Errorf("same protocol: got %v %q %q created %d; want the upstream's bytes under resp_1, created 900", a.Protocol, a.Stored, a.ResponseID, a.Created)
	}
}

// endRenderer renders a stream's closing events as "end:<text>".
type endRenderer struct{}

func (endRenderer) Delta(dst []byte, d wire.Delta) []byte { return append(dst, d.Text...) }
func (endRenderer) End(dst []byte, a *wire.Answer) []byte {
	return append(dst, "end:"+a.Message.Parts[0].Text...)
}

// leftExchange is a stream's exchange whose client left before the
// commit.
type leftExchange struct{ *fakeExchange }

func (leftExchange) Left() error { return ErrClientGone }

// TestCommitStreamEndsOnlyAfterTheCommit is the one hold-until-commit
// rule that the plain relay and the history tools' rounds share: what
// was held back and the closing events reach the client after the
// commit, never when the commit fails (the error event instead) or the
// client left before it (no commit at all).
func TestCommitStreamEndsOnlyAfterTheCommit(t *testing.T) {
	a := &wire.Answer{Message: wire.Message{Parts: []wire.Part{{Kind: wire.Text, Text: "forty-two"}}}}
	for _, tt := range []struct {
		name      string
		left      bool
		commitErr error
		want      string
		commits   int
	}{
		{name: "committed", want: "held|end:forty-two", commits: 1},
		{name: "commit failed", commitErr: errors.New("store down"), want: "event: error\n\n", commits: 1},
		{name: "client left", left: true, want: ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := &flushWriter{}
			fx := &fakeExchange{w: w, commitErr: tt.commitErr}
			var x Exchange = fx
			if tt.left {
				x = leftExchange{fx}
			}
			err := CommitStream(w, x, fx, endRenderer{}, a, []byte("held|"))
			want := tt.commitErr
			if tt.left {
				want = ErrClientGone
			}
			if !errors.Is(err, want) || (want == nil) != (err == nil) {
				t.Fatalf("got %v, want %v", err, want)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if fx.commits != tt.commits || fx.written != "" || w.flushed.String() != tt.want {
				t.Errorf("committed %d times with %q at the client, then it got %q; want %d times with nothing, then %q",
					fx.commits, fx.written, w.flushed.String(), tt.commits, tt.want)
			}
		})
	}
}

// waitingReads is an upstream that says which of its reads wait on the
// network (WaitNotifier): reads[i] is sent by a read that waits when
// waits[i].
type waitingReads struct {
	readsOf
	waits  []bool
	before func() error
}

func (r *waitingReads) BeforeWait(f func() error) bool { r.before = f; return true }

func (r *waitingReads) Read(p []byte) (int, error) {
	if len(r.waits) > 0 {
		wait := r.waits[0]
		r.waits = r.waits[1:]
		if wait && r.before != nil {
			if err := r.before(); err != nil {
				return 0, err
			}
		}
	}
	return r.readsOf.Read(p)
}

// TestStreamFlushesBeforeAReadThatWaits: of an upstream that says when a
// read is to wait (WaitNotifier: a chunk per event, several of which
// came together), the events of the reads that did not wait go out
// together, flushed before the read that waits; when the rest came at
// once too, the whole stream is one write, after the commit.
func TestStreamFlushesBeforeAReadThatWaits(t *testing.T) {
	const role, text, stop, done = chatRole, chatText, chatStop, chatDone
	for _, tt := range []struct {
		name    string
		waits   []bool
		flushes int
		atWait  string // what the client had before the read that waits
	}{
		{name: "all at once", waits: []bool{true, false, false, false, false}, flushes: 1},
		{name: "the end later", waits: []bool{true, false, true, false, false}, flushes: 2, atWait: role + text},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := &flushWriter{}
			x := &fakeExchange{w: w}
			up := &waitingReads{readsOf: readsOf{reads: []string{role, text, stop, done}, w: w}, waits: tt.waits}
			if err := Stream(w, up, x, chat.Protocol{}.NewAssembler(), 1<<20, nil, true, true); err != nil {
				t.Fatal(err)
			}
			w.Flush() // as Relay does once work returns
			if up.before != nil {
				t.Error("the stream left its hook on the upstream")
			}
			if w.flushes != tt.flushes || x.written != tt.atWait {
				t.Errorf("%d writes, %q at the commit; want %d, %q", w.flushes, x.written, tt.flushes, tt.atWait)
			}
			if len(up.at) < 3 || up.at[2] != tt.atWait {
				t.Errorf("the client had %q before each read, want %q before the third", up.at, tt.atWait)
			}
		})
	}
}
