package tokens

import (
	"fmt"
	"strings"
	"testing"
)

// cookbookMessages is the example conversation of OpenAI's cookbook "How to
// count tokens with tiktoken" (num_tokens_from_messages).
var cookbookMessages = []string{
	`{"role":"system","content":"You are a helpful, pattern-following assistant that translates corporate jargon into plain English."}`,
	`{"role":"system","name":"example_user","content":"New synergies will help drive top-line growth."}`,
	`{"role":"system","name":"example_assistant","content":"Things working well together will increase revenue."}`,
	`{"role":"system","name":"example_user","content":"Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage."}`,
	`{"role":"system","name":"example_assistant","content":"Let's talk later when we're less busy about how to do better."}`,
	`{"role":"user","content":"This late pivot means we don't have time to boil the ocean for the client deliverable."}`,
}

// TestMessageCookbook reproduces the cookbook's published totals: 129 prompt
// tokens for gpt-4-0613 / gpt-3.5-turbo-0613 and 124 for gpt-4o / gpt-4o-mini.
func TestMessageCookbook(t *testing.T) {
	tests := []struct {
		name string
		enc  Encoding
		want int
	}{
		{"cl100k gpt-4", CL100k, 129},
		{"o200k gpt-4o", O200k, 124},
	}
	var c Counter
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ReplyPriming
			for _, m := range cookbookMessages {
				got += c.Message(tt.enc, []byte(m))
			}
			if got != tt.want {
				t.Errorf("total: got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestMessage(t *testing.T) {
	var c Counter
	text := func(s string) int { return c.Text(O200k, s) }
	tests := []struct {
		name string
		msg  string
		want int
	}{
		{"plain user", `{"role":"user","content":"hello world"}`, 3 + 1 + 2},
		{"key order ignored", `{"content":"hello world","role":"user"}`, 3 + 1 + 2},
		{"null content", `{"role":"assistant","content":null}`, 3 + 1},
		{"escaped content", `{"role":"user","content":"line one\nline \"two\""}`, 3 + 1 + text("line one\nline \"two\"")},
		{"name", `{"role":"user","name":"bob","content":"hi"}`, 3 + 1 + text("bob") + 1 + text("hi")},
		{"text parts", `{"role":"user","content":[{"type":"text","text":"hello"},{"type":"text","text":" world"}]}`,
			3 + 1 + text("hello") + text(" world")},
		{"refusal", `{"role":"assistant","content":null,"refusal":"I can't help with that."}`, 3 + 1 + text("I can't help with that.")},
		{"refusal part", `{"role":"assistant","content":[{"type":"refusal","refusal":"No."}]}`, 3 + 1 + text("No.")},
		{"tool result", `{"role":"tool","tool_call_id":"call_abc123","content":"{\"temp\":21}"}`,
			3 + 1 + text("call_abc123") + text(`{"temp":21}`)},
		{"tool calls", `{"role":"assistant","content":null,"tool_calls":[` +
			`{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},` +
			`{"id":"call_2","type":"function","function":{"name":"get_time","arguments":"{}"}}]}`,
			3 + 1 + 3 + text("get_weather") + text(`{"city":"Paris"}`) + 3 + text("get_time") + text("{}")},
		{"custom tool call", `{"role":"assistant","tool_calls":[{"id":"c","type":"custom","custom":{"name":"sql","input":"SELECT 1"}}]}`,
			3 + 1 + 3 + text("sql") + text("SELECT 1")},
		{"legacy function_call", `{"role":"assistant","function_call":{"name":"f","arguments":"{}"}}`, 3 + 1 + 3 + text("f") + text("{}")},
		{"audio part", `{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}]}`, 3 + 1 + audioPartTokens},
		{"file part", `{"role":"user","content":[{"type":"file","file":{"file_id":"file-1"}}]}`, 3 + 1 + FilePart},
		{"unknown fields ignored", `{"role":"user","content":"hi","metadata":{"x":"a long string that is not counted"}}`, 3 + 1 + text("hi")},
		{"unknown role", `{"role":"critic","content":"hi"}`, 3 + text("critic") + text("hi")},
		{"wrong types", `{"role":1,"content":{"a":"b"},"name":2,"tool_calls":"x"}`, 3 + 0 + 0 + 1},
		{"empty object", `{}`, 3},
		{"malformed", `{"role":"user","content":"hel`, 3 + 1},
		{"empty input", ``, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.Message(O200k, []byte(tt.msg)); got != tt.want {
				t.Errorf("Message(%s): got %d, want %d", tt.msg, got, tt.want)
			}
		})
	}
}

// TestRoleShortcut checks the shortcut in role against the encoders.
func TestRoleShortcut(t *testing.T) {
	for _, enc := range []Encoding{O200k, CL100k} {
		for _, role := range []string{"user", "assistant", "system", "tool", "developer"} {
			if got := len(reference(enc).EncodeOrdinary(role)); got != 1 {
				t.Errorf("%s %q: got %d tokens, want 1", enc, role, got)
			}
		}
	}
}

func TestTools(t *testing.T) {
	var c Counter
	text := func(s string) int { return c.Text(CL100k, s) }
	params := `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`
	weather := `{"type":"function","function":{"name":"get_weather","description":"Get the weather.","parameters":` + params + `}}`
	pretty := `{"type":"function","function":{"name":"get_weather","description":"Get the weather.","parameters":` +
		strings.ReplaceAll(strings.ReplaceAll(params, ",", ",\n  "), ":", ": ") + `}}`
	oneTool := perTool + text("get_weather") + text("Get the weather.") + text(params)
	tests := []struct {
		name  string
		tools string
		want  int
	}{
		{"nil", ``, 0},
		{"empty", `[]`, 0},
		{"not an array", `{"type":"function"}`, 0},
		{"one", `[` + weather + `]`, oneTool},
		{"parameters compacted", `[` + pretty + `]`, oneTool},
		{"two", `[` + weather + `,` + weather + `]`, 2 * oneTool},
		{"no parameters", `[{"type":"function","function":{"name":"now"}}]`, perTool + text("now")},
		{"custom tool", `[{"type":"custom","custom":{"name":"sql","description":"Run SQL."}}]`, perTool + text("sql") + text("Run SQL.")},
		{"junk element", `[1,"x",null]`, 0},
		{"Anthropic's input_schema", `[{"name":"get_weather","description":"Get the weather.","input_schema":` + params + `}]`, oneTool},
		{"Gemini's declarations", `[{"functionDeclarations":[{"name":"get_weather","description":"Get the weather.","parameters":` + params + `},` +
			`{"name":"get_weather","description":"Get the weather.","parametersJsonSchema":` + params + `}]}]`, 2 * oneTool},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.Tools(CL100k, []byte(tt.tools)); got != tt.want {
				t.Errorf("Tools: got %d, want %d", got, tt.want)
			}
		})
	}
	if got := c.Tools(CL100k, nil); got != 0 {
		t.Errorf("Tools(nil): got %d, want 0", got)
	}
}

func BenchmarkMessage(b *testing.B) {
	msg := []byte(`{"role":"user","name":"alice","content":"Could you summarise the design notes we discussed yesterday about the proxy's memory budget, and list the open questions? Thanks!"}`)
	var c Counter
	c.Message(O200k, msg)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		c.Message(O200k, msg)
	}
}

// TestCall checks that Call counts a tool call as Message counts one in
// tool_calls.
func TestCall(t *testing.T) {
	tests := []struct{ name, args string }{
		{"get_weather", `{"city":"Paris"}`},
		{"", ""},
		{"search_the_web", `{"query":"日本語 <b>&</b>","n":3}`},
	}
	var c Counter
	for _, enc := range []Encoding{O200k, CL100k} {
		for _, tt := range tests {
			msg := fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":%q,"arguments":%q}}]}`, tt.name, tt.args)
			if got, want := c.Call(enc, tt.name, tt.args), c.Message(enc, []byte(msg))-perMessage-1; got != want {
				t.Errorf("%s: Call(%q, %q) = %d, want %d", enc, tt.name, tt.args, got, want)
			}
		}
	}
}
