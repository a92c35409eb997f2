package proxy_test

import (
	"encoding/json"
	"testing"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/internal/e2etest"
)

// openAINoKey is OpenAI's answer to a request without a key, word for word.
const openAINoKey = "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys."

// TestMissingKeyIs401AsOpenAI checks that a request without a bearer key
// gets OpenAI's own 401 for that case (type invalid_request_error, code
// and param null), while a key no tenant has keeps "Incorrect API key
// provided.", on the chat route and a pass-through route, with tenant
// files and in pass-through mode. Nothing reaches the upstream.
func TestMissingKeyIs401AsOpenAI(t *testing.T) {
	invalidKey := "invalid_api_key"
	modes := []struct {
		name string
		opts e2etest.Options
	}{
		{"tenant files", e2etest.TwoTenants()},
		{"pass-through", e2etest.Options{}},
	}
	tests := []struct {
		name     string
		auth     string // the Authorization header; "" sends none
		tenants  bool   // only with tenant files (pass-through accepts any key)
		message  string
		typ      string
		code     *string
		upstream bool
	}{
		{name: "no Authorization header", message: openAINoKey, typ: "invalid_request_error"},
		{name: "empty bearer", auth: "Bearer   ", message: openAINoKey, typ: "invalid_request_error"},
		{name: "not bearer auth", auth: "Basic dXNlcjpwYXNz", message: openAINoKey, typ: "invalid_request_error"},
		{name: "wrong key", auth: "Bearer rk-nobody", tenants: true, message: "Incorrect API key provided.", typ: "authentication_error", code: &invalidKey},
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			h := newHarness(t, mode.opts)
			for _, tt := range tests {
				if tt.tenants && len(mode.opts.Tenants) == 0 {
					continue
				}
				for _, path := range []string{"/v1/chat/completions", "/v1/models"} {
					t.Run(tt.name+" "+path, func(t *testing.T) {
						headers := map[string]string{"Content-Type": "application/json", "X-Conversation-ID": "k-1"}
						if tt.auth != "" {
							headers["Authorization"] = tt.auth
						}
						r := h.PostHeaders(path, headers, `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
						if r.Status != 401 {
							t.Fatalf("got status %d, want 401: %s", r.Status, r.Body)
						}
						var b apierr.OpenAIBody
						if err := json.Unmarshal([]byte(r.Body), &b); err != nil {
							t.Fatalf("got body %q: %v", r.Body, err)
						}
						if b.Error.Message != tt.message {
							t.Errorf("message: got %q, want %q", b.Error.Message, tt.message)
						}
						if b.Error.Type != tt.typ {
							t.Errorf("type: got %q, want %q", b.Error.Type, tt.typ)
						}
						if b.Error.Param != nil {
							t.Errorf("param: got %q, want null", *b.Error.Param)
						}
						switch {
						case tt.code == nil && b.Error.Code != nil:
							t.Errorf("code: got %q, want null", *b.Error.Code)
						case tt.code != nil && (b.Error.Code == nil || *b.Error.Code != *tt.code):
							t.Errorf("code: got %v, want %q", b.Error.Code, *tt.code)
						}
						if n := h.Up.Count(); n != 0 {
							t.Errorf("upstream: got %d requests, want 0", n)
						}
					})
				}
			}
		})
	}
}
