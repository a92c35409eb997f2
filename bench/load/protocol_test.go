package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/store/badgerstore"
	"github.com/recallproxy/recall/wire"
)

// Each protocol's bodies are what its API takes: the strict fake upstream
// answers them, streamed and not, and the driver reads each answer to its
// end (a stream to the event that completes it), with -context-turns too.
func TestEveryProtocolDrivesTheFakeUpstream(t *testing.T) {
	up := upstreamtest.NewTB(t, upstreamtest.WithKeepRequests(16))
	for _, name := range []string{"chat", "responses", "messages", "gemini"} {
		for _, stream := range []bool{false, true} {
			for _, ctxTurns := range []int{0, 2} {
				p := protocols[name]
				o := options{url: strings.TrimSuffix(up.URL(), "/v1") + p.path, protocol: name, key: "sk-bench", model: "gpt-4o-mini", words: 5,
					concurrency: 1, stream: stream, contextTurns: ctxTurns}
				d := newDriver(o)
				s := d.request(context.Background(), 7, time.Now(), "")
				if s.err != nil {
					t.Errorf("%s stream=%v context=%d: %v", name, stream, ctxTurns, s.err)
					continue
				}
				if stream && s.ttfb <= 0 {
					t.Errorf("%s stream: got time to first byte %v, want it measured", name, s.ttfb)
				}
				last, path := up.Last(), p.path+p.pathFor(o.model, stream)
				path, _, _ = strings.Cut(path, "?")
				if last.Path != path || last.Rejected != nil {
					t.Errorf("%s: the fake got %s (rejected %v), want %s accepted", name, last.Path, last.Rejected, path)
				}
				if got := len(last.Messages); got != 2*ctxTurns+1 {
					t.Errorf("%s context=%d: the fake got %d messages, want %d", name, ctxTurns, got, 2*ctxTurns+1)
				}
				if got := gjson.GetBytes(last.Body, "stream").Bool(); got != stream && p.wire != wire.Gemini {
					t.Errorf("%s: stream %v in the body, want %v", name, got, stream)
				}
			}
		}
	}
}

// A stream is complete only when its protocol's completing event came:
// an answer cut before it is an error, wherever the reads split it.
func TestDoneScannerFindsTheMarkAcrossReads(t *testing.T) {
	for name, p := range protocols {
		body := "data: {\"x\":1}\n\ndata: " + string(p.done) + "\n\n"
		for split := 0; split <= len(body); split++ {
			for _, cut := range []bool{false, true} {
				b := body
				if cut { // the stream ends one byte into the mark
					b = body[:strings.Index(body, string(p.done))+1]
				}
				s := newDoneScanner(p.done)
				at := min(split, len(b))
				// Pieces of one byte up to the split, then the rest.
				for i := 0; i < at; i++ {
					s.write([]byte{b[i]})
				}
				s.write([]byte(b[at:]))
				if s.found == cut {
					t.Fatalf("%s split %d cut %v: found %v, want %v", name, split, cut, s.found, !cut)
				}
			}
		}
	}
}

// -seed-dir with -protocol stores the turns in that protocol, hashed by
// its codec, as Recall stores what a client of it sent.
func TestSeedStoresTurnsInTheProtocol(t *testing.T) {
	for name, p := range protocols {
		dir := t.TempDir()
		o := options{seedDir: dir, protocol: name, conversations: 1, prefill: 2, convPrefix: "c", namespace: "ns", model: "gpt-4o-mini", words: 5}
		if err := seed(o); err != nil {
			t.Fatal(err)
		}
		s, err := badgerstore.Open(dir, badgerstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var got []history.Message
		err = s.Messages(context.Background(), history.Key{Tenant: "ns", Conversation: "c0"}, 0, false,
			func(m history.Message) bool { got = append(got, m); return true })
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 4 {
			t.Fatalf("%s: stored %d messages, want 4", name, len(got))
		}
		for i, m := range got {
			c := wire.For(p.wire)
			want := []string{wire.RoleUser, wire.RoleAssistant}[i%2]
			if m.Protocol != p.wire || m.Role != want || c.Role(m.Raw) != want || m.Hash != c.Hash(m.Raw) {
				t.Errorf("%s message %d: got protocol %s, role %s (codec: %s), hash %x (codec: %x); want %s, %s, the codec's hash",
					name, i, m.Protocol, m.Role, c.Role(m.Raw), m.Hash, c.Hash(m.Raw), p.wire, want)
			}
		}
	}
}
