package chat

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// nested returns a chat body whose "x" holds an array nested n levels
// deep, so that the body as a whole is n+1 levels deep. When closed is
// false the brackets are never closed, as in the attack.
func nested(n int, closed bool) []byte {
	b := []byte(`{"model":"x","messages":[{"role":"user","content":"hi"}],"x":`)
	b = append(b, bytes.Repeat([]byte("["), n)...)
	if closed {
		b = append(b, bytes.Repeat([]byte("]"), n)...)
		b = append(b, '}')
	}
	return b
}

func TestCheckDepth(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"empty", ``, nil},
		{"scalar", `"x"`, nil},
		{"flat object", `{"a":1,"b":[1,2,{"c":null}]}`, nil},
		{"exactly the bound", strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth), nil},
		{"one past the bound", strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), ErrTooDeep},
		{"one past the bound, unclosed", strings.Repeat("{\"a\":", MaxDepth+1), ErrTooDeep},
		{"depth counts what is open, not what was opened", strings.Repeat("[]", 10*MaxDepth), nil},
		{"brackets in a string", `{"content":"` + strings.Repeat("[{", 2*MaxDepth) + `"}`, nil},
		{"escaped quote does not end the string", `{"content":"say \"` + strings.Repeat("[", 2*MaxDepth) + `\" ok"}`, nil},
		{"escaped backslash ends the string", `["\\"` + strings.Repeat(",[", MaxDepth) + strings.Repeat("]", MaxDepth) + `]`, ErrTooDeep},
		{"three backslashes and a quote stay in the string", `["\\\"` + strings.Repeat("[", 2*MaxDepth) + `"]`, nil},
		{"brackets in a key", `{"` + strings.Repeat("[", 2*MaxDepth) + `":1}`, nil},
		{"unclosed string swallows the rest", `["` + strings.Repeat("[", 2*MaxDepth), nil},
		{"invalid UTF-8 in a string", "[\"\xff\xfe[[[\"]", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CheckDepth([]byte(tt.in)); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestCheckDepthEscapesAtEveryOffset puts escapes at every offset around
// where CheckDepth switches from a byte loop to bytes.IndexByte inside a
// string, and compares with the obvious reading (refDepth). Past the
// string come MaxDepth brackets, which count only if the string closed
// where it should.
func TestCheckDepthEscapesAtEveryOffset(t *testing.T) {
	for _, esc := range []string{`\"`, `\\`, `\\\"`, `\\\\`, `\\"`, `\u0022`, `\\\\\\\\\"`} {
		for pad := range 40 {
			body := []byte(`["` + strings.Repeat("x", pad) + esc + `xy"` + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth+1))
			want := error(nil)
			if refDepth(body) > MaxDepth {
				want = ErrTooDeep
			}
			if got := CheckDepth(body); got != want {
				t.Errorf("CheckDepth(%s): got %v, want %v", body[:min(len(body), 80)], got, want)
			}
		}
	}
}

// TestDeepBodyDoesNotCrash sends the 15 MB body that used to overflow the
// stack in gjson's validator and kill the process.
func TestDeepBodyDoesNotCrash(t *testing.T) {
	body := nested(15_000_000, false)
	_, err := ParseRequest(body)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("ParseRequest: got error %v, want *Error", err)
	}
	if e.Code != "invalid_json" || e.Param != "" || !strings.Contains(e.Message, "nested too deeply") {
		t.Errorf("got %+v, want code invalid_json, no param, a message about nesting", *e)
	}
	if _, err := ParseReply(body); !errors.Is(err, ErrTooDeep) {
		t.Errorf("ParseReply: got %v, want %v", err, ErrTooDeep)
	}
	var a Assembler
	if err := a.Add(body); !errors.Is(err, ErrTooDeep) {
		t.Errorf("Assembler.Add: got %v, want %v", err, ErrTooDeep)
	}
}

