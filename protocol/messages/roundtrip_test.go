package messages

import (
	"reflect"
	"strings"
	"testing"

	"github.com/recallproxy/recall/wire"
)

// Decoding a stored message and encoding it back gives a message that
// hashes like the original: nothing a client would notice is lost.
func TestDecodeEncodeRoundTrip(t *testing.T) {
	msgs := []string{
		`{"role":"user","content":"What's the weather?"}`,
		`{"role":"user","content":[{"type":"text","text":"Describe"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}`,
		`{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://example.com/a.jpg"}}]}`,
		`{"role":"assistant","content":[{"type":"thinking","thinking":"call it","signature":"EqQB"},{"type":"redacted_thinking","data":"EmwK"},{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"location":"SF","days":[1,2]}}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"15 degrees"},{"type":"tool_result","tool_use_id":"toolu_2","content":"failed","is_error":true}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"15 degrees"},{"type":"text","text":"and tomorrow?"}]}`,
		`{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"doc"}},{"type":"text","text":"summarise"}]}`,
	}
	c := Codec{}
	for _, raw := range msgs {
		m, err := c.Decode([]byte(raw))
		if err != nil {
			t.Fatalf("decode %s: %v", raw, err)
		}
		out, err := c.Encode(nil, []wire.Message{m})
		if err != nil || len(out) != 1 {
			t.Fatalf("encode %s: got %d messages, %v; want 1", raw, len(out), err)
		}
		if c.Hash(out[0]) != c.Hash([]byte(raw)) {
			t.Errorf("round trip of %s: got %s", raw, out[0])
		}
	}
}

func TestDecode(t *testing.T) {
	raw := `{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":"x"},{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":1}}]}`
	got, err := Codec{}.Decode([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	want := wire.Message{Role: wire.RoleAssistant, Parts: []wire.Part{
		{Kind: wire.Opaque, Origin: wire.Messages, Raw: []byte(`{"type":"thinking","thinking":"t","signature":"s"}`)},
		{Kind: wire.Text, Text: "x"},
		{Kind: wire.ToolCall, CallID: "toolu_1", Name: "f", Arguments: `{"a":1}`},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	img, _ := Codec{}.Decode([]byte(`{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/"}}]}`))
	if got, want := img.Parts[0].URL, "data:image/jpeg;base64,/9j/"; got != want {
		t.Errorf("image: got %q, want %q", got, want)
	}
	tr, _ := Codec{}.Decode([]byte(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"is_error":true}]}`))
	if want := (wire.Part{Kind: wire.ToolResult, CallID: "t", Text: "a\nb", IsError: true}); !reflect.DeepEqual(tr.Parts[0], want) || tr.Role != wire.RoleTool {
		t.Errorf("tool result: got %s %+v, want tool %+v", tr.Role, tr.Parts[0], want)
	}
	if _, err := (Codec{}).Decode([]byte(`{"role":"user","content":5}`)); err == nil {
		t.Error("content 5: got no error")
	}
}

// A conversation as chat completions shapes it, through the canonical
// model, becomes valid Anthropic turns: one user message of tool_result
// blocks right after the tool_use message, roles alternating, the system
// message as an instruction, another provider's reasoning left out.
func TestEncodeFromChatShape(t *testing.T) {
	chat := []wire.Message{
		{Role: wire.RoleSystem, Parts: []wire.Part{{Kind: wire.Text, Text: "Be brief."}}},
		{Role: wire.RoleUser, Parts: []wire.Part{{Kind: wire.Text, Text: "Weather in SF and NYC?"}}},
		{Role: wire.RoleAssistant, Parts: []wire.Part{
			{Kind: wire.Opaque, Origin: wire.Responses, Raw: []byte(`{"type":"reasoning","encrypted_content":"x"}`)},
			{Kind: wire.Text, Text: ""},
			{Kind: wire.ToolCall, CallID: "call_1", Name: "get_weather", Arguments: `{"city":"SF"}`},
			{Kind: wire.ToolCall, CallID: "call_2", Name: "get_weather", Arguments: `not json`},
		}},
		{Role: wire.RoleTool, Parts: []wire.Part{{Kind: wire.ToolResult, CallID: "call_1", Text: "15C"}}},
		{Role: wire.RoleTool, Parts: []wire.Part{{Kind: wire.ToolResult, CallID: "call_2", Text: "boom", IsError: true}}},
		{Role: wire.RoleUser, Parts: []wire.Part{{Kind: wire.Text, Text: "Thanks"}}},
		{Role: wire.RoleAssistant, Parts: []wire.Part{{Kind: wire.Refusal, Text: "I can't."}}},
		{Role: wire.RoleAssistant, Parts: []wire.Part{{Kind: wire.Opaque, Origin: wire.ChatCompletions, Raw: []byte(`{}`)}}},
	}
	got, err := Codec{}.Encode(nil, chat)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"role":"system","content":"Be brief."}`,
		`{"role":"user","content":[{"type":"text","text":"Weather in SF and NYC?"}]}`,
		`{"role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"SF"}},{"type":"tool_use","id":"call_2","name":"get_weather","input":{}}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"15C"},{"type":"tool_result","tool_use_id":"call_2","content":"boom","is_error":true},{"type":"text","text":"Thanks"}]}`,
		`{"role":"assistant","content":[{"type":"text","text":"I can't."}]}`,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d messages %s, want %d", len(got), strings.Join(strs(got), "\n"), len(want))
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Errorf("message %d: got %s, want %s", i, got[i], want[i])
		}
	}
}

func TestEncodeImage(t *testing.T) {
	got, _ := Codec{}.Encode(nil, []wire.Message{{Role: wire.RoleUser, Parts: []wire.Part{
		{Kind: wire.Image, URL: "data:image/png;base64,iVBO"},
		{Kind: wire.Image, URL: "https://example.com/a.png"},
	}}})
	want := `{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}},{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}]}`
	if len(got) != 1 || string(got[0]) != want {
		t.Errorf("got %s, want %s", strs(got), want)
	}
}

func strs(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}
