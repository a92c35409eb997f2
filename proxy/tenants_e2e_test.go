package proxy_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/recallproxy/recall/internal/e2etest"
)

func TestKeySwapSendsTenantKey(t *testing.T) {
	h := newHarness(t, e2etest.TwoTenants())
	c := h.Client("rk-acme-1", "k-1")
	if _, err := c.Chat.Completions.New(context.Background(), e2etest.ChatParams(openai.UserMessage("hi"))); err != nil {
		t.Fatal(err)
	}
	hdr := h.Up.Last().Header
	if got, want := hdr.Get("Authorization"), "Bearer sk-upstream-acme"; got != want {
		t.Errorf("upstream Authorization %q, want %q", got, want)
	}
	if got := hdr.Get("Openai-Organization"); got != "org-acme" {
		t.Errorf("extra header %q, want org-acme", got)
	}
	if got := hdr.Get("X-Conversation-Id"); got != "" {
		t.Errorf("conversation header leaked upstream: %q", got)
	}
}

// Two callers who name the same conversation id each have their own: two
// tenants, or two keys of the pass-through tenant (a namespace each).
func TestNamespacesNeverSeeEachOther(t *testing.T) {
	tests := []struct {
		name             string
		opts             e2etest.Options
		keyA, keyB       string
		textA, textB     string
		wantUpstreamAuth string // of B's request; "" for no check
	}{
		{name: "two tenants", opts: e2etest.TwoTenants(), keyA: "rk-acme-1", keyB: "rk-globex-1",
			textA: "acme secret plan", textB: "hello",
			// The client key passes through for a tenant without an upstream key.
			wantUpstreamAuth: "Bearer rk-globex-1"},
		{name: "two pass-through keys", keyA: "sk-alice", keyB: "sk-bob", textA: "alice here", textB: "bob here"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.opts)
			ctx := context.Background()
			a, b := h.Client(tt.keyA, "shared-id"), h.Client(tt.keyB, "shared-id")
			if _, err := a.Chat.Completions.New(ctx, e2etest.ChatParams(openai.UserMessage(tt.textA))); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Chat.Completions.New(ctx, e2etest.ChatParams(openai.UserMessage(tt.textB))); err != nil {
				t.Fatal(err)
			}
			if got, want := e2etest.RenderAll(h.Up.Last().Messages), []string{"user:" + tt.textB}; !slices.Equal(got, want) {
				t.Errorf("%s's request carried %q, want %q", tt.keyB, got, want)
			}
			if tt.wantUpstreamAuth == "" {
				return
			}
			if got := h.Up.Last().Header.Get("Authorization"); got != tt.wantUpstreamAuth {
				t.Errorf("pass-through Authorization %q, want %q", got, tt.wantUpstreamAuth)
			}
		})
	}
}

func TestUnknownKeyIs401(t *testing.T) {
	h := newHarness(t, e2etest.TwoTenants())
	c := h.Client("rk-nobody", "x")
	_, err := c.Chat.Completions.New(context.Background(), e2etest.ChatParams(openai.UserMessage("hi")))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
		t.Fatalf("got %v, want a 401", err)
	}
	if apiErr.Code != "invalid_api_key" {
		t.Errorf("code %q, want invalid_api_key", apiErr.Code)
	}
	if h.Up.Count() != 0 {
		t.Errorf("upstream saw %d requests, want 0", h.Up.Count())
	}
}

func TestPassthroughPathsSwapKey(t *testing.T) {
	h := newHarness(t, e2etest.TwoTenants())
	resp := h.Post("/v1/embeddings?x=1", "rk-acme-1", "", `{"input":"hi","model":"text-embedding-3-small"}`)
	if resp.Status != 200 {
		t.Fatalf("status %d: %s", resp.Status, resp.Body)
	}
	last := h.Up.Last()
	got := []string{last.Path, last.Query, string(last.Body), last.Header.Get("Authorization")}
	want := []string{"/v1/embeddings", "x=1", `{"input":"hi","model":"text-embedding-3-small"}`, "Bearer sk-upstream-acme"}
	if !slices.Equal(got, want) {
		t.Errorf("upstream saw %q, want %q", got, want)
	}
	if h.Post("/v1/models", "rk-nobody", "", "").Status != 401 {
		t.Errorf("unknown key on a pass-through path was not refused")
	}
}
