package upstreamtest

import (
	"net/http"
	"strings"
	"testing"
)

// TestFileShapes: each route takes its API's file shapes and refuses
// malformed ones.
func TestFileShapes(t *testing.T) {
	s := NewTB(t)
	const pdf = "data:application/pdf;base64,JVBERi0="
	chat := func(part string) string {
		return `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"},` + part + `]}]}`
	}
	resp := func(part string) string {
		return `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"hi"},` + part + `]}]}`
	}
	anth := func(block string) string {
		return `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[` + block + `,{"type":"text","text":"hi"}]}]}`
	}
	gem := func(part string) string {
		return `{"contents":[{"role":"user","parts":[{"text":"hi"},` + part + `]}]}`
	}
	tests := []struct {
		name, path, body string
		status           int
	}{
		{"chat file_data", "/chat/completions", chat(`{"type":"file","file":{"filename":"x.pdf","file_data":"` + pdf + `"}}`), 200},
		{"chat file_id", "/chat/completions", chat(`{"type":"file","file":{"file_id":"file-abc"}}`), 200},
		{"chat file with no file", "/chat/completions", chat(`{"type":"file"}`), 400},
		{"chat file_data not a data URL", "/chat/completions", chat(`{"type":"file","file":{"filename":"x.pdf","file_data":"JVBERi0="}}`), 400},
		{"chat file_data without filename", "/chat/completions", chat(`{"type":"file","file":{"file_data":"` + pdf + `"}}`), 400},
		{"responses file_data", "/responses", resp(`{"type":"input_file","filename":"x.pdf","file_data":"` + pdf + `"}`), 200},
		{"responses file_id", "/responses", resp(`{"type":"input_file","file_id":"file-abc"}`), 200},
		{"responses file_url", "/responses", resp(`{"type":"input_file","file_url":"https://example.com/x.pdf"}`), 200},
		{"responses input_file empty", "/responses", resp(`{"type":"input_file"}`), 400},
		{"responses file_data without filename", "/responses", resp(`{"type":"input_file","file_data":"` + pdf + `"}`), 400},
		{"anthropic base64 PDF", "/messages", anth(`{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0="}}`), 200},
		{"anthropic text", "/messages", anth(`{"type":"document","source":{"type":"text","media_type":"text/plain","data":"hello"}}`), 200},
		{"anthropic url", "/messages", anth(`{"type":"document","source":{"type":"url","url":"https://example.com/x.pdf"}}`), 200},
		{"anthropic base64 of another media type", "/messages", anth(`{"type":"document","source":{"type":"base64","media_type":"application/msword","data":"AAAA"}}`), 400},
		{"anthropic unknown source", "/messages", anth(`{"type":"document","source":{"type":"file_data","data":"AAAA"}}`), 400},
		{"gemini inlineData", "/models/m:generateContent", gem(`{"inlineData":{"mimeType":"application/pdf","data":"JVBERi0="}}`), 200},
		{"gemini inlineData without mimeType", "/models/m:generateContent", gem(`{"inlineData":{"data":"JVBERi0="}}`), 400},
		{"gemini fileData without fileUri", "/models/m:generateContent", gem(`{"fileData":{"mimeType":"application/pdf"}}`), 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, s.URL()+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			switch {
			case strings.HasPrefix(tc.path, "/models/"):
				req.Header.Set("x-goog-api-key", "k") // Gemini refuses a Bearer beside it
			case tc.path == "/messages":
				req.Header.Set("X-Api-Key", "k")
				req.Header.Set("Anthropic-Version", "2023-06-01")
			default:
				req.Header.Set("Authorization", "Bearer sk-test")
			}
			status, body := do(t, req)
			if status != tc.status {
				t.Fatalf("got %d %s, want %d", status, body.Raw, tc.status)
			}
		})
	}
}
