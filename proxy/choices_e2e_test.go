package proxy_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/recallproxy/recall/internal/e2etest"
)

func TestSeveralChoicesRecordTheFirst(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "json", true: "stream"}[stream]
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, e2etest.Options{})
			c := h.Client(key, "n-"+name)
			p := e2etest.ChatParams(openai.UserMessage("pick one"))
			p.N = openai.Int(2)
			ctx := context.Background()
			if stream {
				s := c.Chat.Completions.NewStreaming(ctx, p)
				for s.Next() {
				}
				if err := s.Err(); err != nil {
					t.Fatal(err)
				}
			} else if _, err := c.Chat.Completions.New(ctx, p); err != nil {
				t.Fatal(err)
			}
			h.WaitDone("n-" + name)
			got := e2etest.Active(h.Stored(h.PassNamespace(key), "n-"+name))
			if want := []string{"user:pick one", "assistant:[0] echo: pick one"}; !slices.Equal(got, want) {
				t.Errorf("stored %q, want %q", got, want)
			}
		})
	}
}

func TestUpstreamHeadersPassThrough(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	r := h.Post("/v1/chat/completions", key, "hdr-1", `{"messages":[{"role":"user","content":"hi"}]}`)
	if r.Status != 200 {
		t.Fatal(r.Body)
	}
	for name, want := range map[string]string{
		"X-Request-Id":                   "req_",
		"X-Ratelimit-Remaining-Requests": "99",
		"X-Recall-Conversation":          "hdr-1",
		"X-Recall-History":               "1/1",
		"X-Recall-Curation":              "dropped_turns=0 truncated_tool_results=0 repaired_calls=0",
	} {
		if got := r.Header.Get(name); !strings.HasPrefix(got, want) {
			t.Errorf("%s: got %q, want %q...", name, got, want)
		}
	}
	if r.Header.Get("X-Recall-Context-Tokens") == "" {
		t.Error("no X-Recall-Context-Tokens")
	}
}

func TestModelWindowCapsTheBudget(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	// gpt-4's window is 8,192 tokens; asking for 8,000 of them for the
	// answer leaves 192 for the prompt, far below the tenant's 16,000.
	body := `{"model":"gpt-4","max_tokens":8000,"messages":[{"role":"user","content":"` + strings.Repeat("word ", 300) + `"}]}`
	r := h.Post("/v1/chat/completions", key, "win-1", body)
	if r.Status != 400 || !strings.Contains(r.Body, "context_length_exceeded") {
		t.Fatalf("got %d %s, want context_length_exceeded", r.Status, r.Body)
	}
	body = strings.Replace(body, `"max_tokens":8000`, `"max_tokens":100`, 1)
	if r := h.Post("/v1/chat/completions", key, "win-1", body); r.Status != 200 {
		t.Fatalf("with room left: got %d %s", r.Status, r.Body)
	}
}
