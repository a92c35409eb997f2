package chat

import (
	"errors"
	"strings"
	"testing"
)

func TestParseRequest(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		roles     []string
		raws      []string
		model     string
		stream    bool
		maxTokens int
		tools     string
	}{
		{
			name:  "minimal",
			body:  `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`,
			roles: []string{"user"},
			raws:  []string{`{"role":"user","content":"hi"}`},
			model: "gpt-4o",
		},
		{
			name: "every role, whitespace kept in raw",
			body: `{ "messages" : [
				{"role":"system","content":"be brief"},
				{"role":"developer","content":[{"type":"text","text":"dev"}]},
				{"role": "user", "content": "weather?"},
				{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"w","arguments":"{}"}}]},
				{"role":"tool","tool_call_id":"c1","content":"sunny"},
				{"role":"assistant","refusal":"no"}
			], "stream": true, "max_tokens": 50, "model": "m" }`,
			roles: []string{"system", "developer", "user", "assistant", "tool", "assistant"},
			raws: []string{
				`{"role":"system","content":"be brief"}`,
				`{"role":"developer","content":[{"type":"text","text":"dev"}]}`,
				`{"role": "user", "content": "weather?"}`,
				`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"w","arguments":"{}"}}]}`,
				`{"role":"tool","tool_call_id":"c1","content":"sunny"}`,
				`{"role":"assistant","refusal":"no"}`,
			},
			model:     "m",
			stream:    true,
			maxTokens: 50,
		},
		{
			name:      "max_completion_tokens wins over max_tokens",
			body:      `{"max_tokens":50,"messages":[{"role":"user","content":"x"}],"max_completion_tokens":70}`,
			roles:     []string{"user"},
			raws:      []string{`{"role":"user","content":"x"}`},
			maxTokens: 70,
		},
		{
			name:      "nulls are absent",
			body:      `{"model":null,"stream":null,"max_tokens":null,"max_completion_tokens":null,"tools":null,"messages":[{"role":"user","content":"x"}]}`,
			roles:     []string{"user"},
			raws:      []string{`{"role":"user","content":"x"}`},
			maxTokens: 0,
		},
		{
			name:  "tools and unknown fields",
			body:  `{"tools":[{"type":"function","function":{"name":"w"}}],"x-unknown":{"a":1},"messages":[{"role":"user","content":"x","name":"bob","extra":1}],"stream":false}`,
			roles: []string{"user"},
			raws:  []string{`{"role":"user","content":"x","name":"bob","extra":1}`},
			tools: `[{"type":"function","function":{"name":"w"}}]`,
		},
		{
			name:  "assistant with audio only",
			body:  `{"messages":[{"role":"assistant","audio":{"id":"audio_1"}}]}`,
			roles: []string{"assistant"},
			raws:  []string{`{"role":"assistant","audio":{"id":"audio_1"}}`},
		},
		{
			name:  "assistant with empty content",
			body:  `{"messages":[{"role":"assistant","content":""}]}`,
			roles: []string{"assistant"},
			raws:  []string{`{"role":"assistant","content":""}`},
		},
		{
			name:  "escaped role",
			body:  `{"messages":[{"role":"us\u0065r","content":"x"}]}`,
			roles: []string{"user"},
			raws:  []string{`{"role":"us\u0065r","content":"x"}`},
		},
		{
			name:  "every known part type, and unknown ones",
			body:  `{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u","detail":"low"}},{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}},{"type":"file","file":{"file_id":"f"}},{"type":"from_the_future","text":5}]},{"role":"assistant","content":[{"type":"text","text":"b"},{"type":"refusal","refusal":"c"}]}]}`,
			roles: []string{"user", "assistant"},
			raws: []string{
				`{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u","detail":"low"}},{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}},{"type":"file","file":{"file_id":"f"}},{"type":"from_the_future","text":5}]}`,
				`{"role":"assistant","content":[{"type":"text","text":"b"},{"type":"refusal","refusal":"c"}]}`,
			},
		},
		{
			name:  "leading whitespace and image part",
			body:  "\n\t {\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":\"u\"}}]}]}",
			roles: []string{"user"},
			raws:  []string{`{"role":"user","content":[{"type":"image_url","image_url":{"url":"u"}}]}`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseRequest([]byte(tt.body))
			if err != nil {
				t.Fatalf("ParseRequest: got error %v, want nil", err)
			}
			if len(r.Messages) != len(tt.roles) {
				t.Fatalf("got %d messages, want %d", len(r.Messages), len(tt.roles))
			}
			for i, m := range r.Messages {
				if m.Role != tt.roles[i] {
					t.Errorf("messages[%d].Role: got %q, want %q", i, m.Role, tt.roles[i])
				}
				if string(m.Raw) != tt.raws[i] {
					t.Errorf("messages[%d].Raw: got %s, want %s", i, m.Raw, tt.raws[i])
				}
			}
			if r.Model != tt.model {
				t.Errorf("Model: got %q, want %q", r.Model, tt.model)
			}
			if r.Stream != tt.stream {
				t.Errorf("Stream: got %v, want %v", r.Stream, tt.stream)
			}
			if r.MaxTokens != tt.maxTokens {
				t.Errorf("MaxTokens: got %d, want %d", r.MaxTokens, tt.maxTokens)
			}
			if string(r.Tools) != tt.tools {
				t.Errorf("Tools: got %s, want %s", r.Tools, tt.tools)
			}
			if (r.Tools == nil) != (tt.tools == "") {
				t.Errorf("Tools nil: got %v, want %v", r.Tools == nil, tt.tools == "")
			}
		})
	}
}