func TestParseRequestDepthBound(t *testing.T) {
	tests := []struct {
		name    string
		body    []byte
		wantErr bool
	}{
		{"exactly the bound", nested(MaxDepth-1, true), false},
		{"one past the bound", nested(MaxDepth, true), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseRequest(tt.body)
			if got := err != nil; got != tt.wantErr {
				t.Errorf("got error %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

func TestReplyDepthBound(t *testing.T) {
	reply := func(n int) []byte {
		return []byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"x"}}],"x":` +
			strings.Repeat("[", n) + strings.Repeat("]", n) + `}`)
	}
	chunk := func(n int) []byte {
		return []byte(`{"choices":[{"index":0,"delta":{"content":"x"}}],"x":` +
			strings.Repeat("[", n) + strings.Repeat("]", n) + `}`)
	}
	tests := []struct {
		name string
		n    int
		want error
	}{
		{"exactly the bound", MaxDepth - 1, nil},
		{"one past the bound", MaxDepth, ErrTooDeep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParseReply(reply(tt.n)); err != tt.want {
				t.Errorf("ParseReply: got %v, want %v", err, tt.want)
			}
			var a Assembler
			if err := a.Add(chunk(tt.n)); err != tt.want {
				t.Errorf("Assembler.Add: got %v, want %v", err, tt.want)
			}
		})
	}
}

// TestHashDeepMessage hashes a message nested far past MaxDepth, which
// Hash does not canonicalise: canonical hashing recursed once per level
// and rescanned each level, so this did not finish in 10 minutes.
func TestHashDeepMessage(t *testing.T) {
	const n = 15_000_000
	deep := []byte(`{"role":"user","content":[{"type":"x","x":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}]}`)
	if Hash(deep) == Hash(deep[:len(deep)-1]) {
		t.Errorf("got equal hashes for different messages, want different")
	}
}

// TestHashDeepArguments hashes tool call arguments that are a deep JSON
// array inside a string, which the message's own depth check cannot see.
func TestHashDeepArguments(t *testing.T) {
	deep := strings.Repeat("[", 15_000_000)
	a := []byte(`{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"` + deep + `"}}]}`)
	b := []byte(`{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"` + deep + `["}}]}`)
	if Hash(a) == Hash(b) {
		t.Errorf("got equal hashes for different arguments, want different")
	}
}

// chatBody returns a realistic request body of about size bytes: a system
// prompt, then user, assistant, tool-calling and tool turns with prose,
// escapes and some non-ASCII text.
func chatBody(size int) []byte {
	b := []byte(`{"model":"gpt-4o","stream":true,"tools":[{"type":"function","function":{"name":"search","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}}],"messages":[` +
		`{"role":"system","content":"You are a careful assistant. Cite sources, answer in the user's language, and keep code in fenced blocks."}`)
	turns := []string{
		`,{"role":"user","content":"Could you compare the \"stack\" and the \"heap\" in Go, with an example? Merci d'avance — très curieux."}`,
		`,{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"search","arguments":"{\"q\":\"go escape analysis [stack] {heap}\"}"}}]}`,
		`,{"role":"tool","tool_call_id":"call_1","content":"{\"results\":[{\"title\":\"Escape analysis\",\"snippet\":\"Values that outlive a call move to the heap.\"}]}"}`,
		`,{"role":"assistant","content":"In Go, values whose lifetime the compiler can prove ends with the call stay on the stack:\n\n` + "```go\\nfunc sum(xs []int) (s int) {\\n\\tfor _, x := range xs {\\n\\t\\ts += x\\n\\t}\\n\\treturn\\n}\\n```" + `\n\nOthers escape to the heap, for instance a pointer returned to the caller."}`,
	}
	for i := 0; len(b) < size-200; i++ {
		b = append(b, turns[i%len(turns)]...)
	}
	return append(b, `],"temperature":0.3}`...)
}

func TestBenchBodiesAreValid(t *testing.T) {
	for _, bb := range benchBodies[:2] {
		t.Run(bb.name, func(t *testing.T) {
			if _, err := ParseRequest(bb.body); err != nil {
				t.Fatalf("got %v, want the benchmark body to be a valid request", err)
			}
			if n := bytes.Count(bb.body, []byte("{")) + bytes.Count(bb.body, []byte("[")); n <= MaxDepth {
				t.Errorf("got %d opening brackets, want more than %d so that the scan is measured", n, MaxDepth)
			}
		})
	}
}

// japaneseBody returns a request body of about size bytes of Japanese
// conversation, where almost every byte belongs to a multi-byte rune.
func japaneseBody(size int) []byte {
	b := []byte(`{"model":"gpt-4o","messages":[{"role":"system","content":"あなたは丁寧なアシスタントです。"}`)
	for len(b) < size-100 {
		b = append(b, `,{"role":"user","content":"東京の明日の天気を教えてください。傘は必要ですか？"},{"role":"assistant","content":"明日の東京は曇りのち雨で、降水確率は六十パーセントです。傘を持って行くことをお勧めします。"}`...)
	}
	return append(b, `]}`...)
}

// benchBodies are the realistic bodies the whole-body checks are measured
// on: 50 KB requests, past the bracket count that lets CheckDepth skip its
// scan, and a stream chunk, well under it.
var benchBodies = []struct {
	name string
	body []byte
}{
	{"english-50KB", chatBody(50 << 10)},
	{"japanese-50KB", japaneseBody(50 << 10)},
	{"chunk", []byte(`{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_f9f4fb6dbf","choices":[{"index":0,"delta":{"content":" word12"},"logprobs":null,"finish_reason":null}],"usage":null}`)},
}

func BenchmarkCheckDepth(b *testing.B) {
	for _, bb := range benchBodies {
		b.Run(bb.name, func(b *testing.B) { benchAccepts(b, bb.body, CheckDepth) })
	}
}
