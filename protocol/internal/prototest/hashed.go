package prototest

import (
	"bytes"
	"testing"

	"github.com/recallproxy/recall/wire"
)

// Hashed checks that a, an answer an upstream's parse or assembler made
// (c its protocol's codec), carries the hash of each of its stored messages (wire.Answer.Hashed),
// each equal to the codec's Hash of the message's bytes, and that
// HashOf takes a carried hash for those very bytes only: a copy changed
// in one byte, or the same bytes cut short, is hashed anew.
func Hashed(t testing.TB, c wire.Codec, a wire.Answer) {
	t.Helper()
	if len(a.Hashed) != len(a.Stored) {
		t.Fatalf("%d hashes carried for %d stored messages", len(a.Hashed), len(a.Stored))
	}
	for i, raw := range a.Stored {
		if h := a.Hashed[i]; len(h.Raw) != len(raw) || &h.Raw[0] != &raw[0] {
			t.Errorf("Hashed[%d] names other bytes than Stored[%d]", i, i)
		}
		if got, want := a.HashOf(c, raw), c.Hash(raw); got != want {
			t.Errorf("HashOf(Stored[%d]) = %x, Hash = %x", i, got, want)
		}
		changed := bytes.Clone(raw)
		changed[len(changed)/2] ^= 1
		if got, want := a.HashOf(c, changed), c.Hash(changed); got != want {
			t.Errorf("HashOf(a changed copy of Stored[%d]) = %x, Hash = %x", i, got, want)
		}
		if got, want := a.HashOf(c, raw[:len(raw)-1]), c.Hash(raw[:len(raw)-1]); got != want {
			t.Errorf("HashOf(Stored[%d] cut short) = %x, Hash = %x", i, got, want)
		}
	}
}
