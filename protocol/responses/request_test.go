package responses

import (
	"errors"
	"strings"
	"testing"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/protocol/internal/prototest"
	"github.com/recallproxy/recall/wire"
)

func TestParseRequest(t *testing.T) {
	body := `{"model":"o4-mini","instructions":"Be brief.","stream":true,"max_output_tokens":300,
		"input":[{"role":"developer","content":"Use metric units."},{"role":"user","content":"weather?"},
		 {"type":"function_call","call_id":"c1","name":"w","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"sunny"}],
		"tools":[{"type":"function","name":"w","description":"weather","parameters":{"type":"object"},"strict":true},{"type":"web_search"}],
		"tool_choice":{"type":"function","name":"w"},"temperature":0.5,"top_p":0.9,"store":false,
		"previous_response_id":"resp_0","conversation":{"id":"conv_1"},"reasoning":{"effort":"low"}}`
	req, err := Ingress{}.ParseRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if req.Model != "o4-mini" || !req.Stream || req.MaxTokens != 300 || req.Store || req.Choices != 1 {
		t.Errorf("options: got model %q stream %v max %d store %v choices %d", req.Model, req.Stream, req.MaxTokens, req.Store, req.Choices)
	}
	if req.PreviousResponseID != "resp_0" || req.Conversation != "conv_1" || req.ToolChoice != "w" {
		t.Errorf("state: got prev %q conv %q tool_choice %q", req.PreviousResponseID, req.Conversation, req.ToolChoice)
	}
	if req.Temperature == nil || *req.Temperature != 0.5 || req.TopP == nil || *req.TopP != 0.9 {
		t.Errorf("sampling: got %v %v", req.Temperature, req.TopP)
	}
	if len(req.Instructions) != 2 || string(req.Instructions[0]) != `{"type":"message","role":"system","content":"Be brief."}` ||
		!strings.Contains(string(req.Instructions[1]), "metric") {
		t.Errorf("instructions: got %q", req.Instructions)
	}
	if len(req.Messages) != 3 || (Codec{}).Role(req.Messages[2]) != wire.RoleTool {
		t.Errorf("messages: got %q", req.Messages)
	}
	if len(req.Tools) != 1 || req.Tools[0].Name != "w" || req.Tools[0].Description != "weather" || string(req.Tools[0].Parameters) != `{"type":"object"}` {
		t.Errorf("tools: got %+v", req.Tools)
	}
	if !strings.Contains(string(req.ToolsRaw), "web_search") {
		t.Errorf("tools raw: got %s, want the web_search tool kept", req.ToolsRaw)
	}

	req, err = Ingress{}.ParseRequest([]byte(`{"model":"gpt-4o","input":"hi","conversation":"conv_2"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !req.Store || len(req.Messages) != 1 || (Codec{}).Role(req.Messages[0]) != wire.RoleUser || req.Conversation != "conv_2" {
		t.Errorf("string input: got store %v messages %q conversation %q", req.Store, req.Messages, req.Conversation)
	}
}

func TestParseRequestRejects(t *testing.T) {
	tests := []struct {
		name, body, param string
	}{
		{"not json", `{"input":`, ""},
		{"not an object", `[1]`, ""},
		{"no input", `{"model":"m"}`, "input"},
		{"input a number", `{"model":"m","input":3}`, "input"},
		{"empty input", `{"model":"m","input":[]}`, "input"},
		{"item not an object", `{"model":"m","input":["hi"]}`, "input[0]"},
		{"message without role", `{"model":"m","input":[{"type":"message","content":"x"}]}`, "input[0].role"},
		{"unknown role", `{"model":"m","input":[{"role":"tool","content":"x"}]}`, "input[0].role"},
		{"content a number", `{"model":"m","input":[{"role":"user","content":1}]}`, "input[0].content"},
		{"text part without text", `{"model":"m","input":[{"role":"user","content":[{"type":"input_text"}]}]}`, "input[0].content[0].text"},
		{"call without call_id", `{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, "input[0].call_id"},
		{"output without output", `{"model":"m","input":[{"type":"function_call_output","call_id":"c"}]}`, "input[0].output"},
		{"item reference", `{"model":"m","input":[{"type":"item_reference","id":"msg_1"}]}`, "input[0]"},
		{"no type, no role", `{"model":"m","input":[{"content":"x"}]}`, "input[0].type"},
		{"instructions an array", `{"model":"m","input":"x","instructions":["a"]}`, "instructions"},
		{"background", `{"model":"m","input":"x","background":true}`, "background"},
		{"stream a string", `{"model":"m","input":"x","stream":"yes"}`, "stream"},
		{"max_output_tokens negative", `{"model":"m","input":"x","max_output_tokens":-1}`, "max_output_tokens"},
		{"tool without name", `{"model":"m","input":"x","tools":[{"type":"function","parameters":{}}]}`, "tools[0].name"},
		{"tool parameters a string", `{"model":"m","input":"x","tools":[{"type":"function","name":"f","parameters":"x"}]}`, "tools[0].parameters"},
		{"tool_choice unknown", `{"model":"m","input":"x","tool_choice":"any"}`, "tool_choice"},
		{"conversation a number", `{"model":"m","input":"x","conversation":1}`, "conversation"},
		{"conversation without id", `{"model":"m","input":"x","conversation":{}}`, "conversation.id"},
		{"input twice", `{"model":"m","input":"x","input":"y"}`, "input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Ingress{}.ParseRequest([]byte(tt.body))
			prototest.BadRequest(t, err, tt.param)
		})
	}
}

func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","input":"hi"}`,
		`{"model":"m","instructions":"x","input":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"input_text","text":"t"}]}]}`,
		`{"input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"o"}]}],"tools":[{"type":"function","name":"f"}]}`,
		`{"input":[{"type":"reasoning","summary":[],"encrypted_content":"x"}],"conversation":{"id":"c"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := Ingress{}.ParseRequest(body)
		if err != nil {
			var e *apierr.Error
			if !errors.As(err, &e) || e.Status != 400 {
				t.Fatalf("error %v is not a 400 apierr", err)
			}
			return
		}
		for _, m := range append(append([][]byte(nil), req.Instructions...), req.Messages...) {
			if (Codec{}).Role(m) == "" {
				t.Fatalf("accepted an item with no role: %s", m)
			}
			_ = (Codec{}).Hash(m)
			if _, err := (Codec{}).Decode(m); err != nil {
				t.Fatalf("decode %s: %v", m, err)
			}
		}
		var up []byte
		if up, err = (Upstream{}).AppendBody(nil, req, req.Instructions, req.Messages); err != nil || !validJSON(up) {
			t.Fatalf("upstream body %s: %v", up, err)
		}
	})
}
