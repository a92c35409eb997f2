package uplink

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestPeerRequestKeepsTheClientsRequest: a request forwarded to another
// replica keeps the client's path and query as sent, its credential,
// its conversation and Recall's own headers, drops the hop-by-hop ones,
// and says which replica forwarded it.
func TestPeerRequestKeepsTheClientsRequest(t *testing.T) {
	rc := sdkRequest()
	rc.Request.SetRequestURI("/c/conv-1/v1/chat/completions?x=%2Fy&z")
	rc.Request.Header.Set("Connection", "keep-alive, X-Hop-Named")
	rc.Request.Header.Set("X-Hop-Named", "1")
	rc.Request.Header.Set("Keep-Alive", "timeout=5")
	rc.Request.Header.Set("Expect", "100-continue")
	rc.Request.Header.Set("X-Api-Key", "sk-ant")
	var req fasthttp.Request
	SetPeerRequest(&req, rc, "http://10.0.0.2:8080/", "host/1/abc")
	if got := string(req.URI().FullURI()); got != "http://10.0.0.2:8080/c/conv-1/v1/chat/completions?x=%2Fy&z" {
		t.Errorf("URL %q, want the replica's with the client's path and query", got)
	}
	for name, want := range map[string]string{
		"Authorization": "Bearer sk-bench", "X-Api-Key": "sk-ant", "X-Conversation-Id": "conv-1",
		"X-Recall-History": "auto", "X-Stainless-Lang": "python", "Content-Type": "application/json",
		HeaderForwarded: "host/1/abc",
	} {
		if got := string(req.Header.Peek(name)); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	for _, name := range []string{"Connection", "X-Hop-Named", "Keep-Alive", "Expect"} {
		if v := req.Header.Peek(name); v != nil {
			t.Errorf("%s forwarded: %q", name, v)
		}
	}
	if string(req.Header.Method()) != "POST" {
		t.Errorf("method %s, want POST", req.Header.Method())
	}
}

// TestForwardedHeaderNeverGoesUpstream: the mark of a forwarded request
// is the replicas' business, not the upstream's.
func TestForwardedHeaderNeverGoesUpstream(t *testing.T) {
	rc := sdkRequest()
	rc.Request.Header.Set(HeaderForwarded, "host/1/abc")
	var req fasthttp.Request
	SetRequest(&req, rc, benchTarget(), []byte("/v1/chat/completions"), false)
	if v := req.Header.Peek(HeaderForwarded); v != nil {
		t.Errorf("%s went upstream: %q", HeaderForwarded, v)
	}
}

// TestPeerClientSendsAgainOnAReusedConnectionClosedUnanswered: the
// replica forwarded to closes a reused connection on the request it
// just read, without a byte of an answer: the request is sent once more,
// on a new connection, as to an upstream.
func TestPeerClientSendsAgainOnAReusedConnectionClosedUnanswered(t *testing.T) {
	u := newScriptedUpstream(t, func(conn, req int) string {
		if conn == 0 && req == 1 {
			return "close"
		}
		return "answer"
	})
	client := PeerClient()
	for i := range 2 {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.Header.SetMethod("POST")
		req.SetRequestURI("http://" + u.ln.Addr().String() + "/v1/chat/completions")
		req.SetBodyString(`{}`)
		err := Do(client, req, resp, 5*time.Second)
		fasthttp.ReleaseRequest(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if b, err := io.ReadAll(Body(resp)); err != nil || string(b) != "{}" {
			t.Fatalf("request %d: body %q, %v", i, b, err)
		}
		Release(resp)
	}
	if got, want := u.requests(), []string{"0/0", "0/1", "1/0"}; !equalStrings(got, want) {
		t.Errorf("the replica read %v, want %v", got, want)
	}
}

// TestPeerUnreachable: a replica that cannot be connected to is told
// apart from one that failed after the request reached it.
func TestPeerUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod("POST")
	req.SetRequestURI("http://" + addr + "/v1/chat/completions")
	if err := Do(PeerClient(), req, resp, 5*time.Second); !errors.Is(err, ErrPeerUnreachable) {
		t.Fatalf("got %v, want ErrPeerUnreachable", err)
	}
	u := newScriptedUpstream(t, func(conn, req int) string { return "close" })
	req.SetRequestURI("http://" + u.ln.Addr().String() + "/v1/chat/completions")
	if err := Do(PeerClient(), req, resp, 5*time.Second); err == nil || errors.Is(err, ErrPeerUnreachable) {
		t.Fatalf("a replica that closed the connection on the request: got %v, want another error", err)
	}
}
