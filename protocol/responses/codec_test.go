package responses

import (
	"slices"
	"strconv"
	"testing"

	"github.com/recallproxy/recall/protocol/internal/prototest"
	"github.com/recallproxy/recall/wire"
)

func TestRoleCallsResults(t *testing.T) {
	tests := []struct {
		item           string
		role           string
		calls, results []string
	}{
		{`{"role":"user","content":"hi"}`, "user", nil, nil},
		{`{"type":"message","role":"developer","content":"be brief"}`, "developer", nil, nil},
		{`{"type":"message","role":"system","content":"x"}`, "system", nil, nil},
		{`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"x"}]}`, "assistant", nil, nil},
		{`{"type":"function_call","call_id":"call_1","name":"f","arguments":"{}"}`, "assistant", []string{"call_1"}, nil},
		{`{"type":"function_call_output","call_id":"call_1","output":"42"}`, "tool", nil, []string{"call_1"}},
		{`{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"}`, "assistant", nil, nil},
		{`{"type":"custom_tool_call","call_id":"call_2","name":"apply_patch","input":"..."}`, "assistant", []string{"call_2"}, nil},
		{`{"type":"custom_tool_call_output","call_id":"call_2","output":"done"}`, "tool", nil, []string{"call_2"}},
		{`{"type":"web_search_call","id":"ws_1","status":"completed"}`, "assistant", nil, nil},
		{`{"type":"local_shell_call","call_id":"c","id":"ls_1"}`, "assistant", nil, nil},
		{`{"type":"message","role":"tool","content":"x"}`, "", nil, nil},
		{`{"type":"item_reference","id":"msg_1"}`, "", nil, nil},
		{`[1]`, "", nil, nil},
	}
	for _, tt := range tests {
		raw := []byte(tt.item)
		if got := (Codec{}).Role(raw); got != tt.role {
			t.Errorf("Role(%s): got %q, want %q", tt.item, got, tt.role)
		}
		if got := (Codec{}).Calls(nil, raw); !slices.Equal(got, tt.calls) {
			t.Errorf("Calls(%s): got %q, want %q", tt.item, got, tt.calls)
		}
		if got := (Codec{}).Results(nil, raw); !slices.Equal(got, tt.results) {
			t.Errorf("Results(%s): got %q, want %q", tt.item, got, tt.results)
		}
	}
}

func TestKeepCalls(t *testing.T) {
	call := []byte(`{"type":"function_call","call_id":"call_1","name":"f","arguments":"{}"}`)
	if got, ok := (Codec{}).KeepCalls(call, func(string) bool { return true }); !ok || string(got) != string(call) {
		t.Errorf("kept: got %s %v, want the item unchanged", got, ok)
	}
	if got, ok := (Codec{}).KeepCalls(call, func(id string) bool { return id != "call_1" }); ok || got != nil {
		t.Errorf("dropped: got %s %v, want nil false", got, ok)
	}
	msg := []byte(`{"role":"user","content":"hi"}`)
	if _, ok := (Codec{}).KeepCalls(msg, func(string) bool { return false }); !ok {
		t.Error("a message without calls: got dropped, want kept")
	}
}

