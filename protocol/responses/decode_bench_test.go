package responses

import (
	"strings"
	"testing"
)

// BenchmarkDecodeText is what translating a stored message item to
// another protocol costs before it is encoded.
func BenchmarkDecodeText(b *testing.B) {
	raw := []byte(`{"role":"user","content":"` + strings.Repeat(`The trend holds, and the figures say so. `, 14) + `"}`)
	b.ReportAllocs()
	for b.Loop() {
		if m, err := (Codec{}).Decode(raw); err != nil || len(m.Parts) != 1 {
			b.Fatal(m, err)
		}
	}
}
