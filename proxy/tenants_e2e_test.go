package proxy_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
)

// Two tenants with the same conversation id, one with an upstream key.
var twoTenants = harnessOptions{tenants: map[string]string{
	"acme.yaml": `id: acme
api_keys: ["rk-acme-1"]
upstream:
  base_url: "{{UPSTREAM}}"
  api_key: "sk-upstream-acme"
  headers: {OpenAI-Organization: "org-acme"}
`,
	"globex.yaml": `id: globex
api_keys: ["sha256:` + sha256Hex("rk-globex-1") + `"]
upstream:
  base_url: "{{UPSTREAM}}"
`,
}}

func TestKeySwapSendsTenantKey(t *testing.T) {
	h := newHarness(t, twoTenants)
	c := h.client("rk-acme-1", "k-1")
	if _, err := c.Chat.Completions.New(context.Background(), params(openai.UserMessage("hi"))); err != nil {
		t.Fatal(err)
	}
	hdr := h.up.Last().Header
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
	h := newHarness(t, twoTenants)
	ctx := context.Background()
	acme, globex := h.client("rk-acme-1", "shared-id"), h.client("rk-globex-1", "shared-id")
	if _, err := acme.Chat.Completions.New(ctx, params(openai.UserMessage("acme secret plan"))); err != nil {
		t.Fatal(err)
	}
	if _, err := globex.Chat.Completions.New(ctx, params(openai.UserMessage("hello"))); err != nil {
		t.Fatal(err)
	}
	if got := renderAll(h.up.Last().Messages); !equalStrings(got, []string{"user:hello"}) {
		t.Errorf("globex's request carried %q", got)
	}
	// The client key passes through for a tenant without an upstream key.
	if got := h.up.Last().Header.Get("Authorization"); got != "Bearer rk-globex-1" {
		t.Errorf("pass-through Authorization %q", got)
	}
}

func TestPassThroughKeysAreSeparateNamespaces(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ctx := context.Background()
	alice, bob := h.client("sk-alice", "same"), h.client("sk-bob", "same")
	if _, err := alice.Chat.Completions.New(ctx, params(openai.UserMessage("alice here"))); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.Chat.Completions.New(ctx, params(openai.UserMessage("bob here"))); err != nil {
		t.Fatal(err)
	}
	if got := renderAll(h.up.Last().Messages); !equalStrings(got, []string{"user:bob here"}) {
		t.Errorf("bob's request carried %q", got)
	}
}

func TestUnknownKeyIs401(t *testing.T) {
	h := newHarness(t, twoTenants)
	c := h.client("rk-nobody", "x")
	_, err := c.Chat.Completions.New(context.Background(), params(openai.UserMessage("hi")))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
		t.Fatalf("got %v, want a 401", err)
	}
	if apiErr.Code != "invalid_api_key" {
		t.Errorf("code %q, want invalid_api_key", apiErr.Code)
	}
	if h.up.Count() != 0 {
		t.Errorf("upstream saw %d requests, want 0", h.up.Count())
	}
}

func TestPassthroughPathsSwapKey(t *testing.T) {
	h := newHarness(t, twoTenants)
	resp := h.post("/v1/embeddings?x=1", "rk-acme-1", "", `{"input":"hi","model":"text-embedding-3-small"}`)
	if resp.status != 200 {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	last := h.up.Last()
	got := []string{last.Path, last.Query, string(last.Body), last.Header.Get("Authorization")}
	want := []string{"/v1/embeddings", "x=1", `{"input":"hi","model":"text-embedding-3-small"}`, "Bearer sk-upstream-acme"}
	if !equalStrings(got, want) {
		t.Errorf("upstream saw %q, want %q", got, want)
	}
	if h.post("/v1/models", "rk-nobody", "", "").status != 401 {
		t.Errorf("unknown key on a pass-through path was not refused")
	}
}
