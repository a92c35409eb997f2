package proxy

import (
	"context"
	"net"
	"testing"

	"github.com/valyala/fasthttp"

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
	return caller{tenant: &tenant{cfg: &config.Tenant{}, baseURL: "http://127.0.0.1:9/v1", convHeader: "X-Conversation-ID"}, bearer: "sk-bench"}
}

// The upstream request carries the client's headers but for the
// credential, the conversation's and Recall's own, in the client's order.
func TestUpstreamRequestHeaders(t *testing.T) {
	rc := sdkRequest()
	rc.Request.Header.Add("X-Stainless-Lang", "python-again")
	req, err := newUpstreamRequest(context.Background(), rc, benchCaller(), []byte("/v1/chat/completions"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := req.Header.Values("X-Stainless-Lang"); len(got) != 2 || got[0] != "python" || got[1] != "python-again" {
		t.Errorf("X-Stainless-Lang = %q, want both values in order", got)
	}
	for _, name := range []string{"X-Conversation-Id", "X-Recall-History"} {
		if v := req.Header.Get(name); v != "" {
			t.Errorf("%s forwarded: %q", name, v)
		}
	}
	if got := req.Header.Get("Authorization"); got != "Bearer sk-bench" {
		t.Errorf("Authorization = %q, want the pass-through credential", got)
	}
	if n := len(req.Header); n != 12 {
		t.Errorf("%d headers upstream, want 12: %v", n, req.Header)
	}
	req.Header.Add("X-Stainless-Os", "later") // a value appended later must not overwrite its neighbour's
	if got := req.Header.Get("X-Stainless-Arch"); got != "x64" {
		t.Errorf("X-Stainless-Arch = %q after an Add to another header", got)
	}
}

// BenchmarkUpstreamRequest builds the upstream request for an SDK's
// chat request (12 headers): 56 allocations when each header went
// through net/http's Add with a canonical and a lower-cased copy of its
// name.
func BenchmarkUpstreamRequest(b *testing.B) {
	rc, c, path := sdkRequest(), benchCaller(), []byte("/v1/chat/completions")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := newUpstreamRequest(context.Background(), rc, c, path, nil, 0); err != nil {
			b.Fatal(err)
		}
	}
}
