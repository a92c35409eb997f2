package proxy_test

import (
	"strings"
	"testing"

	"github.com/recallproxy/recall/internal/e2etest"
)

// A conversation named on a path that keeps no memory is forwarded, and
// the answer says it was not remembered (X-Recall-Memory: none), with a
// warning in the log; a path with memory, or a request naming no
// conversation, carries no such header.
func TestMemoryNoneOnPathsWithoutMemory(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	for _, tt := range []struct {
		name, path, header string
		want               string
	}{
		{"header on a pass-through path", "/v1/embeddings", "emb-1", "none"},
		{"prefix on a pass-through path", "/c/emb-2/v1/embeddings", "", "none"},
		{"no conversation", "/v1/embeddings", "", ""},
		{"chat completions", "/v1/chat/completions", "chat-1", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"model":"text-embedding-3-small","input":"hi"}`
			if strings.HasSuffix(tt.path, "/chat/completions") {
				body = `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`
			}
			r := h.Post(tt.path, key, tt.header, body)
			if r.Status != 200 {
				t.Fatalf("status %d", r.Status)
			}
			if got := r.Header.Get("X-Recall-Memory"); got != tt.want {
				t.Errorf("X-Recall-Memory %q, want %q", got, tt.want)
			}
		})
	}
	if !h.Logs.WaitFor(`keeps no memory`) {
		t.Errorf("no warning in the log:\n%s", h.Logs.String())
	}
}
