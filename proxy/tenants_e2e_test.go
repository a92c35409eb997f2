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

func TestTenantsNeverSeeEachOther(t *testing.T) {
	h := newHarness(t, e2etest.TwoTenants())
	ctx := context.Background()
	acme, globex := h.Client("rk-acme-1", "shared-id"), h.Client("rk-globex-1", "shared-id")
	if _, err := acme.Chat.Completions.New(ctx, e2etest.ChatParams(openai.UserMessage("acme secret plan"))); err != nil {
		t.Fatal(err)
	}
	if _, err := globex.Chat.Completions.New(ctx, e2etest.ChatParams(openai.UserMessage("hello"))); err != nil {
		t.Fatal(err)
	}
	if got := e2etest.RenderAll(h.Up.Last().Messages); !slices.Equal(got, []string{"user:hello"}) {
		t.Errorf("globex's request carried %q", got)
	}
	// The client key passes through for a tenant without an upstream key.
	if got := h.Up.Last().Header.Get("Authorization"); got != "Bearer rk-globex-1" {
		t.Errorf("pass-through Authorization %q", got)
	}
}

func TestPassThroughKeysAreSeparateNamespaces(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	ctx := context.Background()
	alice, bob := h.Client("sk-alice", "same"), h.Client("sk-bob", "same")
	if _, err := alice.Chat.Completions.New(ctx, e2etest.ChatParams(openai.UserMessage("alice here"))); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.Chat.Completions.New(ctx, e2etest.ChatParams(openai.UserMessage("bob here"))); err != nil {
		t.Fatal(err)
	}
	if got := e2etest.RenderAll(h.Up.Last().Messages); !slices.Equal(got, []string{"user:bob here"}) {
		t.Errorf("bob's request carried %q", got)
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
