package gemini

import (
	"testing"

	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/protocol/internal/prototest"
)

// TestHashSame checks the contents a client would call the same hash the
// same, and those it would not do not.
func TestHashSame(t *testing.T) {
	same := [][2]string{
		{`{"role":"user","parts":[{"text":"hi"}]}`, `{ "parts" : [ {"text":"hi"} ] , "role":"user" }`},
		{`{"role":"user","parts":[{"text":"hi"}]}`, `{"parts":[{"text":"h\u0069"}]}`},
		{`{"role":"model","parts":[{"text":"a","thought":true,"thoughtSignature":"s"}]}`, `{"role":"model","parts":[{"thought_signature":"s","thought":true,"text":"a"}]}`},
		{`{"role":"model","parts":[{"functionCall":{"name":"f","args":{"a":1,"b":[2]}},"thoughtSignature":"s"}]}`,
			`{"role":"model","parts":[{"thoughtSignature":"s","function_call":{"args":{"b":[2],"a":1.0},"name":"f"}}]}`},
		{`{"role":"model","parts":[{"text":"x","thought":false}]}`, `{"role":"model","parts":[{"text":"x"}]}`},
	}
	for _, p := range same {
		if a, b := (Codec{}).Hash([]byte(p[0])), (Codec{}).Hash([]byte(p[1])); a != b {
			t.Errorf("Hash(%s) = %#x, Hash(%s) = %#x: want equal", p[0], a, p[1], b)
		}
	}
	differ := [][2]string{
		{`{"role":"user","parts":[{"text":"hi"}]}`, `{"role":"model","parts":[{"text":"hi"}]}`},
		{`{"role":"model","parts":[{"text":"a","thought":true,"thoughtSignature":"s"}]}`, `{"role":"model","parts":[{"text":"a","thought":true,"thoughtSignature":"t"}]}`},
		{`{"role":"model","parts":[{"functionCall":{"name":"f","args":{"a":1}}}]}`, `{"role":"model","parts":[{"functionCall":{"name":"f","args":{"a":2}}}]}`},
		{`{"role":"model","parts":[{"text":"a"},{"text":"b"}]}`, `{"role":"model","parts":[{"text":"b"},{"text":"a"}]}`},
	}
	for _, p := range differ {
		if a, b := (Codec{}).Hash([]byte(p[0])), (Codec{}).Hash([]byte(p[1])); a == b {
			t.Errorf("Hash(%s) = Hash(%s): want different", p[0], p[1])
		}
	}
}

// stableContents are contents whose hashes are pinned: stored messages
// keep the hash they were written with, so neither Gemini's canonical
// form nor the chat rendering a plain content hashes as may change.
var stableContents = []prototest.HashCase{
	{Name: "a plain user text", Raw: `{"role":"user","parts":[{"text":"What is the weather in Paris?"}]}`, Want: 0x98ce2e92d206e5e5},
	{Name: "a thought and a signed function call", Raw: `{"role":"model","parts":[{"text":"Let me think.","thought":true},{"functionCall":{"name":"weather","args":{"city":"Paris"}},"thoughtSignature":"c2lnbmF0dXJl"}]}`, Want: 0x8658906934c34900},
	{Name: "a function response", Raw: `{"role":"user","parts":[{"functionResponse":{"name":"weather","response":{"output":"sunny"}}}]}`, Want: 0xee33125db8fc6fe7},
	{Name: "inline data and a text", Raw: `{"role":"user","parts":[{"inlineData":{"mimeType":"application/pdf","data":"JVBERi0="}},{"text":"summarise"}]}`, Want: 0x3084448e5c595578},
	{Name: "not a content", Raw: `["not", "a", "content"]`, Want: 0xfdf5b590050b0175},
}

func TestHashStable(t *testing.T) {
	chatForm := []byte(`{"role":"user","content":"What is the weather in Paris?"}`)
	if got, want := (Codec{}).Hash([]byte(stableContents[0].Raw)), chat.Hash(chatForm); got != want {
		t.Errorf("a plain content: got %#x, want %#x, the hash of the chat message %s", got, want, chatForm)
	}
	prototest.HashesPinned(t, Codec{}.Hash, stableContents)
}

// TestHashOfOneText: a content of one text hashes, without being
// written as chat, as its decoding does through the chat rendition, so
// the hashes stored before stay valid.
func TestHashOfOneText(t *testing.T) {
	for _, raw := range countCorpus {
		if got, want := (Codec{}).Hash([]byte(raw)), (Codec{}).hashTree([]byte(raw)); got != want {
			t.Errorf("Hash(%s) = %#x, through the decoding %#x", raw, got, want)
		}
	}
	if raceEnabled {
		return // allocation counts mean nothing under the race detector
	}
	raw := []byte(countCorpus[0])
	if n := testing.AllocsPerRun(10, func() { (Codec{}).Hash(raw) }); n != 0 {
		t.Errorf("Hash(%s) allocates %.0f times, want 0: it wrote the chat rendition", raw, n)
	}
}

// FuzzHashOfOneText checks the same of any bytes.
func FuzzHashOfOneText(f *testing.F) {
	for _, raw := range countCorpus {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if got, want := (Codec{}).Hash(raw), (Codec{}).hashTree(raw); got != want {
			t.Fatalf("Hash(%q) = %#x, through the decoding %#x", raw, got, want)
		}
	})
}
