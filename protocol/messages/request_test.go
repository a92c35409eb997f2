package messages

import (
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/protocol/internal/prototest"
	"github.com/recallproxy/recall/wire"
)

// The fixture is an agent's request as the Messages reference shapes it
// (https://docs.anthropic.com/en/api/messages): system blocks with a
// cache hint, a function tool and a server tool, tool_choice any,
// thinking, and a system message placed among the messages.
func TestParseRequestFixture(t *testing.T) {
	body, err := os.ReadFile("testdata/request_agent.json")
	if err != nil {
		t.Fatal(err)
	}
	req, err := Ingress{}.ParseRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	temp, topP := 0.5, 0.9
	if req.Protocol != wire.Messages || req.Model != "claude-sonnet-4-5-20250929" || req.MaxTokens != 1024 || !req.Stream || req.Choices != 1 {
		t.Errorf("got protocol %v model %q max_tokens %d stream %v choices %d", req.Protocol, req.Model, req.MaxTokens, req.Stream, req.Choices)
	}
	if !reflect.DeepEqual(req.Temperature, &temp) || !reflect.DeepEqual(req.TopP, &topP) || !reflect.DeepEqual(req.Stop, []string{"\n\nHuman:"}) {
		t.Errorf("got temperature %v top_p %v stop %q", req.Temperature, req.TopP, req.Stop)
	}
	if req.ToolChoice != "required" {
		t.Errorf("tool_choice: got %q, want required", req.ToolChoice)
	}
	wantInstr := []string{
		`{"role":"system","content":[{"type": "text", "text": "You are a coding agent."}]}`,
		`{"role":"system","content":[{"type": "text", "text": "The repository is recall.", "cache_control": {"type": "ephemeral"}}]}`,
	}
	if got := strs(req.Instructions); !reflect.DeepEqual(got, wantInstr) {
		t.Errorf("instructions: got %q, want %q", got, wantInstr)
	}
	if len(req.Messages) != 4 || !reflect.DeepEqual(req.InPlace, []int{2}) {
		t.Errorf("got %d messages, in place %v; want 4, [2]", len(req.Messages), req.InPlace)
	}
	if (Codec{}).Role(req.Messages[3]) != wire.RoleTool {
		t.Errorf("message 3: got role %q, want tool", (Codec{}).Role(req.Messages[3]))
	}
	if len(req.Tools) != 1 || req.Tools[0].Name != "get_weather" || req.Tools[0].Description == "" || len(req.Tools[0].Parameters) == 0 {
		t.Errorf("tools: got %+v, want get_weather only (web_search is a server tool)", req.Tools)
	}
	if len(req.ToolsRaw) == 0 {
		t.Error("tools raw: got none")
	}
}

func TestParseRequestSystemString(t *testing.T) {
	req, err := Ingress{}.ParseRequest([]byte(`{"model":"m","max_tokens":5,"system":"Be brief.","messages":[{"role":"user","content":"hi"}],"tool_choice":{"type":"tool","name":"f"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := strs(req.Instructions); !reflect.DeepEqual(got, []string{`{"role":"system","content":"Be brief."}`}) {
		t.Errorf("got %q", got)
	}
	if req.ToolChoice != "f" || req.InPlace != nil {
		t.Errorf("got tool choice %q in place %v, want f and none", req.ToolChoice, req.InPlace)
	}
}

func TestParseRequestErrors(t *testing.T) {
	tests := []struct {
		name, body, param string
	}{
		{"not json", `{"model":`, ""},
		{"not an object", `[]`, "body"},
		{"no max_tokens", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "max_tokens"},
		{"max_tokens not an integer", `{"model":"m","max_tokens":1.5,"messages":[{"role":"user","content":"hi"}]}`, "max_tokens"},
		{"max_tokens zero", `{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, "max_tokens"},
		{"no model", `{"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, "model"},
		{"no messages", `{"model":"m","max_tokens":5}`, "messages"},
		{"empty messages", `{"model":"m","max_tokens":5,"messages":[]}`, "messages"},
		{"bad role", `{"model":"m","max_tokens":5,"messages":[{"role":"tool","content":"hi"}]}`, "messages.0.role"},
		{"no content", `{"model":"m","max_tokens":5,"messages":[{"role":"user"}]}`, "messages.0.content"},
		{"content a number", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":1}]}`, "messages.0.content"},
		{"block without type", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"text":"x"}]}]}`, "messages.1.content.0.type"},
		{"tool_result without id", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result"}]}]}`, "messages.0.content.0.tool_use_id"},
		{"system a number", `{"model":"m","max_tokens":5,"system":1,"messages":[{"role":"user","content":"hi"}]}`, "system"},
		{"system image", `{"model":"m","max_tokens":5,"system":[{"type":"image"}],"messages":[{"role":"user","content":"hi"}]}`, "system.0"},
		{"tool without schema", `{"model":"m","max_tokens":5,"tools":[{"name":"f"}],"messages":[{"role":"user","content":"hi"}]}`, "tools.0.input_schema"},
		{"tool_choice unknown", `{"model":"m","max_tokens":5,"tool_choice":{"type":"maybe"},"messages":[{"role":"user","content":"hi"}]}`, "tool_choice.type"},
		{"stream a string", `{"model":"m","max_tokens":5,"stream":"yes","messages":[{"role":"user","content":"hi"}]}`, "stream"},
		{"stop_sequences of numbers", `{"model":"m","max_tokens":5,"stop_sequences":[1],"messages":[{"role":"user","content":"hi"}]}`, "stop_sequences.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Ingress{}.ParseRequest([]byte(tt.body))
			if e := prototest.BadRequest(t, err, tt.param); apierr.AnthropicType(e.Status) != "invalid_request_error" {
				t.Errorf("got type %q, want invalid_request_error", apierr.AnthropicType(e.Status))
			}
		})
	}
}

// A missing max_tokens is answered in Anthropic's own words and shape.
func TestMissingMaxTokensShape(t *testing.T) {
	_, err := Ingress{}.ParseRequest([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	var e *apierr.Error
	errors.As(err, &e)
	want := `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}`
	if got := string(apierr.Anthropic(e)); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
