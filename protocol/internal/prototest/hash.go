package prototest

import (
	"testing"

	"github.com/recallproxy/recall/wire"
)

// HashPinned checks that hash gives raw the hash want: a stored message
// keeps the hash it was written with, so a canonical form must never
// change.
func HashPinned(t testing.TB, hash func([]byte) uint64, raw string, want uint64) {
	t.Helper()
	if got := hash([]byte(raw)); got != want {
		t.Errorf("Hash(%s): got %#x, want %#x", raw, got, want)
	}
}

// HashCase is a stored message (Raw) and the hash it is pinned to (Want).
type HashCase struct {
	Name string
	Raw  string
	Want uint64
}

// HashesPinned runs HashPinned on each case, a subtest each.
func HashesPinned(t *testing.T, hash func([]byte) uint64, cases []HashCase) {
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) { HashPinned(t, hash, tc.Raw, tc.Want) })
	}
}

// Sample is a stored message a benchmark runs on, and its name.
type Sample struct {
	Name string
	Raw  string
}

// BenchHash runs hash on each sample, a sub-benchmark each named after
// it, reporting its bytes and allocations.
func BenchHash(b *testing.B, hash func([]byte) uint64, samples []Sample) {
	for _, s := range samples {
		raw := []byte(s.Raw)
		b.Run(s.Name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				hash(raw)
			}
		})
	}
}

// BenchDecode runs c's Decode on raw, which must decode into a message of
// parts parts, reporting allocations.
func BenchDecode(b *testing.B, c wire.Codec, raw []byte, parts int) {
	b.ReportAllocs()
	for b.Loop() {
		if m, err := c.Decode(raw); err != nil || len(m.Parts) != parts {
			b.Fatal(m, err)
		}
	}
}
