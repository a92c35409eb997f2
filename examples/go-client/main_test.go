package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestGoClient runs the example against a stand-in for Recall that answers
// a chat completion, a stream, or OpenAI's 401 for a missing key, and
// checks what the example prints and its exit code.
func TestGoClient(t *testing.T) {
	const noKeyBody = `{"error":{"message":"You didn't provide an API key.","type":"invalid_request_error","param":null,"code":null}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk-good" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(noKeyBody))
			return
		}
		if r.Header.Get("X-Conversation-ID") != "ada-1" {
			http.Error(w, "no conversation header", http.StatusBadRequest)
			return
		}
		if body, _ := io.ReadAll(r.Body); bytes.Contains(body, []byte(`"stream":true`)) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hi \"}}]}\n\n" +
				"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Ada\"},\"finish_reason\":\"stop\"}]}\n\n" +
				"data: [DONE]\n\n"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hi Ada"},"finish_reason":"stop"}]}`))
	}))
	defer srv.Close()

	tests := []struct {
		name   string
		args   []string
		key    string
		code   int
		stdout string
		stderr []string
	}{
		{name: "answer", args: []string{"Hello"}, key: "sk-good", code: 0, stdout: "> Hello\nHi Ada\n"},
		{name: "streamed answer", args: []string{"-stream", "Hello"}, key: "sk-good", code: 0, stdout: "> Hello\nHi Ada\n"},
		{
			name: "API error prints its body", args: []string{"Hello"}, key: "sk-bad", code: 1, stdout: "> Hello\n",
			stderr: []string{"401 Unauthorized", `"message":"You didn't provide an API key."`, `"type":"invalid_request_error"`},
		},
		{
			name: "streamed API error prints its body", args: []string{"-stream", "Hello"}, key: "sk-bad", code: 1, stdout: "> Hello\n\n",
			stderr: []string{"401 Unauthorized", `"message":"You didn't provide an API key."`},
		},
		{name: "no key", args: []string{"Hello"}, code: 2, stderr: []string{"OPENAI_API_KEY is not set", "bench/fakeupstream"}},
		{name: "no message", key: "sk-good", code: 2, stderr: []string{"usage: OPENAI_API_KEY=... go-client"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"-url", srv.URL + "/v1", "-conv", "ada-1"}, tt.args...)
			if code := run(args, tt.key, &stdout, &stderr); code != tt.code {
				t.Errorf("exit code: got %d, want %d\nstderr:\n%s", code, tt.code, &stderr)
			}
			if stdout.String() != tt.stdout {
				t.Errorf("stdout: got %q, want %q", &stdout, tt.stdout)
			}
			for _, s := range tt.stderr {
				if !strings.Contains(stderr.String(), s) {
					t.Errorf("stderr: got\n%s\nwant it to contain %q", &stderr, s)
				}
			}
		})
	}
}
