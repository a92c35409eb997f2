package messages

import (
	"fmt"
	"strings"
	"testing"
)

// TestParseRequestAllocationsDoNotGrowWithMessages: checking a request
// names no parameter unless it fails, so a request of 40 messages with
// tool_use and tool_result blocks costs about the allocations of one of
// 4 (the messages' slice grows a few times more).
func TestParseRequestAllocationsDoNotGrowWithMessages(t *testing.T) {
	body := func(n int) []byte {
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
	allocs := func(n int) float64 {
		b := body(n)
		return testing.AllocsPerRun(50, func() {
			if _, err := (Ingress{}).ParseRequest(b); err != nil {
				t.Fatal(err)
			}
		})
	}
	few, many := allocs(4), allocs(40)
	if many-few > 5 {
		t.Errorf("got %.0f allocations for 4 messages and %.0f for 40: more than the messages' slice growing", few, many)
	}
}
