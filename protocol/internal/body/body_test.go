package body

import (
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/wire"
)

func TestSpliceAppend(t *testing.T) {
	msgs := [][]byte{[]byte(`{"m":1}`), []byte(`{"m":2}`)}
	s := Splice{Messages: "messages", System: "system"}
	tests := []struct {
		name, root, system string
		keep               bool
		want               string
	}{
		{"messages replaced, the rest as it came", `{"model":"x","messages":[{"old":1}],"max_tokens":5}`, "", true,
			`{"model":"x","messages":[{"m":1},{"m":2}],"max_tokens":5}`},
		{"system kept", `{"system":"own","messages":[]}`, `"new"`, true, `{"system":"own","messages":[{"m":1},{"m":2}]}`},
		{"system replaced in place", `{"system":"own","messages":[],"x":1}`, `"new"`, false, `{"system":"new","messages":[{"m":1},{"m":2}],"x":1}`},
		{"system left out", `{"system":"own","messages":[]}`, "", false, `{"messages":[{"m":1},{"m":2}]}`},
		{"system added last", `{"messages":[],"x":1}`, `"new"`, false, `{"messages":[{"m":1},{"m":2}],"x":1,"system":"new"}`},
		{"no system kept or added", `{"messages":[]}`, `"new"`, true, `{"messages":[{"m":1},{"m":2}]}`},
		{"names as written", `{"mes\u0073ages":[], "model" : "x"}`, "", true, `{"mes\u0073ages":[{"m":1},{"m":2}],"model":"x"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var system []byte
			if tt.system != "" {
				system = []byte(tt.system)
			}
			got := string(s.Append([]byte("pre:"), gjson.Parse(tt.root), msgs, system, tt.keep))
			if got != "pre:"+tt.want {
				t.Errorf("got %s, want pre:%s", got, tt.want)
			}
		})
	}
	// Name maps a member's name before it is compared.
	g := Splice{Messages: "contents", System: "systemInstruction", Name: func(k string) string {
		if k == "system_instruction" {
			return "systemInstruction"
		}
		return k
	}}
	got := string(g.Append(nil, gjson.Parse(`{"system_instruction":{},"contents":[]}`), msgs, []byte(`{"parts":[]}`), false))
	if want := `{"system_instruction":{"parts":[]},"contents":[{"m":1},{"m":2}]}`; got != want {
		t.Errorf("a mapped name: got %s, want %s", got, want)
	}
}

func TestWithTools(t *testing.T) {
	tool := func(dst []byte, t wire.Tool) []byte {
		return append(append(append(dst, `{"name":"`...), t.Name...), `"}`...)
	}
	tools := []wire.Tool{{Name: "a"}, {Name: "b"}}
	tests := []struct {
		name, body string
		stream     bool
		want       string
	}{
		{"appended to the client's tools", `{"tools":[{"name":"own"}],"stream":true}`, true, `{"tools":[{"name":"own"},{"name":"a"},{"name":"b"}],"stream":true}`},
		{"a tools array made", `{"model":"m"}`, true, `{"model":"m","tools":[{"name":"a"},{"name":"b"}]}`},
		{"stream members dropped when not streamed", `{"stream":true,"stream_options":{"include_usage":true},"model":"m"}`, false, `{"model":"m","tools":[{"name":"a"},{"name":"b"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := WithTools([]byte(tt.body), tools, tt.stream, tool)
			if err != nil || string(got) != tt.want {
				t.Errorf("got %s, %v, want %s", got, err, tt.want)
			}
		})
	}
}

func TestArrays(t *testing.T) {
	if got := string(AppendArray([]byte("x"), [][]byte{[]byte(`1`), []byte(`{"a":2}`)})); got != `x[1,{"a":2}]` {
		t.Errorf("AppendArray: got %s", got)
	}
	if got := string(AppendArray(nil, nil)); got != `[]` {
		t.Errorf("AppendArray of none: got %s", got)
	}
	if got := JoinArray([]string{`"a"`, `null`}); got != `["a",null]` {
		t.Errorf("JoinArray: got %s", got)
	}
	if got := JoinArray(nil); got != `[]` {
		t.Errorf("JoinArray of none: got %s", got)
	}
	double := func(dst []byte, v gjson.Result) []byte { return strconv.AppendInt(dst, 2*v.Int(), 10) }
	if got := string(AppendEach([]byte("x"), gjson.Parse(` [1, 2,3] `), double)); got != `x[2,4,6]` {
		t.Errorf("AppendEach: got %s, want x[2,4,6]", got)
	}
	if got := string(AppendEach(nil, gjson.Parse(`[]`), double)); got != `[]` {
		t.Errorf("AppendEach of none: got %s, want []", got)
	}
}

func TestID(t *testing.T) {
	for _, tt := range []struct {
		prefix string
		n      int
	}{{"chatcmpl-", 24}, {"msg_", 24}, {"", 22}, {"long-", 100}} {
		a, b := ID(tt.prefix, tt.n), ID(tt.prefix, tt.n)
		if len(a) != len(tt.prefix)+tt.n || !strings.HasPrefix(a, tt.prefix) {
			t.Errorf("ID(%q, %d): got %q", tt.prefix, tt.n, a)
		}
		if strings.Trim(a[len(tt.prefix):], "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") != "" {
			t.Errorf("ID(%q, %d): got %q, want letters and digits after the prefix", tt.prefix, tt.n, a)
		}
		if a == b {
			t.Errorf("ID(%q, %d): got %q twice", tt.prefix, tt.n, a)
		}
	}
}

func TestEnding(t *testing.T) {
	streamed := wire.Usage{InputTokens: 1, OutputTokens: 2}
	own := wire.Usage{InputTokens: 3, OutputTokens: 4}
	tests := []struct {
		name  string
		a     *wire.Answer
		stop  string
		usage wire.Usage
	}{
		{"no answer: the stream's", nil, wire.StopEnd, streamed},
		{"an answer without either: the stream's", &wire.Answer{}, wire.StopEnd, streamed},
		{"the answer's", &wire.Answer{Stop: wire.StopLength, Usage: own}, wire.StopLength, own},
		{"the answer's stop, the stream's usage", &wire.Answer{Stop: wire.StopLength}, wire.StopLength, streamed},
	}
	for _, tt := range tests {
		if stop, u := Ending(tt.a, wire.StopEnd, streamed); stop != tt.stop || u != tt.usage {
			t.Errorf("%s: got %q, %+v, want %q, %+v", tt.name, stop, u, tt.stop, tt.usage)
		}
	}
}

func TestAppendSampling(t *testing.T) {
	temp, topP := 0.5, 1e-3
	quote := func(dst []byte, s string) []byte { return append(append(append(dst, '"'), s...), '"') }
	tests := []struct {
		name string
		req  wire.Request
		stop string
		want string
	}{
		{"none set", wire.Request{}, "stop", `{}`},
		{"each", wire.Request{Temperature: &temp, TopP: &topP, Stop: []string{"a", "b"}}, "stop_sequences",
			`{,"temperature":0.5,"top_p":0.001,"stop_sequences":["a","b"]}`},
		{"a protocol without stop sequences", wire.Request{TopP: &topP, Stop: []string{"a"}}, "", `{,"top_p":0.001}`},
	}
	for _, tt := range tests {
		if got := string(AppendSampling([]byte("{"), &tt.req, tt.stop, quote)) + "}"; got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestObjectArgs(t *testing.T) {
	for args, want := range map[string]string{
		`{"q":1}`:     `{"q":1}`,
		" {} \n":      `{}`,
		`[1]`:         `{}`,
		`"s"`:         `{}`,
		`{"q":`:       `{}`,
		``:            `{}`,
		` {"a":[]}  `: `{"a":[]}`,
	} {
		if got := ObjectArgs(args); got != want {
			t.Errorf("ObjectArgs(%q): got %q, want %q", args, got, want)
		}
	}
}

func TestTexts(t *testing.T) {
	m := wire.Message{Role: wire.RoleSystem, Parts: []wire.Part{
		{Kind: wire.Text, Text: "a"}, {Kind: wire.Text}, {Kind: wire.Image, URL: "u"}, {Kind: wire.Text, Text: "b"}}}
	if got := Texts(m); got != "a\nb" {
		t.Errorf("got %q, want the text parts joined by newlines", got)
	}
	if got := Texts(wire.Message{}); got != "" {
		t.Errorf("no parts: got %q", got)
	}
}
