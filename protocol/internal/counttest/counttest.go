// Package counttest holds the checks of a codec that counts its own
// messages' tokens: the count its chat rendition gives, of a corpus and
// of any bytes, and no allocation on the way. It is apart from
// prototest because it imports plan, which imports protocol/chat, whose
// tests import prototest.
package counttest

import (
	"testing"
	"unicode/utf8"

	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/tokens"
	"github.com/recallproxy/recall/wire"
)

// Tokenizer is a codec that counts its own messages' tokens, the
// method plan.Count asks first; ok is false for a message it leaves to
// the chat rendition.
type Tokenizer interface {
	Tokens(c *tokens.Counter, enc tokens.Encoding, raw []byte) (n int, ok bool)
}

// throughChat is a plan.Counter that is not a *tokens.Counter: plan.Count
// counts a message through its chat rendition with it, as it counted
// every message before the codecs counted their own.
type throughChat struct{ *tokens.Counter }

// CountThroughChat is plan.Count of raw, a message of protocol p,
// through its chat rendition.
func CountThroughChat(c *tokens.Counter, enc tokens.Encoding, p wire.Protocol, raw []byte) int {
	return plan.Count(throughChat{c}, enc, p, raw)
}

// encodings are the encodings a count is checked in.
var encodings = []tokens.Encoding{tokens.O200k, tokens.CL100k}

// CountsAsChat checks that every message of corpus the codec counts is
// counted exactly as its chat rendition counts, in both encodings, so
// the budget decides as before, and that plan.Count gives the codec's
// count; and that the codec counts each message of own itself.
func CountsAsChat(t testing.TB, codec Tokenizer, p wire.Protocol, corpus, own []string) {
	t.Helper()
	var c tokens.Counter
	for _, enc := range encodings {
		for _, raw := range corpus {
			got, ok := codec.Tokens(&c, enc, []byte(raw))
			if !ok {
				continue
			}
			if want := CountThroughChat(&c, enc, p, []byte(raw)); got != want {
				t.Errorf("%s: Tokens(%s) = %d, want %d", enc, raw, got, want)
			}
			if n := plan.Count(&c, enc, p, []byte(raw)); n != got {
				t.Errorf("%s: plan.Count(%s) = %d, want Tokens' %d", enc, raw, n, got)
			}
		}
	}
	for _, raw := range own {
		if _, ok := codec.Tokens(&c, tokens.O200k, []byte(raw)); !ok {
			t.Errorf("Tokens(%s) left the message to the chat rendition, want it counted", raw)
		}
	}
}

// FuzzCountsAsChat checks the same of any bytes, seeded with corpus:
// whatever the codec counts, it counts as the chat rendition does, and
// it leaves invalid UTF-8 alone.
func FuzzCountsAsChat(f *testing.F, codec Tokenizer, p wire.Protocol, corpus []string) {
	for _, raw := range corpus {
		f.Add([]byte(raw))
	}
	var c tokens.Counter
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, enc := range encodings {
			got, ok := codec.Tokens(&c, enc, raw)
			if !ok {
				continue
			}
			if !utf8.Valid(raw) {
				t.Fatalf("Tokens(%q) counted invalid UTF-8", raw)
			}
			if want := CountThroughChat(&c, enc, p, raw); got != want {
				t.Fatalf("%s: Tokens(%q) = %d, want %d", enc, raw, got, want)
			}
		}
	})
}

// CountsWithoutAllocating checks that plan.Count counts each of raws,
// messages of protocol p, from its own bytes, not through a chat
// rendition it writes: it allocates nothing. It is skipped under the
// race detector, whose instrumentation allocates.
func CountsWithoutAllocating(t *testing.T, p wire.Protocol, raws []string) {
	t.Helper()
	if RaceEnabled {
		t.Skip("allocation counts mean nothing under the race detector")
	}
	var c tokens.Counter
	for _, s := range raws {
		raw := []byte(s)
		plan.Count(&c, tokens.O200k, p, raw) // the counter's tables, once
		if n := testing.AllocsPerRun(10, func() { plan.Count(&c, tokens.O200k, p, raw) }); n != 0 {
			t.Errorf("plan.Count(%s) allocates %.0f times, want 0: it wrote the chat rendition", raw, n)
		}
	}
}
