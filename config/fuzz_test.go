package config

import (
	"os"
	"strings"
	"testing"
)

// FuzzLoadTenant feeds arbitrary bytes to the tenant loader: it must return
// a tenant or an error, never panic, and a tenant it returns must be valid.
func FuzzLoadTenant(f *testing.F) {
	for _, p := range []string{
		"../examples/multi-tenant/tenants/acme.yaml",
		"../examples/multi-tenant/tenants/globex.yaml",
	} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"",
		"id: a\napi_keys: [k]\n",
		"id: a\napi_keys: [\"${K}\"]\nhistory:\n  budget_tokens: ${N}\n  idle_timeout: ${D}\n",
		"id: a\napi_keys: [k]\nupstream: {headers: {X: \"${K}\"}}\nhistory: {model_windows: {gpt: ${N}}}\n",
		"a: &a [*a]\n",
		"id: [a, {b: c}]\napi_keys: {k: v}\n",
		"---\n...\n---\n",
		"id: a\napi_keys: [k]\nsummary: !!binary aGVsbG8=\n",
		"<<: {id: a}\n",
	} {
		f.Add([]byte(s))
	}
	lookup := env(map[string]string{"K": "rk-key", "N": "4096", "D": "1m"})
	defaults := DefaultGlobal().Defaults
	f.Fuzz(func(t *testing.T, data []byte) {
		tn, err := parseTenant("fuzz.yaml", data, defaults, lookup, nil)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml: ") {
				t.Errorf("got error %q, want it to name the file", err)
			}
			return
		}
		if verr := tn.Validate(); verr != nil {
			t.Errorf("got a tenant that does not validate: %v", verr)
		}
	})
}
