package gemini

import (
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/protocol/internal/prototest"
	_ "github.com/recallproxy/recall/protocol/messages" // its codec, for TestSignatureLeftOutElsewhere
	"github.com/recallproxy/recall/wire"
)

func TestRole(t *testing.T) {
	tests := []struct {
		name, raw, want string
	}{
		{"user", `{"role":"user","parts":[{"text":"hi"}]}`, wire.RoleUser},
		{"no role is user", `{"parts":[{"text":"hi"}]}`, wire.RoleUser},
		{"model", `{"role":"model","parts":[{"text":"hi"}]}`, wire.RoleAssistant},
		{"responses only", `{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"output":"x"}}}]}`, wire.RoleTool},
		{"snake_case responses", `{"role":"user","parts":[{"function_response":{"name":"f","response":{}}}]}`, wire.RoleTool},
		{"responses and text", `{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}},{"text":"and"}]}`, wire.RoleUser},
		{"instruction", `{"role":"system","parts":[{"text":"be brief"}]}`, wire.RoleSystem},
		{"unknown role", `{"role":"function","parts":[{"text":"x"}]}`, ""},
		{"no parts", `{"role":"user"}`, ""},
		{"not an object", `[1]`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (Codec{}).Role([]byte(tt.raw)); got != tt.want {
				t.Errorf("Role(%s): got %q, want %q", tt.raw, got, tt.want)
			}
		})
	}
}

// TestPairing checks that calls and responses pair by id when they have
// one and by name and order when they do not, each message read alone.
func TestPairing(t *testing.T) {
	c := Codec{}
	tests := []struct {
		name           string
		call, response string
		want           []string
	}{
		{"ids", `{"role":"model","parts":[{"functionCall":{"id":"a1","name":"f","args":{}}},{"functionCall":{"id":"a2","name":"f","args":{}}}]}`,
			`{"role":"user","parts":[{"functionResponse":{"id":"a2","name":"f","response":{}}},{"functionResponse":{"id":"a1","name":"f","response":{}}}]}`,
			[]string{"a1", "a2"}},
		{"by name and order", `{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}},{"functionCall":{"name":"g.x","args":{}}},{"functionCall":{"name":"f","args":{}}}]}`,
			`{"role":"user","parts":[{"functionResponse":{"name":"g.x","response":{}}},{"functionResponse":{"name":"f","response":{}}},{"functionResponse":{"name":"f","response":{}}}]}`,
			[]string{"gemini-f-0", "gemini-g_x-0", "gemini-f-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := c.Calls(nil, []byte(tt.call))
			if !slices.Equal(calls, tt.want) {
				t.Errorf("Calls: got %q, want %q", calls, tt.want)
			}
			results := c.Results(nil, []byte(tt.response))
			slices.Sort(results)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if !slices.Equal(results, want) {
				t.Errorf("Results: got %q, want %q", results, want)
			}
			if got := c.Results(nil, []byte(tt.call)); len(got) != 0 {
				t.Errorf("Results of the model's content: got %q, want none", got)
			}
			if got := c.Calls(nil, []byte(tt.response)); len(got) != 0 {
				t.Errorf("Calls of the user's content: got %q, want none", got)
			}
		})
	}
}

func TestKeepCalls(t *testing.T) {
	raw := []byte(`{"role":"model","parts":[{"text":"two calls"},{"functionCall":{"name":"f","args":{"a":1}},"thoughtSignature":"s1"},{"functionCall":{"name":"g","args":{}}}]}`)
	out, ok := Codec{}.KeepCalls(raw, func(id string) bool { return id == "gemini-g-0" })
	if !ok {
		t.Fatal("KeepCalls: reported nothing left")
	}
	want := `{"role":"model","parts":[{"text":"two calls"},{"functionCall":{"name":"g","args":{}}}]}`
	if string(out) != want {
		t.Errorf("KeepCalls: got %s, want %s", out, want)
	}
	if out, _ := (Codec{}).KeepCalls(raw, func(string) bool { return true }); &out[0] != &raw[0] {
		t.Error("KeepCalls keeping everything: got a copy, want raw itself")
	}
	thoughts := []byte(`{"role":"model","parts":[{"text":"hmm","thought":true},{"functionCall":{"name":"f","args":{}}}]}`)
	if _, ok := (Codec{}).KeepCalls(thoughts, func(string) bool { return false }); ok {
		t.Error("KeepCalls leaving only a thought: reported something to send")
	}
}

func TestCutResults(t *testing.T) {
	raw := []byte(`{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"output":"abcdef"}}},{"functionResponse":{"name":"g","response":{"rows":[1,2,3]}}},{"text":"short"}]}`)
	out, ok := Codec{}.CutResults(raw, 3, func(kept, total int) string { return "[cut]" })
	if !ok {
		t.Fatal("CutResults: reported nothing cut")
	}
	m := gjson.ParseBytes(out)
	if got := m.Get("parts.0.functionResponse.response.output").Str; got != "abc\n[cut]" {
		t.Errorf("cut output: got %q", got)
	}
	if got := m.Get("parts.1.functionResponse.response.output").Str; got != `{"r`+"\n[cut]" {
		t.Errorf("cut JSON response: got %q", got)
	}
	if got := m.Get("parts.2.text").Str; got != "short" {
		t.Errorf("text part: got %q", got)
	}
	if _, ok := (Codec{}).CutResults(raw, 100, func(int, int) string { return "" }); ok {
		t.Error("CutResults under the limit: reported a cut")
	}
}

