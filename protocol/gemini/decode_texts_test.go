package gemini

import (
	"reflect"
	"strings"
	"testing"

	"github.com/recallproxy/recall/protocol/internal/prototest"
)

// decodeTextsCases are contents decodeTexts must read as decodeTree does
// (fast true) or leave to it (fast false).
var decodeTextsCases = []struct {
	raw  string
	fast bool
}{
	{`{"role":"model","parts":[{"text":"hello"}]}`, true},
	{`{"parts":[{"text":"a"},{"text":""},{"text":"b"}],"role":"user"}`, true},
	{` { "role" : "system" , "parts" : [ { "text" : "x" } ] } `, true},
	{`{"parts":[{"text":"no role"}]}`, true},
	{`{"role":"","parts":[{"text":"empty role"}]}`, true},
	{`{"role":"model","parts":[]}`, true},
	{`{"role":"user","parts":[{"text":"esc \"q\" \u00e9 \n"}]}`, true},
	// left to the tree
	{`{"role":"model","parts":[{}]}`, false},
	{`{"role":"model","parts":[{"text":"a","text":"b"}]}`, false},
	{`{"role":"model","parts":[{"text":"t","thought":true}]}`, false},
	{`{"role":"model","parts":[{"thoughtSignature":"c2ln","text":"t"}]}`, false},
	{`{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]}`, false},
	{`{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]}`, false},
	{`{"role":"tool","parts":[{"text":"x"}]}`, false},
	{`{"role":"mod\u0065l","parts":[{"text":"x"}]}`, false},
	{`{"role":"model","role":"user","parts":[{"text":"x"}]}`, false},
	{`{"role":"model"}`, false},
	{`{"role":"model","parts":[{"text":5}]}`, false},
	{`{"role":"model","parts":[{"text":"x"}],"extra":1}`, false},
	{`{"role":"model","parts":[{"text":"x"}]}x`, false},
	{`{"role":"model","parts":[{"text":"x"}]`, false},
	{"{\"role\":\"model\",\"parts\":[{\"text\":\"\xff\"}]}", false},
}

// TestDecodeTextsAsTree: the one-pass reading of text-only contents
// gives what the tree's does, and leaves every other shape to it.
func TestDecodeTextsAsTree(t *testing.T) {
	for _, tc := range decodeTextsCases {
		got, ok := decodeTexts([]byte(tc.raw))
		if ok != tc.fast {
			t.Errorf("%s: fast path %v, want %v", tc.raw, ok, tc.fast)
			continue
		}
		if !ok {
			continue
		}
		want, err := Codec{}.decodeTree([]byte(tc.raw))
		if err != nil {
			t.Errorf("%s: the tree refuses what the fast path read: %v", tc.raw, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n fast %+v\n tree %+v", tc.raw, got, want)
		}
	}
}

// FuzzDecodeTexts: whatever the fast path reads, the tree reads the same.
func FuzzDecodeTexts(f *testing.F) {
	for _, tc := range decodeTextsCases {
		f.Add([]byte(tc.raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := decodeTexts(raw)
		if !ok {
			return
		}
		want, err := Codec{}.decodeTree(raw)
		if err != nil {
			t.Fatalf("%q: the tree refuses what the fast path read: %v", raw, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n fast %+v\n tree %+v", raw, got, want)
		}
	})
}

// answerText is a 120-word answer, the size of the load script's.
var answerText = strings.TrimSpace(strings.Repeat("The trend holds, and the figures say so. ", 17))

// BenchmarkDecodeText is what decoding a stored model content of one
// text part costs: its hash, its search text, its count and its
// translation to another protocol each decode it.
func BenchmarkDecodeText(b *testing.B) {
	prototest.BenchDecode(b, Codec{}, []byte(`{"role":"model","parts":[{"text":"`+answerText+`"}]}`), 1)
}

// BenchmarkDecodeTextTree is the same through the tree (before the
// one-pass reading).
func BenchmarkDecodeTextTree(b *testing.B) {
	raw := []byte(`{"role":"model","parts":[{"text":"` + answerText + `"}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (Codec{}).decodeTree(raw); err != nil {
			b.Fatal(err)
		}
	}
}
