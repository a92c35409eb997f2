package e2etest

// TwoTenants configures two tenants, acme and globex, that a test can
// give the same conversation id. Acme's key is rk-acme-1 and its requests
// go upstream with key sk-upstream-acme and header OpenAI-Organization:
// org-acme; globex's key is rk-globex-1 (listed by its SHA-256) and it has
// no upstream key, so the client's key passes through.
func TwoTenants() Options {
	return Options{Tenants: map[string]string{
		"acme.yaml": `id: acme
api_keys: ["rk-acme-1"]
upstream:
  base_url: "{{UPSTREAM}}"
  api_key: "sk-upstream-acme"
  headers: {OpenAI-Organization: "org-acme"}
`,
		"globex.yaml": `id: globex
api_keys: ["sha256:` + SHA256Hex("rk-globex-1") + `"]
upstream:
  base_url: "{{UPSTREAM}}"
`,
	}}
}
