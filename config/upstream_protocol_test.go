package config

import (
	"strings"
	"testing"
)

// TestUpstreamProtocol: the key defaults to openai, takes the variable, and
// refuses an unknown value naming the choices.
func TestUpstreamProtocol(t *testing.T) {
	if g := DefaultGlobal(); g.Defaults.Upstream.Protocol != "openai" {
		t.Errorf("default: got %q, want openai", g.Defaults.Upstream.Protocol)
	}
	g := DefaultGlobal()
	if err := g.ApplyEnv(env(map[string]string{"RECALL_UPSTREAM_PROTOCOL": "anthropic"})); err != nil || g.Defaults.Upstream.Protocol != "anthropic" {
		t.Errorf("RECALL_UPSTREAM_PROTOCOL=anthropic: got %q, %v; want anthropic, nil", g.Defaults.Upstream.Protocol, err)
	}
	g = DefaultGlobal()
	if err := g.ApplyEnv(env(map[string]string{"RECALL_UPSTREAM_PROTOCOL": "gemini"})); err != nil || g.Defaults.Upstream.Protocol != "gemini" {
		t.Errorf("RECALL_UPSTREAM_PROTOCOL=gemini: got %q, %v; want gemini, nil", g.Defaults.Upstream.Protocol, err)
	}
	g = DefaultGlobal()
	err := g.ApplyEnv(env(map[string]string{"RECALL_UPSTREAM_PROTOCOL": "bedrock"}))
	if err == nil || !strings.Contains(err.Error(), "RECALL_UPSTREAM_PROTOCOL") || !strings.Contains(err.Error(), "openai, chat, anthropic, gemini") {
		t.Errorf("RECALL_UPSTREAM_PROTOCOL=bedrock: got %v, want an error naming the variable and the choices", err)
	}
	var ps problems
	p := g.Defaults
	p.Upstream.Protocol = "grpc"
	validatePolicy(&ps, "defaults.", p)
	if got := ps.err(); got == nil || !strings.Contains(got.Error(), "defaults.upstream.protocol") {
		t.Errorf("validate: got %v, want a problem under defaults.upstream.protocol", got)
	}
}