// requestUser is a valid message for the bodies of badRequests.
const requestUser = `{"role":"user","content":"x"}`

// badRequests are request bodies ParseRequest rejects, with the parameter
// and code of its error.
var badRequests = []struct {
	name  string
	body  string
	param string
	code  string
}{
	{"invalid json", `{"messages":[`, "", ""},
	{"empty body", ``, "", ""},
	{"not an object", `[1,2]`, "", ""},
	{"missing messages", `{"model":"m"}`, "messages", "missing_required_parameter"},
	{"null messages", `{"messages":null}`, "messages", "missing_required_parameter"},
	{"messages a string", `{"messages":"hi"}`, "messages", "invalid_type"},
	{"empty messages", `{"messages":[]}`, "messages", "empty_array"},
	{"duplicate messages", `{"messages":[` + requestUser + `],"messages":[` + requestUser + `]}`, "messages", "invalid_value"},
	{"message not an object", `{"messages":[` + requestUser + `,"hi"]}`, "messages[1]", "invalid_type"},
	{"missing role", `{"messages":[{"content":"x"}]}`, "messages[0].role", "missing_required_parameter"},
	{"role not a string", `{"messages":[{"role":1,"content":"x"}]}`, "messages[0].role", "invalid_type"},
	{"unknown role", `{"messages":[` + requestUser + `,{"role":"function","content":"x"}]}`, "messages[1].role", "invalid_value"},
	{"content a number", `{"messages":[{"role":"user","content":5}]}`, "messages[0].content", "invalid_type"},
	{"content part not an object", `{"messages":[{"role":"user","content":["x"]}]}`, "messages[0].content[0]", "invalid_type"},
	{"content part without type", `{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"text":"b"}]}]}`, "messages[0].content[1].type", "missing_required_parameter"},
	{"content part type a number", `{"messages":[{"role":"user","content":[{"type":3}]}]}`, "messages[0].content[0].type", "invalid_type"},
	{"text part text a number", `{"messages":[{"role":"user","content":[{"type":"text","text":5}]}]}`, "messages[0].content[0].text", "invalid_type"},
	{"text part without text", `{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text"}]}]}`, "messages[0].content[1].text", "missing_required_parameter"},
	{"text part text null", `{"messages":[{"role":"system","content":[{"type":"text","text":null}]}]}`, "messages[0].content[0].text", "missing_required_parameter"},
	{"refusal part refusal an object", `{"messages":[{"role":"assistant","content":[{"type":"refusal","refusal":{}}]}]}`, "messages[0].content[0].refusal", "invalid_type"},
	{"refusal part without refusal", `{"messages":[{"role":"assistant","content":[{"type":"refusal","text":"no"}]}]}`, "messages[0].content[0].refusal", "missing_required_parameter"},
	{"image part without image_url", `{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","url":"u"}]}]}`, "messages[0].content[1].image_url", "missing_required_parameter"},
	{"image part image_url a string", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":"u"}]}]}`, "messages[0].content[0].image_url", "invalid_type"},
	{"image part without url", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"detail":"low"}}]}]}`, "messages[0].content[0].image_url.url", "missing_required_parameter"},
	{"image part url a number", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":1}}]}]}`, "messages[0].content[0].image_url.url", "invalid_type"},
	{"audio part without input_audio", `{"messages":[{"role":"user","content":[{"type":"input_audio"}]}]}`, "messages[0].content[0].input_audio", "missing_required_parameter"},
	{"audio part input_audio an array", `{"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":[]}]}]}`, "messages[0].content[0].input_audio", "invalid_type"},
	{"bad part of a later message", `{"messages":[` + requestUser + `,{"role":"tool","tool_call_id":"c","content":[{"type":"text","text":true}]}]}`, "messages[1].content[0].text", "invalid_type"},
	{"user without content", `{"messages":[{"role":"user"}]}`, "messages[0].content", "missing_required_parameter"},
	{"system null content", `{"messages":[{"role":"system","content":null}]}`, "messages[0].content", "missing_required_parameter"},
	{"developer without content", `{"messages":[{"role":"developer"}]}`, "messages[0].content", "missing_required_parameter"},
	{"tool without tool_call_id", `{"messages":[{"role":"tool","content":"r"}]}`, "messages[0].tool_call_id", "missing_required_parameter"},
	{"tool_call_id a number", `{"messages":[{"role":"tool","tool_call_id":7,"content":"r"}]}`, "messages[0].tool_call_id", "invalid_type"},
	{"tool without content", `{"messages":[{"role":"tool","tool_call_id":"c"}]}`, "messages[0].content", "missing_required_parameter"},
	{"assistant with nothing", `{"messages":[` + requestUser + `,{"role":"assistant","content":null}]}`, "messages[1].content", "missing_required_parameter"},
	{"assistant with empty tool_calls", `{"messages":[{"role":"assistant","tool_calls":[]}]}`, "messages[0].content", "missing_required_parameter"},
	{"audio a string", `{"messages":[{"role":"assistant","audio":"a"}]}`, "messages[0].audio", "invalid_type"},
	{"audio without id", `{"messages":[{"role":"assistant","audio":{}}]}`, "messages[0].audio.id", "missing_required_parameter"},
	{"refusal a number", `{"messages":[{"role":"assistant","refusal":1}]}`, "messages[0].refusal", "invalid_type"},
	{"tool_calls an object", `{"messages":[{"role":"assistant","tool_calls":{}}]}`, "messages[0].tool_calls", "invalid_type"},
	{"tool call not an object", `{"messages":[{"role":"assistant","tool_calls":[1]}]}`, "messages[0].tool_calls[0]", "invalid_type"},
	{"tool call without id", `{"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{}"}}]}]}`, "messages[0].tool_calls[0].id", "missing_required_parameter"},
	{"tool call without function", `{"messages":[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}},{"id":"b"}]}]}`, "messages[0].tool_calls[1].function", "missing_required_parameter"},
	{"tool call function a string", `{"messages":[{"role":"assistant","tool_calls":[{"id":"a","function":"f"}]}]}`, "messages[0].tool_calls[0].function", "invalid_type"},
	{"tool call name a number", `{"messages":[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":1,"arguments":"{}"}}]}]}`, "messages[0].tool_calls[0].function.name", "invalid_type"},
	{"tool call without arguments", `{"messages":[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f"}}]}]}`, "messages[0].tool_calls[0].function.arguments", "missing_required_parameter"},
	{"arguments an object", `{"messages":[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":{}}}]}]}`, "messages[0].tool_calls[0].function.arguments", "invalid_type"},
	{"model a number", `{"model":4,"messages":[` + requestUser + `]}`, "model", "invalid_type"},
	{"stream a string", `{"stream":"yes","messages":[` + requestUser + `]}`, "stream", "invalid_type"},
	{"max_tokens a string", `{"max_tokens":"5","messages":[` + requestUser + `]}`, "max_tokens", "invalid_type"},
	{"max_completion_tokens a bool", `{"max_completion_tokens":true,"messages":[` + requestUser + `]}`, "max_completion_tokens", "invalid_type"},
	{"duplicate model", `{"model":"a","model":"b","messages":[` + requestUser + `]}`, "model", "invalid_value"},
}

