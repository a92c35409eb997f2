package jsonscan

import (
	"strings"
	"testing"
)

// walked is Value as it was before skip: a walk, a call and a closure a
// level (Object, Array and walked again), the reference skip is held
// to. A scalar is Value's, which skip does not read.
func walked(s *Scanner, depth int) (int, bool) {
	s.Space()
	if s.I >= len(s.B) || s.B[s.I] != '{' && s.B[s.I] != '[' {
		return s.Value(depth)
	}
	if depth <= 0 {
		return 0, false
	}
	next := func() bool {
		_, ok := walked(s, depth-1)
		return ok
	}
	if s.B[s.I] == '{' {
		return KindObject, s.object(true, func([]byte) bool { return next() })
	}
	_, ok := s.Array(func(int) bool { return next() })
	return KindArray, ok
}

// skipCases are documents whose nesting, names, escapes and endings a
// skip of their first value must read as a walk does.
var skipCases = []string{
	`{}`, `[]`, `{ }`, `[ ]`, `{"a":1}`, `[1,2,3]`, `{"a":[1,{"b":null}],"c":"\u00e9"}`,
	`[1,"x",true,false,null,-0.5e+3]`, `{"\u0061":1}`, `{"a":1,"a":2}`, `[[[[[[[[[[]]]]]]]]]]`,
	`[[[[[[[[[[1]]]]]]]]]]`, `{"a":{"b":{"c":{"d":{}}}}}`, ` { "a" : [ ] , "b" : { } } `,
	`{"a":[{},[],{"b":[]}],"c":{}} tail`, `[{"a":1},{"b":2}],`, `{"a":1}}`, `[1]]`,
	`{"a":1,}`, `[1,]`, `{,}`, `[,]`, `{"a"}`, `{"a":}`, `{"a" 1}`, `{1:1}`, `{"a":1]`, `[1}`,
	`[1 2]`, `{"a":1 "b":2}`, `{"a":tru}`, `[nul]`, `[-]`, `[01]`, `[1.]`, `["\x"]`, "[\"\x01\"]",
	"[\"\xff\"]", `{"a":"b`, `[`, `{`, `{"a":[`, `[{"a":[{"b":[1,2,{"c":"d"}]}]}]`,
	`{"k\"ey":"v","n":-12.5E-3,"t":true,"f":false,"z":null,"s":"\ud83d\ude00"}`,
}

func TestSkipReadsAsAWalk(t *testing.T) {
	for _, doc := range skipCases {
		for depth := 0; depth <= 12; depth++ {
			checkSkip(t, []byte(doc), depth)
		}
	}
	deep := strings.Repeat("[", 300) + strings.Repeat("]", 300)
	for _, depth := range []int{255, 256, 257, 299, 300, 301} {
		checkSkip(t, []byte(deep), depth) // past maxSkipDepth, nest takes over
	}
}

// checkSkip checks that Value reads doc's first value as walked does:
// the same kind, verdict and end.
func checkSkip(t *testing.T, doc []byte, depth int) {
	t.Helper()
	got, want := Scanner{B: doc}, Scanner{B: doc}
	gk, gok := got.Value(depth)
	wk, wok := walked(&want, depth)
	if gok != wok || gok && (gk != wk || got.I != want.I) {
		t.Fatalf("%.60q at depth %d: Value got kind %d, ok %v, end %d; a walk got kind %d, ok %v, end %d", doc, depth, gk, gok, got.I, wk, wok, want.I)
	}
}

// FuzzSkip holds skip to a walk on any document and depth.
func FuzzSkip(f *testing.F) {
	for _, doc := range skipCases {
		f.Add([]byte(doc), uint8(8))
	}
	f.Fuzz(func(t *testing.T, doc []byte, depth uint8) {
		checkSkip(t, doc, int(depth%16))
	})
}

// skipDoc is a Responses answer: output items and settings, nested
// objects and arrays, most of what a one-pass check of an answer or an
// event skips.
var skipDoc = []byte(`{"id":"resp_fast","object":"response","created_at":1700000000,"status":"completed","background":false,"completed_at":1700000001,` +
	`"error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"max_tool_calls":null,"model":"gpt-4o-mini",` +
	`"output":[{"id":"msg_fast","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"Hello there."}],"role":"assistant"}],` +
	`"parallel_tool_calls":true,"presence_penalty":0.0,"frequency_penalty":0.0,"previous_response_id":null,` +
	`"prompt_cache_key":null,"reasoning":{"effort":null,"summary":null},"safety_identifier":null,"service_tier":"default","store":false,` +
	`"temperature":1.0,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_logprobs":0,"top_p":1.0,"truncation":"disabled",` +
	`"usage":{"input_tokens":12,"input_tokens_details":{"cached_tokens":0},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":15},"user":null,"metadata":{}}`)

// BenchmarkSkip skips skipDoc whole; BenchmarkSkipWalked does as Value
// did before skip, a walk a level.
func BenchmarkSkip(b *testing.B) {
	b.SetBytes(int64(len(skipDoc)))
	for b.Loop() {
		s := Scanner{B: skipDoc}
		if _, ok := s.Value(32); !ok {
			b.Fatal("not skipped")
		}
	}
}

func BenchmarkSkipWalked(b *testing.B) {
	b.SetBytes(int64(len(skipDoc)))
	for b.Loop() {
		s := Scanner{B: skipDoc}
		if _, ok := walked(&s, 32); !ok {
			b.Fatal("not skipped")
		}
	}
}
