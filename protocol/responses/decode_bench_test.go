package responses

import (
	"strings"
	"testing"

	"github.com/recallproxy/recall/protocol/internal/prototest"
)

// BenchmarkDecodeText is what translating a stored message item to
// another protocol costs before it is encoded.
func BenchmarkDecodeText(b *testing.B) {
	raw := []byte(`{"role":"user","content":"` + strings.Repeat(`The trend holds, and the figures say so. `, 14) + `"}`)
	prototest.BenchDecode(b, Codec{}, raw, 1)
}
