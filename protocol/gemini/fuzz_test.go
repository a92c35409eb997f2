package gemini

import (
	"testing"

	"github.com/recallproxy/recall/wire"
)

// FuzzParseRequest feeds request bodies to the parser and, for the ones
// it takes, every stored-message operation and the upstream body: none
// may panic, and every accepted content must decode and encode.
func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`))
	f.Add([]byte(`{"system_instruction":{"parts":[{"text":"s"}]},"contents":[{"parts":[{"function_response":{"name":"f","response":{"output":"x"}}}]}]}`))
	f.Add([]byte(`{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":{"q":[1,{"x":null}]}},"thoughtSignature":"c2ln"},{"text":"t","thought":true}]}],` +
		`"tools":[{"functionDeclarations":[{"name":"f","parameters":{"type":"object"}}]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY"}},` +
		`"generationConfig":{"maxOutputTokens":5,"temperature":0.5,"stopSequences":["x"]}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := Ingress{}.ParseRequestAt([]byte("/v1beta/models/m:generateContent"), body)
		if err != nil {
			return
		}
		c := Codec{}
		var canon []wire.Message
		for _, m := range req.Messages {
			c.Hash(m)
			c.Calls(nil, m)
			c.Results(nil, m)
			c.KeepCalls(m, func(string) bool { return false })
			c.CutResults(m, 1, func(int, int) string { return "!" })
			d, err := c.Decode(m)
			if err != nil {
				t.Fatalf("decode of an accepted content %s: %v", m, err)
			}
			canon = append(canon, d)
		}
		if _, err := c.Encode(nil, canon); err != nil {
			t.Fatalf("encode: %v", err)
		}
		out, err := Upstream{}.AppendBody(nil, req, req.Instructions, req.Messages)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := (Upstream{}).WithTools(out, []wire.Tool{{Name: "recall_search", Parameters: []byte(`{"type":"object"}`)}}, false); err != nil {
			t.Fatalf("with tools: %v", err)
		}
		req.Protocol = wire.ChatCompletions
		if _, err := (Upstream{}).AppendBody(nil, req, req.Instructions, req.Messages); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzAssembler feeds stream events to the assembler: it never panics,
// and an answer it finishes decodes.
func FuzzAssembler(f *testing.F) {
	f.Add([]byte(`{"candidates":[{"content":{"parts":[{"text":"a"}],"role":"model"}}]}`), []byte(`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{}},"thoughtSignature":"s"}],"role":"model"},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3}}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		asm := Upstream{}.NewAssembler()
		for _, ev := range [][]byte{a, b} {
			if _, done, err := asm.Event(nil, nil, ev); err != nil || done {
				break
			}
		}
		if ans, err := asm.Answer(); err == nil {
			if _, err := (Codec{}).Decode(ans.Stored[0]); err != nil {
				t.Fatalf("assembled %s does not decode: %v", ans.Stored[0], err)
			}
		}
	})
}
