package proxy

import (
	"net"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/config"
)

// sdkRequest is a chat request as the official OpenAI Python SDK sends it
// through Recall: twelve headers besides the conversation's.
func sdkRequest() *fasthttp.RequestCtx {
	var req fasthttp.Request
	req.Header.SetMethod("POST")
	req.SetRequestURI("/v1/chat/completions")
	for _, h := range [][2]string{
		{"Authorization", "Bearer sk-bench"}, {"Content-Type", "application/json"}, {"Accept", "application/json"},
		{"User-Agent", "OpenAI/Python 1.99.9"}, {"X-Stainless-Lang", "python"}, {"X-Stainless-Package-Version", "1.99.9"},
		{"X-Stainless-Os", "Linux"}, {"X-Stainless-Arch", "x64"}, {"X-Stainless-Runtime", "CPython"},
		{"X-Stainless-Runtime-Version", "3.12.3"}, {"X-Stainless-Retry-Count", "0"}, {"X-Stainless-Read-Timeout", "600"},
		{"X-Conversation-Id", "conv-1"}, {"X-Recall-History", "auto"},
	} {
		req.Header.Set(h[0], h[1])
	}
	req.SetBodyString(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	rc := &fasthttp.RequestCtx{}
	rc.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, nil)
	return rc
}

func benchCaller() caller {
	t := &config.Tenant{}
	return caller{tenant: &tenant{cfg: t, baseURL: "http://127.0.0.1:9/v1", convHeader: "X-Conversation-ID"},
		Caller: auth.Caller{Tenant: t, Key: "sk-bench"}}
}

// The upstream request carries the client's headers but for the
// credential, the conversation's and Recall's own, in the client's order.
func TestUpstreamRequestHeaders(t *testing.T) {
	rc := sdkRequest()
	rc.Request.Header.Add("X-Stainless-Lang", "python-again")
	var req fasthttp.Request
	upstreamRequest(&req, rc, benchCaller(), []byte("/v1/chat/completions"), false)
	var got []string
	for _, v := range req.Header.PeekAll("X-Stainless-Lang") {
		got = append(got, string(v))
	}
	if len(got) != 2 || got[0] != "python" || got[1] != "python-again" {
		t.Errorf("X-Stainless-Lang = %q, want both values in order", got)
	}
	for _, name := range []string{"X-Conversation-Id", "X-Recall-History"} {
		if v := req.Header.Peek(name); v != nil {
			t.Errorf("%s forwarded: %q", name, v)
		}
	}
	if got := string(req.Header.Peek("Authorization")); got != "Bearer sk-bench" {
		t.Errorf("Authorization = %q, want the pass-through credential", got)
	}
	if got := string(req.URI().FullURI()); got != "http://127.0.0.1:9/v1/chat/completions" {
		t.Errorf("upstream URL %q, want the tenant's base URL and the path", got)
	}
	n := 0
	for range req.Header.All() {
		n++
	}
	if n != 13 { // the 12 sent and the repeated one (Host comes from the URI)
		t.Errorf("%d headers upstream, want 13: %s", n, req.Header.Header())
	}
}

// BenchmarkUpstreamRequest builds the upstream request for an SDK's
// chat request (12 headers): 61 allocations with net/http's client, 22
// once names were read in place, none in a pooled fasthttp.Request.
func BenchmarkUpstreamRequest(b *testing.B) {
	rc, c, path := sdkRequest(), benchCaller(), []byte("/v1/chat/completions")
	b.ReportAllocs()
	for b.Loop() {
		req := fasthttp.AcquireRequest()
		upstreamRequest(req, rc, c, path, false)
		fasthttp.ReleaseRequest(req)
	}
}

// No client credential goes upstream but the one the tenant's
// configuration picks: the tenant's key, or in pass-through the bearer
// key the client authenticated with.
func TestUpstreamRequestSendsOneCredential(t *testing.T) {
	tests := []struct {
		name     string
		tenant   config.Tenant
		wantAuth string
	}{
		{"tenant key", config.Tenant{Policy: config.Policy{Upstream: config.Upstream{APIKey: "sk-tenant"}}}, "Bearer sk-tenant"},
		{"pass-through", config.Tenant{}, "Bearer rk-client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := sdkRequest()
			for _, h := range [][2]string{
				{"Authorization", "Bearer rk-client"}, {"X-Api-Key", "sk-ant-client"}, {"api-key", "azure-client"},
				{"x-goog-api-key", "goog-client"}, {"Proxy-Authorization", "Basic Y2xpZW50"},
			} {
				rc.Request.Header.Set(h[0], h[1])
			}
			c := benchCaller()
			c.cfg, c.Caller = &tt.tenant, auth.Caller{Tenant: &tt.tenant, Key: "rk-client"}
			var req fasthttp.Request
			upstreamRequest(&req, rc, c, []byte("/v1/chat/completions"), false)
			var creds []string
			for _, name := range []string{"Authorization", "X-Api-Key", "Api-Key", "X-Goog-Api-Key", "Proxy-Authorization"} {
				for _, v := range req.Header.PeekAll(name) {
					creds = append(creds, name+": "+string(v))
				}
			}
			if want := "Authorization: " + tt.wantAuth; len(creds) != 1 || creds[0] != want {
				t.Errorf("got credential headers %q, want only %q", creds, want)
			}
		})
	}
}
