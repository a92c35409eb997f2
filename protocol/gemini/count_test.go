package gemini

import (
	"testing"

	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/protocol/internal/counttest"
	"github.com/recallproxy/recall/tokens"
	"github.com/recallproxy/recall/wire"
)

// TestTokensCountsAsChat: a content Tokens counts counts exactly as its
// chat rendition does, in both encodings, so the budget decides as
// before; every content of text, calls, results and thoughts is counted
// from its own bytes.
func TestTokensCountsAsChat(t *testing.T) {
	counttest.CountsAsChat(t, Codec{}, wire.Gemini, countCorpus, countCorpus[:countedShapes])
}

// FuzzTokens checks the same of any bytes: whatever Tokens counts, it
// counts as the chat rendition does, and it leaves invalid UTF-8 alone.
func FuzzTokens(f *testing.F) {
	counttest.FuzzCountsAsChat(f, Codec{}, wire.Gemini, countCorpus)
}

// TestCountReadsTheContent: plan.Count counts a content of text parts
// with Tokens, from the content's bytes, not through a chat rendition it
// writes.
func TestCountReadsTheContent(t *testing.T) {
	counttest.CountsWithoutAllocating(t, wire.Gemini, []string{countCorpus[0], countCorpus[2]})
}

// BenchmarkTokens counts each content of the corpus that Tokens reads in
// turn, from its own bytes (own) and through its chat-completions
// rendition (chat).
func BenchmarkTokens(b *testing.B) {
	var raws [][]byte
	for _, raw := range countCorpus[:countedShapes] {
		raws = append(raws, []byte(raw))
	}
	var c tokens.Counter
	for _, tt := range []struct {
		name  string
		count func(*tokens.Counter, tokens.Encoding, []byte) int
	}{
		{"own", func(c *tokens.Counter, enc tokens.Encoding, raw []byte) int {
			return plan.Count(c, enc, wire.Gemini, raw)
		}},
		{"chat", func(c *tokens.Counter, enc tokens.Encoding, raw []byte) int {
			return counttest.CountThroughChat(c, enc, wire.Gemini, raw)
		}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				tt.count(&c, tokens.O200k, raws[i%len(raws)])
			}
		})
	}
}

// countedShapes is how many contents at the head of countCorpus Tokens
// counts itself.
const countedShapes = 24

// countCorpus holds contents of every shape Tokens reads, then of the
// shapes it leaves to the chat rendition.
var countCorpus = []string{
	`{"role":"user","parts":[{"text":"Hello, how are you today?"}]}`,
	`{"parts":[{"text":"no role is the user's"}]}`,
	`{"role":"model","parts":[{"text":"one"},{"text":" two"},{"text":""}]}`,
	`{"role":"system","parts":[{"text":"You are terse."},{"text":"Answer in French."}]}`,
	`{"role":"user","parts":[]}`,
	`{"role":"user","parts":[{"text":""}]}`,
	`{"role":"user","parts":[{"text":"caf\u00e9 \"quoted\" \\ tab\t \ud83d\ude00 \ud800 <b>&amp;</b>"}]}`,
	`{"role":"user","parts":[{"text":"日本語のテキストです。\n\n  spaces   and\r\nlines"}]}`,
	` { "role" : "model" , "parts" : [ { "text" : "spaced" } ] } `,
	`{"role":"model","parts":[{"text":"Let me check."},{"functionCall":{"name":"get_weather","args":{"city":"Paris","units":"c"}}}]}`,
	`{"role":"model","parts":[{"functionCall":{"name":"a","args":{}}},{"functionCall":{"name":"a","args": { "q" : "x <y> & z" } ,"id":"call_7"}}]}`,
	`{"role":"model","parts":[{"functionCall":{"name":"no_args"}}]}`,
	`{"role":"model","parts":[{"functionCall":{"name":"null_args","args":null}}]}`,
	`{"role":"model","parts":[{"functionCall":{"name":"f","args":{"q":1}},"thoughtSignature":"c2lnbmF0dXJl"}]}`,
	`{"role":"model","parts":[{"text":"I weighed it.","thought":true},{"text":"Done.","thoughtSignature":"c2ln"}]}`,
	`{"role":"model","parts":[{"text":"only a thought","thought":true}]}`,
	`{"role":"model","parts":[{"text":"","thoughtSignature":"c2ln"}]}`,
	`{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"output":"18 degrees, cloudy"}}}]}`,
	`{"role":"user","parts":[{"functionResponse":{"name":"a","response":{"result":{"deep":[1,2]}},"id":"call_7"}},{"functionResponse":{"name":"a","response":{"error":"failed"}}}]}`,
	`{"role":"user","parts":[{"functionResponse":{"name":"f"}}]}`,
	`{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"output":"ok"}}},{"text":"and now this"}]}`,
	`{"role":"user","parts":[{"functionCall":{"name":"misplaced","args":{}}}]}`,
	`{"role":"model","parts":[{"executableCode":{"language":"PYTHON","code":"print(1)"}},{"codeExecutionResult":{"outcome":"OUTCOME_OK","output":"1"}}]}`,
	`{"role":"user","parts":[{"inlineData":{"mimeType":"audio/wav","data":"UklGRg=="}},{"text":"transcribe"}]}`,
	// Left to the chat rendition.
	`{"role":"user","parts":[{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}},{"text":"what is this?"}]}`,
	`{"role":"user","parts":[{"fileData":{"mimeType":"image/jpeg","fileUri":"https://example.com/cat.jpg"}}]}`,
	`{"role":"user","parts":[{"inlineData":{"mimeType":"application/pdf","data":"JVBERi0xLjQK"}}]}`,
	`{"role":"user","parts":[{"fileData":{"mimeType":"application/pdf","fileUri":"gs://b/a.pdf"}}]}`,
	`{"role":"robot","parts":[{"text":"hi"}]}`,
	`{"role":7,"parts":[{"text":"hi"}]}`,
	`{"role":"user"}`,
	`{"role":"user","parts":{"text":"an object"}}`,
	`{"role":"user","parts":[{"text":7}]}`,
	`[1,2]`,
	`"text"`,
	``,
	`{"role":"user","parts":[{"text":"unterminated"`,
	"{\"role\":\"user\",\"parts\":[{\"text\":\"bad \xff\xfe utf-8\"}]}",
}

// TestTextsOnlyIsValid: a content the request's one-pass check takes is
// one the full check takes, and the common contents take the one pass.
func TestTextsOnlyIsValid(t *testing.T) {
	for _, raw := range append(countCorpus, `{"role":"system","parts":[{"text":"x"}]}`, `{"role":"user","parts":[{"text":"x"}],"role":"robot"}`) {
		if textsOnly([]byte(raw)) {
			if err := checkTree(0, parse([]byte(raw))); err != nil {
				t.Errorf("textsOnly(%s) = true, the full check says %v", raw, err)
			}
		}
	}
	for _, i := range []int{0, 1, 2, 5, 6, 7, 8} { // text contents of the client's roles
		raw := countCorpus[i]
		if !textsOnly([]byte(raw)) {
			t.Errorf("textsOnly(%s) = false, want the one pass", raw)
		}
	}
}

// FuzzTextsOnly checks the same of any bytes.
func FuzzTextsOnly(f *testing.F) {
	for _, raw := range countCorpus {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if textsOnly(raw) {
			if err := checkTree(0, parse(raw)); err != nil {
				t.Fatalf("textsOnly(%q) = true, the full check says %v", raw, err)
			}
		}
	})
}
