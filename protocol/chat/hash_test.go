package chat

import (
	"testing"

	"github.com/recallproxy/recall/protocol/internal/prototest"
)

func TestHashEqual(t *testing.T) {
	tests := []struct {
		name string
		a, b string
	}{
		{"key order and whitespace", `{"role":"user","content":"hi"}`, `{ "content" : "hi",` + "\n" + `"role" : "user" }`},
		{"string escapes", `{"role":"user","content":"h\u0069 \"x\""}`, `{"role":"user","content":"hi \"x\""}`},
		{"string equals single text part", `{"role":"user","content":"hi"}`, `{"role":"user","content":[{"type":"text","text":"hi"}]}`},
		{"single text part with null extras", `{"role":"user","content":"hi"}`, `{"role":"user","content":[{"text":"hi","type":"text","annotations":[],"x":null}]}`},
		{"empty content forms", `{"role":"assistant","content":"","tool_calls":[{"id":"c","function":{"name":"f","arguments":"{}"}}]}`, `{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"{}"}}]}`},
		{"null content equals absent", `{"role":"assistant","content":null,"refusal":"no"}`, `{"role":"assistant","refusal":"no"}`},
		{"empty array content equals absent", `{"role":"assistant","content":[],"refusal":"no"}`, `{"role":"assistant","refusal":"no"}`},
		{"ignored fields", `{"role":"assistant","content":"x"}`, `{"role":"assistant","content":"x","annotations":[],"audio":null,"refusal":null,"function_call":null,"extra":{"a":1}}`},
		{"empty name and tool_calls", `{"role":"user","content":"x"}`, `{"role":"user","content":"x","name":"","tool_calls":[]}`},
		{
			"tool calls: type ignored, arguments whitespace",
			`{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\": 1, \"b\": [1, 2]}"}}]}`,
			`{"role":"assistant","tool_calls":[{"function":{"arguments":"{\"a\":1,\"b\":[1,2]}","name":"f"},"id":"c1"}]}`,
		},
		{
			"assembled message equals SDK re-serialisation",
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
			`{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{}","name":"f"},"id":"c1","type":"function"}]}`,
		},
		{
			"assembled text equals SDK re-serialisation",
			`{"role":"assistant","content":"Hello!"}`,
			`{"content":"Hello!","refusal":null,"role":"assistant","annotations":[]}`,
		},
		{
			"content parts canonical",
			`{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u","detail":null}}]}`,
			`{"content":[{"text":"a","type":"text"},{"image_url":{"url":"u"},"type":"image_url"}],"role":"user"}`,
		},
		{
			// What openai-go v3 writes when it re-encodes a decoded
			// response message (see sdk_test.go, which checks it live).
			"openai-go response shape",
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
			`{"content":"","refusal":"","role":"assistant","annotations":null,"audio":{"id":"","data":"","expires_at":0,"transcript":""},"function_call":{"arguments":"","name":""},"tool_calls":[{"id":"c1","function":{"arguments":"{}","name":"f"},"type":"function","custom":{"input":"","name":""}}]}`,
		},
		{
			"openai-go ToParam shape",
			`{"role":"assistant","content":null,"refusal":"I can't."}`,
			`{"refusal":"I can't.","role":"assistant"}`,
		},
		{"numbers by value", `{"role":"user","content":[{"type":"x","n":1.0},{"type":"y","n":1e2}]}`, `{"role":"user","content":[{"type":"x","n":1},{"type":"y","n":100}]}`},
		{"duplicate key: last wins", `{"role":"user","content":"a","content":"b"}`, `{"role":"user","content":"b"}`},
		{"tool message", `{"role":"tool","tool_call_id":"c1","content":"ok"}`, `{"content":"ok","tool_call_id":"c1","role":"tool"}`},
		// Agents move their cache hints to the newest message on every
		// call, and mint item ids per request: a resent message must still
		// match its stored copy.
		{"cache hint on a single text part", `{"role":"user","content":"hi"}`, `{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}`},
		{"cache hint key order", `{"role":"user","content":[{"cache_control":{"ttl":"5m","type":"ephemeral"},"text":"hi","type":"text"}]}`, `{"role":"user","content":"hi"}`},
		{"cache hint null or empty", `{"role":"user","content":[{"type":"text","text":"hi","cache_control":null}]}`, `{"role":"user","content":[{"type":"text","text":"hi","cache_control":{}}]}`},
		{
			"cache hint moved between parts",
			`{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"image_url","image_url":{"url":"u"}}]}`,
			`{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u"},"cache_control":{"type":"ephemeral"}}]}`,
		},
		{"cache hint nested in a part", `{"role":"user","content":[{"type":"x","x":{"v":1,"cache_control":{"type":"ephemeral"}}}]}`, `{"role":"user","content":[{"type":"x","x":{"v":1}}]}`},
		{"cache hint on the message", `{"role":"user","content":"hi","cache_control":{"type":"ephemeral"}}`, `{"role":"user","content":"hi"}`},
		{
			"cache hint on a tool call",
			`{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{}"},"cache_control":{"type":"ephemeral"}}]}`,
			`{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{}"}}]}`,
		},
		{"message id", `{"id":"msg_01","role":"user","content":"hi"}`, `{"role":"user","content":"hi","id":"msg_02"}`},
		{"part id", `{"role":"user","content":[{"type":"text","text":"hi","id":"p1"}]}`, `{"role":"user","content":"hi"}`},
		{
			"part ids and hints among several parts",
			`{"role":"user","content":[{"type":"text","text":"a","id":"p1"},{"type":"image_url","image_url":{"url":"u"},"id":"p2","cache_control":{"type":"ephemeral"}}]}`,
			`{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u"}}]}`,
		},
		{"part of nothing but an id", `{"role":"user","content":[{"type":"text","text":"a"},{"id":"p2"}]}`, `{"role":"user","content":[{"type":"text","text":"a"},{}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if ha, hb := Hash([]byte(tt.a)), Hash([]byte(tt.b)); ha != hb {
				t.Errorf("got %x != %x, want equal hashes for\n%s\n%s", ha, hb, tt.a, tt.b)
			}
		})
	}
}

func TestHashUnequal(t *testing.T) {
	tests := []struct {
		name string
		a, b string
	}{
		{"role", `{"role":"user","content":"hi"}`, `{"role":"assistant","content":"hi"}`},
		{"content", `{"role":"user","content":"hi"}`, `{"role":"user","content":"hi!"}`},
		{"content case", `{"role":"user","content":"hi"}`, `{"role":"user","content":"Hi"}`},
		{"two text parts vs joined string", `{"role":"user","content":"ab"}`, `{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`},
		{"text part with cache_control, other text", `{"role":"user","content":"a"}`, `{"role":"user","content":[{"type":"text","text":"b","cache_control":{"type":"ephemeral"}}]}`},
		{"an id inside a part's value counts", `{"role":"user","content":[{"type":"file","file":{"id":"a"}}]}`, `{"role":"user","content":[{"type":"file","file":{"id":"b"}}]}`},
		{"a part's other fields count", `{"role":"user","content":[{"type":"text","text":"a","id":"p1"},{"type":"x","v":1}]}`, `{"role":"user","content":[{"type":"text","text":"a","id":"p1"},{"type":"x","v":2}]}`},
		{"part type", `{"role":"user","content":[{"type":"text","text":"a"},{"type":"x"}]}`, `{"role":"user","content":[{"type":"text","text":"a"},{"type":"y"}]}`},
		{"part order", `{"role":"user","content":[{"type":"a"},{"type":"b"}]}`, `{"role":"user","content":[{"type":"b"},{"type":"a"}]}`},
		{"name", `{"role":"user","content":"hi","name":"a"}`, `{"role":"user","content":"hi","name":"b"}`},
		{"name vs none", `{"role":"user","content":"hi","name":"a"}`, `{"role":"user","content":"hi"}`},
		{"refusal", `{"role":"assistant","refusal":"a"}`, `{"role":"assistant","refusal":"b"}`},
		{"refusal vs content", `{"role":"assistant","refusal":"a"}`, `{"role":"assistant","content":"a"}`},
		{"tool_call_id", `{"role":"tool","tool_call_id":"a","content":"x"}`, `{"role":"tool","tool_call_id":"b","content":"x"}`},
		{"tool call id", `{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}}]}`, `{"role":"assistant","tool_calls":[{"id":"b","function":{"name":"f","arguments":"{}"}}]}`},
		{"tool call name", `{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}}]}`, `{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"g","arguments":"{}"}}]}`},
		{"tool call arguments", `{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"{\"x\":1}"}}]}`, `{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"{\"x\":2}"}}]}`},
		{"arguments string whitespace is significant", `{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"{\"x\":\"a b\"}"}}]}`, `{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"{\"x\":\"ab\"}"}}]}`},
		{"tool call count", `{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}}]}`, `{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}},{"id":"a","function":{"name":"f","arguments":"{}"}}]}`},
		{"field boundaries", `{"role":"user","content":"ab","name":"c"}`, `{"role":"user","content":"a","name":"bc"}`},
		{"null vs empty array element", `{"role":"user","content":[{"type":"x","v":[null]}]}`, `{"role":"user","content":[{"type":"x","v":[]}]}`},
		{"number vs string", `{"role":"user","content":[{"type":"x","v":1}]}`, `{"role":"user","content":[{"type":"x","v":"1"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if ha, hb := Hash([]byte(tt.a)), Hash([]byte(tt.b)); ha == hb {
				t.Errorf("got equal hashes %x, want different for\n%s\n%s", ha, tt.a, tt.b)
			}
		})
	}
}

