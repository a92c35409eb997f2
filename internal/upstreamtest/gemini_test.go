package upstreamtest

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestGeminiIsStrict checks that the fake refuses what the Gemini API
// refuses, and answers what it answers.
func TestGeminiIsStrict(t *testing.T) {
	s := NewTB(t)
	call := `{"role":"model","parts":[{"functionCall":{"name":"f","args":{}},"thoughtSignature":"` + GeminiSignature("f") + `"}]}`
	tests := []struct {
		name, path, key, body string
		status                int
		want                  string
	}{
		{"ok", ":generateContent", "k", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, 200, "echo: hi"},
		{"no key", ":generateContent", "", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, 403, "PERMISSION_DENIED"},
		{"unknown member", ":generateContent", "k", `{"model":"m","contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, 400, "Unknown name"},
		{"no contents", ":generateContent", "k", `{}`, 400, "contents is not specified"},
		{"two model contents in a row", ":generateContent", "k", `{"contents":[{"role":"user","parts":[{"text":"a"}]},{"role":"model","parts":[{"text":"b"}]},{"role":"model","parts":[{"text":"c"}]}]}`, 400, "alternate"},
		{"empty parts", ":generateContent", "k", `{"contents":[{"role":"user","parts":[]}]}`, 400, "must not be empty"},
		{"answered by name", ":generateContent", "k", `{"contents":[{"role":"user","parts":[{"text":"a"}]},` + call + `,{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]}]}`, 200, "candidates"},
		{"answered by the wrong name", ":generateContent", "k", `{"contents":[{"role":"user","parts":[{"text":"a"}]},` + call + `,{"role":"user","parts":[{"functionResponse":{"name":"g","response":{}}}]}]}`, 400, "answers no function call"},
		{"unanswered", ":generateContent", "k", `{"contents":[{"role":"user","parts":[{"text":"a"}]},` + call + `,{"role":"user","parts":[{"text":"b"}]}]}`, 400, "number of function response parts"},
		{"by id", ":generateContent", "k", `{"contents":[{"role":"user","parts":[{"text":"a"}]},{"role":"model","parts":[{"functionCall":{"id":"c1","name":"f","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"id":"c2","name":"f","response":{}}}]}]}`, 400, "answers no function call"},
		{"bad signature", ":generateContent", "k", `{"contents":[{"role":"user","parts":[{"text":"a"}]},{"role":"model","parts":[{"functionCall":{"name":"f","args":{}},"thoughtSignature":"x"}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]}]}`, 400, "Corrupted"},
		{"stream without sse", ":streamGenerateContent", "k", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, 400, "alt=sse"},
		{"stream", ":streamGenerateContent?alt=sse", "k", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, 200, `"finishReason":"STOP"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", s.URL()+"/models/gemini-2.5-flash"+tt.path, strings.NewReader(tt.body))
			if tt.key != "" {
				req.Header.Set("x-goog-api-key", tt.key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || !strings.Contains(string(b), tt.want) {
				t.Errorf("got %d %s, want %d with %q", resp.StatusCode, b, tt.status, tt.want)
			}
			if tt.status != 200 && gjson.GetBytes(b, "error.code").Int() != int64(tt.status) {
				t.Errorf("error %s: want Gemini's shape", b)
			}
		})
	}
}
