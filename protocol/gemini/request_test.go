package gemini

import (
	"strings"
	"testing"

	"github.com/recallproxy/recall/protocol/internal/prototest"
)

func TestParseRequestAt(t *testing.T) {
	body := []byte(`{"system_instruction":{"parts":[{"text":"be brief"}]},"contents":[{"role":"user","parts":[{"text":"hi"}]},` +
		`{"role":"model","parts":[{"text":"hello"}]}],"tools":[{"functionDeclarations":[{"name":"f","description":"d","parametersJsonSchema":{"type":"object"}}]},{"googleSearch":{}}],` +
		`"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["f"]}},"generationConfig":{"max_output_tokens":64,"temperature":0.2,"topP":0.9,"stopSequences":["END"]}}`)
	req, err := Ingress{}.ParseRequestAt([]byte("/v1beta/models/gemini-2.5-pro:streamGenerateContent"), body)
	if err != nil {
		t.Fatal(err)
	}
	if req.Model != "gemini-2.5-pro" || !req.Stream {
		t.Errorf("model %q stream %v: want the path's", req.Model, req.Stream)
	}
	if len(req.Instructions) != 1 || string(req.Instructions[0]) != `{"role":"system","parts":[{"text":"be brief"}]}` {
		t.Errorf("instructions: got %q", req.Instructions)
	}
	if len(req.Messages) != 2 || string(req.Messages[1]) != `{"role":"model","parts":[{"text":"hello"}]}` {
		t.Errorf("messages: got %q", req.Messages)
	}
	if len(req.Tools) != 1 || req.Tools[0].Name != "f" || string(req.Tools[0].Parameters) != `{"type":"object"}` || req.ToolChoice != "f" {
		t.Errorf("tools %+v, choice %q", req.Tools, req.ToolChoice)
	}
	if req.MaxTokens != 64 || *req.Temperature != 0.2 || *req.TopP != 0.9 || len(req.Stop) != 1 {
		t.Errorf("generation config: %d %v %v %v", req.MaxTokens, *req.Temperature, *req.TopP, req.Stop)
	}
}

func TestParseRequestAtRefuses(t *testing.T) {
	tests := []struct{ name, body, param string }{
		{"not JSON", `{`, ""},
		{"no contents", `{}`, "contents"},
		{"empty contents", `{"contents":[]}`, "contents"},
		{"bad role", `{"contents":[{"role":"assistant","parts":[{"text":"x"}]}]}`, "contents[0].role"},
		{"no parts", `{"contents":[{"role":"user"}]}`, "contents[0].parts"},
		{"two kinds of data", `{"contents":[{"parts":[{"text":"x","functionCall":{"name":"f"}}]}]}`, "contents[0].parts[0].data"},
		{"nameless call", `{"contents":[{"role":"model","parts":[{"functionCall":{"args":{}}}]}]}`, "contents[0].parts[0].functionCall.name"},
		{"bad max tokens", `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"maxOutputTokens":0}}`, "generation_config.max_output_tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Ingress{}.ParseRequestAt([]byte("/v1beta/models/m:generateContent"), []byte(tt.body))
			e := prototest.BadRequest(t, err, tt.param)
			if got := string(ErrorBody(e)); !strings.Contains(got, `"status":"INVALID_ARGUMENT"`) || !strings.Contains(got, `"code":400`) {
				t.Errorf("rendered: %s, want Gemini's shape", got)
			}
		})
	}
}

func TestServes(t *testing.T) {
	for path, want := range map[string]bool{
		"/v1beta/models/gemini-2.5-flash:generateContent":       true,
		"/v1beta/models/gemini-2.5-flash:streamGenerateContent": true,
		"/v1beta/models/gemini-2.5-flash:countTokens":           false,
		"/v1beta/models/:generateContent":                       false,
		"/v1beta/models/a/b:generateContent":                    false,
		"/v1/models/gemini-2.5-flash:generateContent":           true,
		"/v1/models/gpt-4o":                                     false,
	} {
		if got := (Ingress{}).Serves([]byte(path)); got != want {
			t.Errorf("Serves(%s): got %v, want %v", path, got, want)
		}
	}
}

// BenchmarkParseRequest parses a request of ten contents of prose, the
// shape an application resending a short history sends.
func BenchmarkParseRequest(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"systemInstruction":{"parts":[{"text":"You are terse."}]},"contents":[`)
	for i := range 10 {
		if i > 0 {
			sb.WriteByte(',')
		}
		role := "user"
		if i&1 == 1 {
			role = "model"
		}
		sb.WriteString(`{"role":"` + role + `","parts":[{"text":"` + strings.Repeat("Could you look at the figures again? ", 8) + `"}]}`)
	}
	sb.WriteString(`],"generationConfig":{"maxOutputTokens":256}}`)
	body := []byte(sb.String())
	path := []byte("/v1beta/models/gemini-2.5-flash:generateContent")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (Ingress{}).ParseRequestAt(path, body); err != nil {
			b.Fatal(err)
		}
	}
}
