package proxy

import (
	"net"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/wire"
)

// Each protocol's call goes where its package says, with the key where
// its API reads it, read from the package's optional wire interfaces:
// the path under the base URL (Gemini's names the model and asks for
// SSE), x-api-key and a default anthropic-version for Anthropic, a
// client's own anthropic-version kept, x-goog-api-key for Gemini.
func TestProtocolRequestLine(t *testing.T) {
	tests := []struct {
		name     string
		up, in   wire.Protocol
		version  string // the client's anthropic-version
		uri      string
		key      [2]string
		version2 string // the anthropic-version sent
	}{
		{"chat", wire.ChatCompletions, wire.ChatCompletions, "", "http://127.0.0.1:9/v1/chat/completions", [2]string{"Authorization", "Bearer sk-bench"}, ""},
		{"responses from chat", wire.Responses, wire.ChatCompletions, "", "http://127.0.0.1:9/v1/responses", [2]string{"Authorization", "Bearer sk-bench"}, ""},
		{"messages from chat", wire.Messages, wire.ChatCompletions, "", "http://127.0.0.1:9/v1/messages", [2]string{"X-Api-Key", "sk-bench"}, "2023-06-01"},
		{"messages as sent", wire.Messages, wire.Messages, "2024-10-22", "http://127.0.0.1:9/v1/messages", [2]string{"X-Api-Key", "sk-bench"}, "2024-10-22"},
		{"gemini stream", wire.Gemini, wire.Messages, "", "http://127.0.0.1:9/v1/models/gemini-2.5-flash:streamGenerateContent?alt=sse", [2]string{"X-Goog-Api-Key", "sk-bench"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := sdkRequest()
			if tt.version != "" {
				rc.Request.Header.Set("anthropic-version", tt.version)
			}
			var dst fasthttp.Request
			protocols[tt.up].request(&dst, rc, benchCaller(), &wire.Request{Model: "gemini-2.5-flash", Stream: true}, tt.in)
			if got := string(dst.URI().FullURI()); got != tt.uri {
				t.Errorf("URI: got %s, want %s", got, tt.uri)
			}
			if got := string(dst.Header.Peek(tt.key[0])); got != tt.key[1] {
				t.Errorf("%s: got %q, want %q", tt.key[0], got, tt.key[1])
			}
			if tt.key[0] != "Authorization" && dst.Header.Peek("Authorization") != nil {
				t.Errorf("Authorization sent beside %s", tt.key[0])
			}
			if got := string(dst.Header.Peek("anthropic-version")); got != tt.version2 {
				t.Errorf("anthropic-version: got %q, want %q", got, tt.version2)
			}
		})
	}
}

// The seam's routes are the protocols' own: an ingress at its upstream's
// path, Gemini's by the path it reads its model from.
func TestSeamRoutes(t *testing.T) {
	for path, want := range map[string]wire.Protocol{
		"/v1/responses": wire.Responses,
		"/v1/messages":  wire.Messages,
		"/v1beta/models/gemini-2.5-flash:generateContent":       wire.Gemini,
		"/v1beta/models/gemini-2.5-flash:streamGenerateContent": wire.Gemini,
	} {
		if p := seamRoute([]byte(path)); p == nil || p.proto != want {
			t.Errorf("%s: got %v, want %s", path, p, want)
		}
	}
	for _, path := range []string{"/v1/embeddings", "/v1/messages/batches", "/v1beta/models/m:countTokens"} {
		if p := seamRoute([]byte(path)); p != nil {
			t.Errorf("%s: routed to %s, want passed through", path, p.route)
		}
	}
}

// Each protocol's clients get Recall's errors in their API's shape, as a
// body and as a stream's last event.
func TestProtocolErrorShapes(t *testing.T) {
	e := &apierr.Error{Status: 429, Type: "rate_limit_error", Code: "rate_limited", Message: "slow down"}
	openai := `{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":"rate_limited"}}`
	anthropic := `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`
	google := `{"error":{"code":429,"message":"slow down","status":"RESOURCE_EXHAUSTED"}}`
	for _, tt := range []struct {
		proto       wire.Protocol
		body, event string
	}{
		{wire.ChatCompletions, openai, "data: " + openai + "\n\n"},
		{wire.Responses, openai, `event: error` + "\n" + `data: {"type":"error","sequence_number":0,"code":"rate_limited","message":"slow down","param":null}` + "\n\n"},
		{wire.Messages, anthropic, "event: error\ndata: " + anthropic + "\n\n"},
		{wire.Gemini, google, "data: " + google + "\r\n\r\n"},
	} {
		p := protocols[tt.proto]
		if got := string(p.render(e)); got != tt.body {
			t.Errorf("%s body: got %s, want %s", tt.proto, got, tt.body)
		}
		if got := string(p.errorEvent(e)); got != tt.event {
			t.Errorf("%s event: got %q, want %q", tt.proto, got, tt.event)
		}
	}
}

// sdkRequest is a chat request as an SDK sends it through Recall.
func sdkRequest() *fasthttp.RequestCtx {
	var req fasthttp.Request
	req.Header.SetMethod("POST")
	req.SetRequestURI("/v1/chat/completions")
	req.Header.Set("Authorization", "Bearer sk-bench")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Conversation-Id", "conv-1")
	req.SetBodyString(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	rc := &fasthttp.RequestCtx{}
	rc.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, nil)
	return rc
}

// benchCaller is a pass-through caller whose key is sk-bench, to an
// upstream at 127.0.0.1:9.
func benchCaller() caller {
	t := &config.Tenant{}
	return caller{tenant: &tenant{cfg: t, baseURL: "http://127.0.0.1:9/v1", convHeader: "X-Conversation-ID"},
		Caller: auth.Caller{Tenant: t, Key: "sk-bench"}}
}
