package gemini

import (
	"strings"
	"testing"

	"github.com/recallproxy/recall/wire"
)

// BenchmarkAppendBodyHistory writes the body of a request of 50 turns of
// prose without calls (100 contents, about 40 KB), the model's contents
// with their role last, as Google writes them: every content is looked
// at for a system role and a call to sign.
func BenchmarkAppendBodyHistory(b *testing.B) {
	const user = `{"role":"user","parts":[{"text":"Could you look at the figures from last week again and tell me whether the trend holds? I would also like a short note on what changed since the previous report, and whether we should adjust the forecast for the next quarter."}]}`
	model := `{"parts":[{"text":"` + strings.Repeat("The trend holds. ", 12) + `"}],"role":"model"}`
	msgs := make([][]byte, 100)
	for i := range msgs {
		msgs[i] = []byte(user)
		if i&1 == 1 {
			msgs[i] = []byte(model)
		}
	}
	req := &wire.Request{Protocol: wire.ChatCompletions, Model: "gemini-2.5-flash"}
	var dst []byte
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = (Upstream{}).AppendBody(dst[:0], req, nil, msgs); err != nil {
			b.Fatal(err)
		}
	}
}