// requestError parses body, which must fail with an *Error of param and
// code, and returns that *Error and the error ParseRequest returned.
func requestError(t *testing.T, body, param, code string) (*Error, error) {
	t.Helper()
	_, err := ParseRequest([]byte(body))
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got error %v, want *Error", err)
	}
	if e.Param != param {
		t.Errorf("Param: got %q, want %q", e.Param, param)
	}
	if e.Code != code {
		t.Errorf("Code: got %q, want %q", e.Code, code)
	}
	return e, err
}

func TestParseRequestErrors(t *testing.T) {
	for _, tt := range badRequests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := requestError(t, tt.body, tt.param, tt.code)
			if tt.param != "" && !strings.Contains(e.Message, tt.param) {
				t.Errorf("Message: got %q, want it to name %q", e.Message, tt.param)
			}
			if !strings.HasPrefix(err.Error(), "chat: ") {
				t.Errorf("Error(): got %q, want prefix %q", err.Error(), "chat: ")
			}
		})
	}
}

func TestAppendBody(t *testing.T) {
	const (
		a = `{"role":"user","content":"a"}`
		b = `{"role":"assistant","content":"b"}`
	)
	tests := []struct {
		name string
		body string
		msgs []string
		want string
	}{
		{
			name: "messages first",
			body: `{"messages":[{"role":"user","content":"x"}],"model":"m","tools":[{"type":"function"}]}`,
			msgs: []string{a, b},
			want: `{"messages":[` + a + `,` + b + `],"model":"m","tools":[{"type":"function"}]}`,
		},
		{
			name: "messages last, whitespace and unknown fields kept",
			body: "{ \"z\" : {\"k\": [1, 2]},\n  \"model\":\"m\",\n  \"messages\" :\t[ {\"role\":\"user\",\"content\":\"x\"} ]\n}\n",
			msgs: []string{a},
			want: "{ \"z\" : {\"k\": [1, 2]},\n  \"model\":\"m\",\n  \"messages\" :\t[" + a + "]\n}\n",
		},
		{
			name: "messages in the middle, key order kept",
			body: `{"stream":true,"messages":[{"role":"user","content":"x"}],"temperature":0.50,"response_format":{"type":"json_object"}}`,
			msgs: []string{b, a, b},
			want: `{"stream":true,"messages":[` + b + `,` + a + `,` + b + `],"temperature":0.50,"response_format":{"type":"json_object"}}`,
		},
		{
			name: "no messages",
			body: `{"messages":[{"role":"user","content":"x"}]}`,
			msgs: nil,
			want: `{"messages":[]}`,
		},
		{
			name: "messages key escaped, nested messages key untouched",
			body: `{"meta":{"messages":[1]},"m\u0065ssages":[{"role":"user","content":"x"}]}`,
			msgs: []string{a},
			want: `{"meta":{"messages":[1]},"m\u0065ssages":[` + a + `]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseRequest([]byte(tt.body))
			if err != nil {
				t.Fatalf("ParseRequest: %v", err)
			}
			msgs := make([][]byte, len(tt.msgs))
			for i, m := range tt.msgs {
				msgs[i] = []byte(m)
			}
			prefix := []byte("prefix:")
			got := r.AppendBody(prefix, msgs)
			if string(got) != "prefix:"+tt.want {
				t.Errorf("got %s, want %s", got, "prefix:"+tt.want)
			}
			if string(r.Body) != tt.body {
				t.Errorf("Body changed: got %s, want %s", r.Body, tt.body)
			}
		})
	}
}

// TestParseRequestPartMessage checks one content-part error word for word
// against OpenAI's.
func TestParseRequestPartMessage(t *testing.T) {
	_, err := ParseRequest([]byte(`{"messages":[{"role":"user","content":[{"type":"text","text":5}]}]}`))
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got error %v, want *Error", err)
	}
	const want = "Invalid type for 'messages[0].content[0].text': expected a string, but got an integer instead."
	if e.Message != want {
		t.Errorf("got %q, want %q", e.Message, want)
	}
}

// TestParseRequestAllocsPerMessage checks that validating a message,
// content parts of every kind included, allocates nothing: a body of four
// messages and a body of sixteen cost the same allocations.
func TestParseRequestAllocsPerMessage(t *testing.T) {
	const msg = `{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u"}},{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}},{"type":"other"}]},` +
		`{"role":"assistant","content":[{"type":"refusal","refusal":"no"}],"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"c","content":[{"type":"text","text":"r"}]},` +
		`{"role":"system","content":"s"}`
	allocs := func(n int) float64 {
		body := []byte(`{"model":"m","messages":[` + strings.TrimSuffix(strings.Repeat(msg+",", n), ",") + `]}`)
		return testing.AllocsPerRun(50, func() {
			if _, err := ParseRequest(body); err != nil {
				t.Fatal(err)
			}
		})
	}
	// Both stay within the initial capacity of Request.Messages.
	if four, sixteen := allocs(1), allocs(4); sixteen != four {
		t.Errorf("got %v allocations for 16 messages, want %v as for 4", sixteen, four)
	}
}
