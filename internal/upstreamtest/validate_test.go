package upstreamtest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// msgs turns JSON object literals into a messages slice.
func msgs(objs ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(objs))
	for i, o := range objs {
		out[i] = json.RawMessage(o)
	}
	return out
}

const (
	sys       = `{"role":"system","content":"be brief"}`
	dev       = `{"role":"developer","content":[{"type":"text","text":"rules"}]}`
	user      = `{"role":"user","content":"hi"}`
	userParts = `{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}`
	asst      = `{"role":"assistant","content":"hello"}`
	callA     = `{"role":"assistant","content":null,"tool_calls":[{"id":"call_a","type":"function","function":{"name":"f","arguments":"{}"}}]}`
	callsAB   = `{"role":"assistant","tool_calls":[{"id":"call_a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"call_b","type":"function","function":{"name":"g","arguments":"{\"x\":1}"}}]}`
	toolA     = `{"role":"tool","tool_call_id":"call_a","content":"ra"}`
	toolB     = `{"role":"tool","tool_call_id":"call_b","content":"rb"}`
	toolC     = `{"role":"tool","tool_call_id":"call_c","content":"rc"}`
)

func TestValidateMessagesAccepts(t *testing.T) {
	tests := []struct {
		name string
		msgs []json.RawMessage
	}{
		{"single user", msgs(user)},
		{"instructions and parts", msgs(sys, dev, userParts)},
		{"plain exchange", msgs(sys, user, asst, user)},
		{"one call answered", msgs(user, callA, toolA, asst)},
		{"call answered at the end", msgs(user, callA, toolA)},
		{"parallel calls answered in order", msgs(user, callsAB, toolA, toolB, asst, user)},
		{"parallel calls answered out of order", msgs(user, callsAB, toolB, toolA)},
		{"two rounds of calls", msgs(user, callA, toolA, callsAB, toolA, toolB, asst)},
		{"assistant with refusal only", msgs(user, `{"role":"assistant","content":null,"refusal":"no"}`, user)},
		{"assistant with empty content", msgs(user, `{"role":"assistant","content":""}`)},
		{"assistant with text parts", msgs(user, `{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"refusal","refusal":"b"}]}`)},
		{"tool with text parts", msgs(user, callA, `{"role":"tool","tool_call_id":"call_a","content":[{"type":"text","text":"r"}]}`)},
		{"custom tool call", msgs(user, `{"role":"assistant","tool_calls":[{"id":"call_a","type":"custom","custom":{"name":"c","input":"x"}}]}`, toolA)},
		{"legacy function role", msgs(user, `{"role":"function","name":"f","content":"r"}`)},
		{"tool_calls null", msgs(user, `{"role":"assistant","content":"x","tool_calls":null}`)},
		{"every key each role allows", msgs(
			`{"role":"system","content":"s","name":"n"}`,
			`{"role":"developer","content":"d","name":"n"}`,
			`{"role":"user","content":"u","name":"n"}`,
			`{"role":"assistant","content":null,"name":"n","refusal":null,"audio":null,"function_call":null,"tool_calls":[{"id":"call_a","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
			`{"role":"tool","content":"r","tool_call_id":"call_a"}`,
			`{"role":"function","content":"r","name":"f"}`,
		)},
		{"assistant with audio only", msgs(user, `{"role":"assistant","audio":{"id":"audio_1"}}`, user)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ValidateMessages(tt.msgs); got != nil {
				t.Errorf("got %+v, want nil", *got)
			}
		})
	}
}

func TestValidateMessagesRejects(t *testing.T) {
	tests := []struct {
		name string
		msgs []json.RawMessage
		want APIError
	}{
		{
			name: "empty", msgs: msgs(),
			want: APIError{"Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", "invalid_request_error", "messages", "empty_array"},
		},
		{
			name: "invalid json", msgs: msgs(`{"role":`),
			want: APIError{msgParseBody, "invalid_request_error", "", ""},
		},
		{
			name: "not an object", msgs: msgs(user, `"hi"`),
			want: APIError{"Invalid type for 'messages[1]': expected an object, but got a string instead.", "invalid_request_error", "messages[1]", "invalid_type"},
		},
		{
			name: "missing role", msgs: msgs(`{"content":"x"}`),
			want: APIError{"Missing required parameter: 'messages[0].role'.", "invalid_request_error", "messages[0].role", "missing_required_parameter"},
		},
		{
			name: "unknown role", msgs: msgs(user, `{"role":"robot","content":"x"}`),
			want: APIError{"Invalid value: 'robot'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", "invalid_request_error", "messages[1].role", "invalid_value"},
		},
		{
			name: "user without content", msgs: msgs(`{"role":"user"}`),
			want: APIError{"Missing required parameter: 'messages[0].content'.", "invalid_request_error", "messages[0].content", "missing_required_parameter"},
		},
		{
			name: "user content null", msgs: msgs(`{"role":"user","content":null}`),
			want: APIError{"Invalid type for 'messages[0].content': expected one of a string or array of objects, but got null instead.", "invalid_request_error", "messages[0].content", "invalid_type"},
		},
		{
			name: "user content a number", msgs: msgs(`{"role":"user","content":5}`),
			want: APIError{"Invalid type for 'messages[0].content': expected one of a string or array of objects, but got an integer instead.", "invalid_request_error", "messages[0].content", "invalid_type"},
		},
		{
			name: "user content a decimal", msgs: msgs(`{"role":"user","content":0.5}`),
			want: APIError{"Invalid type for 'messages[0].content': expected one of a string or array of objects, but got a decimal instead.", "invalid_request_error", "messages[0].content", "invalid_type"},
		},
		{
			name: "user content empty array", msgs: msgs(`{"role":"user","content":[]}`),
			want: APIError{"Invalid 'messages[0].content': empty array. Expected an array with minimum length 1, but got an empty array instead.", "invalid_request_error", "messages[0].content", "empty_array"},
		},
		{
			name: "system image part", msgs: msgs(`{"role":"system","content":[{"type":"image_url","image_url":{"url":"u"}}]}`, user),
			want: APIError{"Invalid value: 'image_url'. Supported values are: 'text'.", "invalid_request_error", "messages[0].content[0].type", "invalid_value"},
		},
		{
			name: "text part without text", msgs: msgs(`{"role":"user","content":[{"type":"text"}]}`),
			want: APIError{"Missing required parameter: 'messages[0].content[0].text'.", "invalid_request_error", "messages[0].content[0].text", "missing_required_parameter"},
		},
		{
			name: "assistant without content or calls", msgs: msgs(user, `{"role":"assistant"}`),
			want: APIError{"Invalid value for 'content': expected a string, got null.", "invalid_request_error", "messages.[1].content", ""},
		},
		{
			name: "empty tool_calls", msgs: msgs(user, `{"role":"assistant","content":"x","tool_calls":[]}`),
			want: APIError{"Invalid 'messages[1].tool_calls': empty array. Expected an array with minimum length 1, but got an empty array instead.", "invalid_request_error", "messages[1].tool_calls", "empty_array"},
		},
		{
			name: "response fields in an assistant message", msgs: msgs(sys, user, asst, `{"role":"assistant","content":"x","refusal":null,"annotations":[]}`),
			want: APIError{"Unknown parameter: 'messages[3].annotations'.", "invalid_request_error", "messages[3].annotations", "unknown_parameter"},
		},
		{
			name: "name on a tool message", msgs: msgs(user, callA, `{"role":"tool","tool_call_id":"call_a","content":"r","name":"f"}`),
			want: APIError{"Unknown parameter: 'messages[2].name'.", "invalid_request_error", "messages[2].name", "unknown_parameter"},
		},
		{
			name: "tool_call_id on a user message", msgs: msgs(`{"role":"user","content":"hi","tool_call_id":"call_a"}`),
			want: APIError{"Unknown parameter: 'messages[0].tool_call_id'.", "invalid_request_error", "messages[0].tool_call_id", "unknown_parameter"},
		},
		{
			name: "unknown key before a content error", msgs: msgs(`{"role":"system","x":1}`),
			want: APIError{"Unknown parameter: 'messages[0].x'.", "invalid_request_error", "messages[0].x", "unknown_parameter"},
		},
		{
			name: "audio without id", msgs: msgs(user, `{"role":"assistant","audio":{"data":"x"}}`),
			want: APIError{"Missing required parameter: 'messages[1].audio.id'.", "invalid_request_error", "messages[1].audio.id", "missing_required_parameter"},
		},
		{
			name: "tool call without id", msgs: msgs(user, `{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}`),
			want: APIError{"Missing required parameter: 'messages[1].tool_calls[0].id'.", "invalid_request_error", "messages[1].tool_calls[0].id", "missing_required_parameter"},
		},
		{
			name: "tool call without arguments", msgs: msgs(user, `{"role":"assistant","tool_calls":[{"id":"call_a","type":"function","function":{"name":"f"}}]}`, toolA),
			want: APIError{"Missing required parameter: 'messages[1].tool_calls[0].function.arguments'.", "invalid_request_error", "messages[1].tool_calls[0].function.arguments", "missing_required_parameter"},
		},
		{
			name: "tool call of unknown type", msgs: msgs(user, `{"role":"assistant","tool_calls":[{"id":"call_a","type":"magic"}]}`, toolA),
			want: APIError{"Invalid value: 'magic'. Supported values are: 'function' and 'custom'.", "invalid_request_error", "messages[1].tool_calls[0].type", "invalid_value"},
		},
		{
			name: "duplicate call ids in one message", msgs: msgs(user, `{"role":"assistant","tool_calls":[{"id":"call_a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"call_a","type":"function","function":{"name":"f","arguments":"{}"}}]}`, toolA),
			want: APIError{"Invalid parameter: Duplicate value for 'id' of 'call_a' in 'messages[1].tool_calls'.", "invalid_request_error", "messages[1].tool_calls[1].id", ""},
		},
		{
			name: "tool without tool_call_id", msgs: msgs(user, callA, `{"role":"tool","content":"r"}`),
			want: APIError{"Missing required parameter: 'messages[2].tool_call_id'.", "invalid_request_error", "messages[2].tool_call_id", "missing_required_parameter"},
		},
		{
			name: "tool first", msgs: msgs(toolA, user),
			want: APIError{msgToolNotResponse, "invalid_request_error", "messages.[0].role", ""},
		},
		{
			name: "tool after a plain assistant", msgs: msgs(user, asst, toolA),
			want: APIError{msgToolNotResponse, "invalid_request_error", "messages.[2].role", ""},
		},
		{
			name: "tool after a user message closed the calls", msgs: msgs(user, callA, toolA, user, toolA),
			want: APIError{msgToolNotResponse, "invalid_request_error", "messages.[4].role", ""},
		},
		{
			name: "tool answering an unknown id", msgs: msgs(user, callA, toolC),
			want: APIError{msgToolNotResponse, "invalid_request_error", "messages.[2].role", ""},
		},
		{
			name: "tool answering a call of an earlier round", msgs: msgs(user, callsAB, toolA, toolB, callA, toolB),
			want: APIError{msgToolNotResponse, "invalid_request_error", "messages.[5].role", ""},
		},
		{
			name: "call unanswered at the end", msgs: msgs(user, callA),
			want: APIError{msgCallsUnanswered + "call_a", "invalid_request_error", "messages.[1].role", ""},
		},
		{
			name: "call unanswered before a user message", msgs: msgs(user, callA, user),
			want: APIError{msgCallsUnanswered + "call_a", "invalid_request_error", "messages.[1].role", ""},
		},
		{
			name: "one of parallel calls unanswered", msgs: msgs(user, callsAB, toolB, asst),
			want: APIError{msgCallsUnanswered + "call_a", "invalid_request_error", "messages.[1].role", ""},
		},
		{
			name: "both parallel calls unanswered", msgs: msgs(sys, user, callsAB, asst),
			want: APIError{msgCallsUnanswered + "call_a, call_b", "invalid_request_error", "messages.[2].role", ""},
		},
		{
			name: "duplicate answer", msgs: msgs(user, callsAB, toolA, toolA, toolB),
			want: APIError{"Invalid parameter: Duplicate value for 'tool_call_id' of 'call_a', in messages[2] and messages[3].", "invalid_request_error", "messages.[3].tool_call_id", ""},
		},
		{
			name: "shape errors come before sequence errors", msgs: msgs(toolA, `{"role":"robot","content":"x"}`),
			want: APIError{"Invalid value: 'robot'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", "invalid_request_error", "messages[1].role", "invalid_value"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ValidateMessages(tt.msgs)
			if got == nil {
				t.Fatalf("got nil, want %+v", tt.want)
			}
			if *got != tt.want {
				t.Errorf("got %+v, want %+v", *got, tt.want)
			}
		})
	}
}

func TestAPIErrorJSON(t *testing.T) {
	tests := []struct {
		name string
		err  APIError
		want string
	}{
		{"nulls", APIError{Message: `say "hi"`, Type: "invalid_request_error"}, `{"error":{"message":"say \"hi\"","type":"invalid_request_error","param":null,"code":null}}` + "\n"},
		{"all set", APIError{"m", "t", "p", "c"}, `{"error":{"message":"m","type":"t","param":"p","code":"c"}}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(tt.err.JSON()); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// FuzzValidateMessages checks the validator never panics and that whatever
// it rejects renders as valid JSON.
func FuzzValidateMessages(f *testing.F) {
	for _, seed := range []string{
		"[" + strings.Join([]string{user, callsAB, toolA, toolB, asst}, ",") + "]",
		"[" + strings.Join([]string{user, callA, toolC}, ",") + "]",
		`[{"role":"tool"}]`, `[]`, `[1,"x",null]`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := gjson.Parse(s)
		if !gjson.Valid(s) || !v.IsArray() {
			return
		}
		var ms []json.RawMessage
		for _, m := range v.Array() {
			ms = append(ms, json.RawMessage(m.Raw))
		}
		if e := ValidateMessages(ms); e != nil && !json.Valid(e.JSON()) {
			t.Errorf("got invalid error JSON %s", e.JSON())
		}
	})
}

func BenchmarkValidateMessages(b *testing.B) {
	trace := []string{sys, user}
	for range 25 {
		trace = append(trace, callsAB, toolA, toolB, asst, user)
	}
	ms := msgs(trace...)
	b.ReportAllocs()
	for b.Loop() {
		if e := ValidateMessages(ms); e != nil {
			b.Fatal(e)
		}
	}
}
