package uplink

import (
	"bufio"
	"iter"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
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

func benchTarget() *Target {
	return &Target{BaseURL: "http://127.0.0.1:9/v1", ConvHeader: "X-Conversation-ID", Key: "sk-bench"}
}

// The upstream request carries the client's headers but for the
// credential, the conversation's and Recall's own, in the client's order.
func TestUpstreamRequestHeaders(t *testing.T) {
	rc := sdkRequest()
	rc.Request.Header.Add("X-Stainless-Lang", "python-again")
	var req fasthttp.Request
	SetRequest(&req, rc, benchTarget(), []byte("/v1/chat/completions"), false)
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
	rc, c, path := sdkRequest(), benchTarget(), []byte("/v1/chat/completions")
	b.ReportAllocs()
	for b.Loop() {
		req := fasthttp.AcquireRequest()
		SetRequest(req, rc, c, path, false)
		fasthttp.ReleaseRequest(req)
	}
}

// No client credential goes upstream but the target's one: the tenant's
// key, or in pass-through the bearer key the client authenticated with.
func TestUpstreamRequestSendsOneCredential(t *testing.T) {
	tests := []struct {
		name     string
		key      string
		wantAuth string
	}{
		{"tenant key", "sk-tenant", "Bearer sk-tenant"},
		{"pass-through", "rk-client", "Bearer rk-client"},
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
			c := benchTarget()
			c.Key = tt.key
			var req fasthttp.Request
			SetRequest(&req, rc, c, []byte("/v1/chat/completions"), false)
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

// SetRequest adds the client's headers without normalizing their
// names again: the headers that go upstream, their names and their order
// are those a normalizing add gives, for requests as fasthttp's server
// reads them (names in any case, every kind of header that does not go:
// hop-by-hop ones, those a Connection header names before or after it,
// every credential, Recall's own, repeated and special ones).
func TestUpstreamHeadersAsNormalized(t *testing.T) {
	pool := [][2]string{
		{"authorization", "Bearer a"}, {"X-API-KEY", "k"}, {"api-key", "k2"}, {"x-goog-api-key", "g"},
		{"Proxy-Authorization", "Basic x"}, {"Connection", "keep-alive"}, {"CONNECTION", "x-hop, keep-alive"},
		{"connection", "x-other"}, {"x-hop", "1"}, {"X-Other", "2"}, {"keep-alive", "timeout=5"}, {"TE", "trailers"},
		{"Upgrade", "h2c"}, {"proxy-connection", "keep-alive"},
		{"content-type", "application/json"}, {"user-agent", "sdk/1"}, {"cookie", "a=b"}, {"accept", "*/*"},
		{"Accept", "text/event-stream"}, {"x-conversation-id", "c1"}, {"x-recall-history", "off"},
		{"X-RECALL-TOOLS", "on"}, {"x-stainless-lang", "go"}, {"OpenAI-Beta", "assistants=v2"},
		{"anthropic-version", "2023-06-01"}, {"accept-ENCODING", "gzip"},
	}
	rng := rand.New(rand.NewPCG(7, 28))
	for i := range 2000 {
		raw := "POST /v1/chat/completions HTTP/1.1\r\nHost: recall.local\r\n" + randomHeaders(rng, pool, 12) + "Content-Length: 2\r\n\r\n{}"
		var in fasthttp.Request
		if err := in.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
			t.Fatalf("request %d %q: %v", i, raw, err)
		}
		rc := &fasthttp.RequestCtx{}
		rc.Init(&in, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, nil)
		var want fasthttp.RequestHeader
		named := connectionValues(in.Header.All())
		for k, v := range in.Header.All() {
			if forwardRequestHeader(k, "X-Conversation-ID") && !connectionNames(named, k) {
				want.AddBytesKV(k, v)
			}
		}
		var up fasthttp.Request
		SetRequest(&up, rc, benchTarget(), []byte("/v1/chat/completions"), false)
		up.Header.Del("Authorization") // the tenant's credential, set after
		if got, want := headerLines(up.Header.All()), headerLines(want.All()); !slices.Equal(got, want) {
			t.Fatalf("request %q:\nsent upstream %q\nwant %q", raw, got, want)
		}
	}
}

// randomHeaders returns 1 to most header lines drawn from pool, each
// ended by CRLF.
func randomHeaders(rng *rand.Rand, pool [][2]string, most int) string {
	var lines string
	for range 1 + rng.IntN(most) {
		h := pool[rng.IntN(len(pool))]
		lines += h[0] + ": " + h[1] + "\r\n"
	}
	return lines
}

// connectionValues returns the values of the Connection headers among
// headers, whatever their names' case.
func connectionValues(headers iter.Seq2[[]byte, []byte]) [][]byte {
	var named [][]byte
	for k, v := range headers {
		if strings.EqualFold(string(k), "Connection") {
			named = append(named, v)
		}
	}
	return named
}

// headerLines returns headers as "name: value" lines, in order.
func headerLines(headers iter.Seq2[[]byte, []byte]) []string {
	var lines []string
	for k, v := range headers {
		lines = append(lines, string(k)+": "+string(v))
	}
	return lines
}

// openAIAnswer is a chat answer's header as OpenAI's API sends it.
func openAIAnswer() *fasthttp.Response {
	var resp fasthttp.Response
	raw := "HTTP/1.1 200 OK\r\nDate: Sat, 28 Nov 2026 10:00:00 GMT\r\nContent-Type: application/json\r\n" +
		"Content-Length: 2\r\nConnection: keep-alive\r\naccess-control-expose-headers: X-Request-ID\r\n" +
		"openai-organization: org-x\r\nopenai-processing-ms: 312\r\nopenai-project: proj_x\r\nopenai-version: 2020-10-01\r\n" +
		"x-ratelimit-limit-requests: 10000\r\nx-ratelimit-limit-tokens: 30000000\r\nx-ratelimit-remaining-requests: 9999\r\n" +
		"x-ratelimit-remaining-tokens: 29999990\r\nx-ratelimit-reset-requests: 6ms\r\nx-ratelimit-reset-tokens: 0s\r\n" +
		"x-request-id: req_0123456789abcdef\r\nstrict-transport-security: max-age=31536000; includeSubDomains; preload\r\n" +
		"cf-cache-status: DYNAMIC\r\nX-Content-Type-Options: nosniff\r\nServer: cloudflare\r\ncf-ray: 8f0000000000-AMS\r\n" +
		"alt-svc: h3=\":443\"; ma=86400\r\n\r\n{}"
	if err := resp.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
		panic(err)
	}
	return &resp
}

// BenchmarkCopyResponseHeader relays an OpenAI answer's 22 headers.
func BenchmarkCopyResponseHeader(b *testing.B) {
	resp, rc := openAIAnswer(), &fasthttp.RequestCtx{}
	b.ReportAllocs()
	for b.Loop() {
		rc.Response.Header.Reset()
		CopyResponseHeader(rc, resp)
	}
}

// CopyResponseHeader relays what a normalizing add of every header but
// the hop-by-hop ones and those a Connection header names gives, in the
// same order, for answers as fasthttp's client reads them.
func TestRelayedHeadersAsNormalized(t *testing.T) {
	pool := [][2]string{
		{"connection", "keep-alive"}, {"Connection", "X-Hop, keep-alive"}, {"CONNECTION", "close"}, {"x-hop", "1"},
		{"keep-alive", "timeout=5"}, {"Upgrade", "h2c"}, {"proxy-authenticate", "Basic"}, {"trailer", "X-T"},
		{"content-type", "application/json"}, {"content-encoding", "gzip"}, {"server", "cloudflare"},
		{"date", "Sat, 28 Nov 2026 10:00:00 GMT"}, {"set-cookie", "a=b"}, {"x-request-id", "req_1"},
		{"X-RATELIMIT-REMAINING-TOKENS", "9"}, {"openai-processing-ms", "3"}, {"vary", "Origin"}, {"Vary", "Accept"},
	}
	rng := rand.New(rand.NewPCG(11, 28))
	for i := range 2000 {
		raw := "HTTP/1.1 200 OK\r\n" + randomHeaders(rng, pool, 10) + "Content-Length: 2\r\n\r\n{}"
		var resp fasthttp.Response
		if err := resp.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
			t.Fatalf("answer %d %q: %v", i, raw, err)
		}
		var want fasthttp.ResponseHeader
		named := connectionValues(resp.Header.All())
		for k, v := range resp.Header.All() {
			if !isHop(k) && !connectionNames(named, k) {
				want.AddBytesKV(k, v)
			}
		}
		rc := &fasthttp.RequestCtx{}
		CopyResponseHeader(rc, &resp)
		if got, want := headerLines(rc.Response.Header.All()), headerLines(want.All()); !slices.Equal(got, want) {
			t.Fatalf("answer %q:\nrelayed %q\nwant %q", raw, got, want)
		}
	}
}
