package messages

import (
	"fmt"
	"strings"
	"testing"

	"github.com/recallproxy/recall/wire"
)

// agentBody is a request of n messages: questions, tool_use blocks,
// their tool_result blocks and answers in turn.
func agentBody(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"m","max_tokens":5,"messages":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, `{"role":"user","content":"question %d"}`, i)
		case 1:
			fmt.Fprintf(&b, `{"role":"assistant","content":[{"type":"tool_use","id":"t%d","name":"f","input":{}}]}`, i)
		case 2:
			fmt.Fprintf(&b, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":"r"}]}`, i-1)
		default:
			fmt.Fprintf(&b, `{"role":"assistant","content":"answer %d"}`, i)
		}
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// TestParseRequestAllocationsDoNotGrowWithMessages: checking a request
// names no parameter unless it fails, so a request of 40 messages with
// tool_use and tool_result blocks costs about the allocations of one of
// 4 (the messages' slice grows a few times more), in the one pass and in
// parseRequest.
func TestParseRequestAllocationsDoNotGrowWithMessages(t *testing.T) {
	for name, parse := range map[string]func([]byte) (*wire.Request, error){"ParseRequest": Ingress{}.ParseRequest, "parseRequest": parseRequest} {
		allocs := func(n int) float64 {
			b := agentBody(n)
			return testing.AllocsPerRun(50, func() {
				if _, err := parse(b); err != nil {
					t.Fatal(err)
				}
			})
		}
		few, many := allocs(4), allocs(40)
		if many-few > 5 {
			t.Errorf("%s: got %.0f allocations for 4 messages and %.0f for 40: more than the messages' slice growing", name, few, many)
		}
	}
}

// BenchmarkParseRequest reads a request of 40 messages (3.3 KB) in the
// one pass, and with parseRequest.
func BenchmarkParseRequest(b *testing.B) {
	body := agentBody(40)
	for name, parse := range map[string]func([]byte) (*wire.Request, error){"one-pass": Ingress{}.ParseRequest, "gjson": parseRequest} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := parse(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
