package responses

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/protocol/internal/prototest"
	"github.com/recallproxy/recall/wire"
)

// An answer carries the hash of each item it stores, taken from the
// decoding its parse does anyway, and equal to Hash of the item: parsed
// whole, assembled from a stream's events, or relayed to a Responses
// client (Relay). The items are a reasoning item, a message and a call,
// and the corpus's messages.
func TestAnswerHashedAsHash(t *testing.T) {
	s := upstreamtest.NewTB(t)
	reply := upstreamtest.Reply{Content: "Checking.", ToolCalls: []upstreamtest.ToolCall{{ID: "call_w", Name: "weather", Arguments: `{"city":"Oslo"}`}}}
	s.Enqueue(reply, reply)
	_, body := upstreamBody(t, `{"model":"o4-mini","input":"weather in Oslo?","stream":true}`)
	stream := post(t, s, string(body))

	asm := Upstream{}.NewAssembler()
	if !feed(t, asm, stream, func([]wire.Delta) {}) {
		t.Fatal("stream not done")
	}
	streamed, err := asm.Answer()
	if err != nil {
		t.Fatal(err)
	}
	relayed := relayAll(t, stream)
	whole, err := Upstream{}.ParseAnswer(post(t, s, strings.Replace(string(body), `"stream":true`, `"stream":false`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	answers := []wire.Answer{streamed, relayed, whole}
	for _, body := range scanCorpus {
		if a, err := (Upstream{}).ParseAnswer([]byte(body)); err == nil && len(a.Stored) > 0 {
			answers = append(answers, a)
		}
	}
	for _, a := range answers {
		if len(a.Stored) == 0 {
			t.Fatal("an answer stored nothing")
		}
		prototest.Hashed(t, Codec{}, a)
	}
}

// relayAll reads stream's events through Relay, as a stream relayed to
// a Responses client is read, and returns the answer.
func relayAll(t *testing.T, stream []byte) wire.Answer {
	t.Helper()
	asm := &Assembler{}
	er := chat.NewEventReader(bytes.NewReader(stream), 0)
	for {
		ev, err := er.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := asm.Relay(nil, ev.Data); err != nil {
			t.Fatal(err)
		}
	}
	a, err := asm.StoredAnswer()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// BenchmarkAnswerHashes is a non-streamed upstream Response read into an
// Answer and its stored items hashed for the commit: with the hashes the
// parse carries (carried), and hashed again as before they were carried
// (again).
func BenchmarkAnswerHashes(b *testing.B) {
	body := []byte(benchUpstream)
	for _, carried := range []bool{true, false} {
		name := "again"
		if carried {
			name = "carried"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var sum uint64
			for b.Loop() {
				a, err := Upstream{}.ParseAnswer(body)
				if err != nil {
					b.Fatal(err)
				}
				for _, raw := range a.Stored {
					if carried {
						sum += a.HashOf(Codec{}, raw)
					} else {
						sum += Codec{}.Hash(raw)
					}
				}
			}
			_ = sum
		})
	}
}