func TestCutResults(t *testing.T) {
	marker := func(kept, total int) string { return "[cut " + strconv.Itoa(kept) + "/" + strconv.Itoa(total) + "]" }
	tests := []struct {
		name, in, want string
		cut            bool
	}{
		{"string output", `{"type":"function_call_output","call_id":"c","output":"héllo world"}`,
			`{"type":"function_call_output","call_id":"c","output":"héllo\n[cut 5/11]"}`, true},
		{"parts output", `{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"abcdefgh"},{"type":"input_image","image_url":"u"}]}`,
			`{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"abcde\n[cut 5/8]"},{"type":"input_image","image_url":"u"}]}`, true},
		{"short output", `{"type":"function_call_output","call_id":"c","output":"abc"}`,
			`{"type":"function_call_output","call_id":"c","output":"abc"}`, false},
		{"not a result", `{"role":"user","content":"abcdefghij"}`, `{"role":"user","content":"abcdefghij"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.in)
			got, cut := (Codec{}).CutResults(in, 5, marker)
			if string(got) != tt.want || cut != tt.cut {
				t.Errorf("got %s %v, want %s %v", got, cut, tt.want, tt.cut)
			}
			if string(in) != tt.in {
				t.Errorf("input modified: %s", in)
			}
		})
	}
}

// Decoding then encoding keeps what the canonical model carries; the
// pieces only a Responses upstream reads survive as opaque items.
func TestDecodeEncodeRoundTrip(t *testing.T) {
	items := []string{
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"look"},{"type":"input_image","image_url":"https://x/a.png","detail":"auto"}]}`,
		`{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"}`,
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"calling","annotations":[]},{"type":"refusal","refusal":"no"}]}`,
		`{"type":"function_call","call_id":"call_1","name":"f","arguments":"{\"a\":1}"}`,
		`{"type":"function_call_output","call_id":"call_1","output":"42"}`,
		`{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"q"}}`,
	}
	for _, it := range items {
		m, err := (Codec{}).Decode([]byte(it))
		if err != nil {
			t.Fatalf("decode %s: %v", it, err)
		}
		out, err := (Codec{}).Encode(nil, []wire.Message{m})
		if err != nil || len(out) != 1 {
			t.Fatalf("encode %s: got %d items, %v", it, len(out), err)
		}
		if (Codec{}).Hash(out[0]) != (Codec{}).Hash([]byte(it)) {
			t.Errorf("round trip: got %s, want the equivalent of %s", out[0], it)
		}
	}
}

// Messages of another protocol, in the canonical model, become items; an
// assistant message with text and two calls splits into three items, and
// another protocol's opaque part is left out.
func TestEncodeFromCanonical(t *testing.T) {
	msgs := []wire.Message{
		{Role: wire.RoleUser, Parts: []wire.Part{{Kind: wire.Text, Text: "weather?"}}},
		{Role: wire.RoleAssistant, Parts: []wire.Part{
			{Kind: wire.Opaque, Origin: wire.Messages, Raw: []byte(`{"type":"thinking","thinking":"x","signature":"s"}`)},
			{Kind: wire.Text, Text: "checking"},
			{Kind: wire.ToolCall, CallID: "c1", Name: "w", Arguments: `{"city":"Paris"}`},
			{Kind: wire.ToolCall, CallID: "c2", Name: "w", Arguments: `{"city":"Rome"}`},
		}},
		{Role: wire.RoleTool, Parts: []wire.Part{{Kind: wire.ToolResult, CallID: "c1", Text: "sunny"}, {Kind: wire.ToolResult, CallID: "c2", Text: "rain"}}},
	}
	out, err := (Codec{}).Encode(nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"weather?"}]}`,
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"checking","annotations":[]}]}`,
		`{"type":"function_call","call_id":"c1","name":"w","arguments":"{\"city\":\"Paris\"}"}`,
		`{"type":"function_call","call_id":"c2","name":"w","arguments":"{\"city\":\"Rome\"}"}`,
		`{"type":"function_call_output","call_id":"c1","output":"sunny"}`,
		`{"type":"function_call_output","call_id":"c2","output":"rain"}`,
	}
	if len(out) != len(want) {
		t.Fatalf("items: got %q, want %q", out, want)
	}
	for i := range want {
		if string(out[i]) != want[i] {
			t.Errorf("item %d: got %s, want %s", i, out[i], want[i])
		}
	}
}

func TestRolesOwnNothing(t *testing.T) {
	prototest.RolesOwnNothing(t, Codec{}, []string{
		`{"role":"assistant","content":"hi"}`,                                                 // Decode's one-pass read
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"x"}]}`, // its tree read
		`{"type":"message","role":"developer","content":"be brief"}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"x"}]}`,
	})
}
