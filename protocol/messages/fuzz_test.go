package messages

import (
	"os"
	"testing"

	"github.com/recallproxy/recall/wire"
)

// FuzzParseRequest feeds request bodies to the parser and, for the ones
// it takes, every stored-message operation and the upstream body: none
// may panic, and every accepted message must decode.
func FuzzParseRequest(f *testing.F) {
	fixture, _ := os.ReadFile("testdata/request_agent.json")
	f.Add(fixture)
	f.Add([]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"model":"m","max_tokens":5,"system":"s","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"x"}]}]}]}`))
	f.Add([]byte(`{"model":"m","max_tokens":1e3,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":{"q":[1,{"x":null}]}}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := Ingress{}.ParseRequest(body)
		if err != nil {
			return
		}
		c := Codec{}
		for _, m := range req.Messages {
			c.Hash(m)
			c.WithoutCacheHints(m)
			c.KeepCalls(m, func(string) bool { return false })
			c.CutResults(m, 1, func(int, int) string { return "!" })
			if _, err := c.Decode(m); err != nil {
				t.Fatalf("decode of an accepted message %s: %v", m, err)
			}
		}
		out, err := Upstream{}.AppendBody(nil, req, req.Instructions, req.Messages)
		if err != nil {
			t.Fatal(err)
		}
		for last := range len(req.Messages) {
			checkMessageAt(t, out, last)
			checkMessageAt(t, body, last)
			checkMarkedBody(t, req, last)
		}
		MarkHistoryEnd(out, len(req.Messages)-1)
		req.Protocol = wire.ChatCompletions
		if _, err := (Upstream{}).AppendBody(nil, req, req.Instructions, req.Messages); err != nil {
			t.Fatal(err)
		}
	})
}
