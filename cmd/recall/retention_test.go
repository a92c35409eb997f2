package main

import (
	"testing"
	"time"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/retention"
)

func TestRetentionPoliciesFollowTheTenants(t *testing.T) {
	dir := t.TempDir()
	writeConfig(t, dir, "a.yaml", "id: a\napi_keys: [rk-a]\nhistory:\n  retention_ttl: 72h\n  max_conversations: 500\n")
	writeConfig(t, dir, "b.yaml", "id: b\napi_keys: [rk-b]\n")
	writeConfig(t, dir, "c.yaml", "id: c\napi_keys: [rk-c]\nhistory:\n  max_conversations: 3\n")
	g := config.DefaultGlobal()
	g.TenantsDir = dir
	set, err := config.LoadTenants(g, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	got := policies(set)
	want := []retention.Policy{{Tenant: "a", Namespace: "a", TTL: 72 * time.Hour, Max: 500}, {Tenant: "c", Namespace: "c", Max: 3}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("policies %+v, want %+v", got, want)
	}
	// The pass-through tenant's namespaces are per credential: the
	// defaults' rules apply to each, through the namespace prefix.
	pg := config.DefaultGlobal()
	pg.Defaults.History.MaxConversations = 3
	pass, err := config.LoadTenants(pg, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	want = []retention.Policy{{Tenant: "default", NamespacePrefix: "default.pt.", Max: 3}}
	if got := policies(pass); len(got) != 1 || got[0] != want[0] {
		t.Errorf("pass-through policies %+v, want %+v", got, want)
	}
}