// TestHashStable pins the hashes of messages without ignored members:
// stored messages keep the hash they were written with, so the canonical
// form of such messages must never change.
func TestHashStable(t *testing.T) {
	prototest.HashesPinned(t, Hash, []prototest.HashCase{
		{Name: "a string content", Raw: `{"role":"user","content":"hi"}`, Want: 0x47517d7b7cb73301},
		{Name: "a text and an image part", Raw: `{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u","detail":"low"}}]}`, Want: 0xecc801c8ef950766},
		{Name: "a text and an empty part", Raw: `{"role":"user","content":[{"type":"text","text":"a"},{}]}`, Want: 0x8184fa6050b5e3cf},
		{Name: "a tool call", Raw: `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\": 1}"}}]}`, Want: 0x41b8a3410c1cbcbc},
		{Name: "a tool result's part with an extra member", Raw: `{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"a","extra":{"k":[1,null,"x"]}}]}`, Want: 0x47ab504e02c59947},
	})
}

// TestHashAllocations checks that Hash allocates nothing but what gjson
// needs to unescape a string that has escapes.
func TestHashAllocations(t *testing.T) {
	tests := []struct {
		name string
		msg  string
		want float64
	}{
		{"user text", `{"role":"user","content":"What is the weather in Paris today?","name":"bob"}`, 0},
		{"tool call", `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]}`, 0},
		{"tool result", `{"role":"tool","tool_call_id":"call_1","content":"sunny, 21C"}`, 0},
		{"content parts", `{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u","detail":"low"}}]}`, 0},
		{"cache hints", `{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"image_url","image_url":{"url":"u"},"cache_control":{"type":"ephemeral"}}]}`, 0},
		{"escaped arguments", `{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"{\"city\": \"Paris\"}"}}]}`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := []byte(tt.msg)
			Hash(raw) // warm the pool
			if got := testing.AllocsPerRun(100, func() { Hash(raw) }); got > tt.want {
				t.Errorf("got %v allocations, want at most %v", got, tt.want)
			}
		})
	}
}