// TestRoundTrip decodes contents, encodes them back and decodes again:
// every part Gemini and the canonical model share survives, the
// signature stays on its part, and synthetic ids are not written.
func TestRoundTrip(t *testing.T) {
	c := Codec{}
	in := []string{
		`{"role":"user","parts":[{"text":"weather?"},{"inlineData":{"mimeType":"image/png","data":"AAA"}}]}`,
		`{"role":"model","parts":[{"text":"thinking it over","thought":true},{"functionCall":{"name":"weather","args":{"city":"Paris"}},"thoughtSignature":"c2ln"},{"functionCall":{"id":"x9","name":"time","args":{}}}]}`,
		`{"role":"user","parts":[{"functionResponse":{"name":"weather","response":{"output":"sunny"}}},{"functionResponse":{"id":"x9","name":"time","response":{"error":"no clock"}}}]}`,
		`{"role":"model","parts":[{"text":"Sunny."}]}`,
	}
	var msgs []wire.Message
	for _, raw := range in {
		m, err := c.Decode([]byte(raw))
		if err != nil {
			t.Fatalf("Decode(%s): %v", raw, err)
		}
		msgs = append(msgs, m)
	}
	out, err := c.Encode(nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("Encode: got %d contents, want %d: %s", len(out), len(in), out)
	}
	for i := range in {
		if c.Hash(out[i]) != c.Hash([]byte(in[i])) {
			t.Errorf("content %d: got %s, want %s (up to the hash)", i, out[i], in[i])
		}
	}
	if strings.Contains(string(out[1]), "gemini-") || strings.Contains(string(out[2]), "gemini-") {
		t.Errorf("synthetic ids written: %s %s", out[1], out[2])
	}
	if got := gjson.GetBytes(out[1], "parts.1.thoughtSignature").Str; got != "c2ln" {
		t.Errorf("signature: got %q on %s, want it on the call", got, out[1])
	}
	if !gjson.GetBytes(out[2], "parts.1.functionResponse.response.error").Exists() {
		t.Errorf("failed tool: got %s, want an error response", out[2])
	}
}

// TestSignatureLeftOutElsewhere checks that a signature and thoughts go
// to Gemini only: other protocols' codecs leave the Opaque parts out.
func TestSignatureLeftOutElsewhere(t *testing.T) {
	raw := []byte(`{"role":"model","parts":[{"text":"hmm","thought":true},{"functionCall":{"name":"f","args":{}},"thoughtSignature":"c2ln"}]}`)
	m, err := Codec{}.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	opaque := 0
	for _, p := range m.Parts {
		if p.Kind == wire.Opaque && p.Origin == wire.Gemini {
			opaque++
		}
	}
	if opaque != 2 {
		t.Fatalf("Decode: got %d Gemini opaque parts, want 2 (the thought and the signature): %+v", opaque, m.Parts)
	}
	for _, p := range []wire.Protocol{wire.ChatCompletions, wire.Messages} {
		out, err := wire.For(p).Encode(nil, []wire.Message{m})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out {
			if strings.Contains(string(o), "c2ln") || strings.Contains(string(o), "hmm") {
				t.Errorf("%v: got %s, want no signature nor thought", p, o)
			}
		}
	}
}

// TestEncodeShapesTurns checks that chat-shaped canonical messages become
// alternating contents: tool messages one user content, responses named
// after their calls, system messages instructions.
func TestEncodeShapesTurns(t *testing.T) {
	msgs := []wire.Message{
		{Role: wire.RoleSystem, Parts: []wire.Part{{Kind: wire.Text, Text: "be brief"}}},
		{Role: wire.RoleUser, Parts: []wire.Part{{Kind: wire.Text, Text: "hi"}}},
		{Role: wire.RoleAssistant, Parts: []wire.Part{{Kind: wire.ToolCall, CallID: "call_1", Name: "f", Arguments: `{"a":1}`}, {Kind: wire.ToolCall, CallID: "call_2", Name: "g", Arguments: `not json`}}},
		{Role: wire.RoleTool, Parts: []wire.Part{{Kind: wire.ToolResult, CallID: "call_1", Text: "one"}}},
		{Role: wire.RoleTool, Parts: []wire.Part{{Kind: wire.ToolResult, CallID: "call_2", Text: "two"}}},
		{Role: wire.RoleUser, Parts: []wire.Part{{Kind: wire.Text, Text: "thanks"}}},
	}
	out, err := Codec{}.Encode(nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"role":"system","parts":[{"text":"be brief"}]}`,
		`{"role":"user","parts":[{"text":"hi"}]}`,
		`{"role":"model","parts":[{"functionCall":{"name":"f","args":{"a":1},"id":"call_1"}},{"functionCall":{"name":"g","args":{},"id":"call_2"}}]}`,
		`{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"output":"one"},"id":"call_1"}},{"functionResponse":{"name":"g","response":{"output":"two"},"id":"call_2"}},{"text":"thanks"}]}`,
	}
	if len(out) != len(want) {
		t.Fatalf("Encode: got %d contents %s, want %d", len(out), out, len(want))
	}
	for i := range want {
		if string(out[i]) != want[i] {
			t.Errorf("content %d: got %s, want %s", i, out[i], want[i])
		}
	}
}

func TestRolesOwnNothing(t *testing.T) {
	prototest.RolesOwnNothing(t, Codec{}, []string{
		`{"role":"model","parts":[{"text":"hi"}]}`,
		`{"role":"user","parts":[{"text":"x"}]}`,
		`{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"r":1}}}]}`,
	})
}
