package main

import (
	"net"
	"sync"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestBodyFromMemory: with a body, the upstream gets it (the stream one
// for a client's body asking for a stream) whatever the client sent;
// without, the client's body.
func TestBodyFromMemory(t *testing.T) {
	var mu sync.Mutex
	var got []string
	up := serve(t, func(rc *fasthttp.RequestCtx) {
		mu.Lock()
		got = append(got, string(rc.PostBody()))
		mu.Unlock()
		rc.SetBodyString("ok")
	})
	client := &fasthttp.Client{}
	for _, c := range []struct {
		body, stream []byte
		sent, want   string
	}{
		{nil, nil, `{"a":1}`, `{"a":1}`},
		{[]byte(`{"ctx":1}`), []byte(`{"ctx":1,"stream":true}`), `{"a":1}`, `{"ctx":1}`},
		{[]byte(`{"ctx":1}`), []byte(`{"ctx":1,"stream":true}`), `{"a":1,"stream":true}`, `{"ctx":1,"stream":true}`},
	} {
		proxy := serve(t, handler(client, "http://"+up, c.body, c.stream))
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.SetRequestURI("http://" + proxy + "/v1/chat/completions")
		req.Header.SetMethod("POST")
		req.SetBodyString(c.sent)
		if err := client.Do(req, resp); err != nil || string(resp.Body()) != "ok" {
			t.Fatalf("sent %s: %v, %q", c.sent, err, resp.Body())
		}
		mu.Lock()
		last := got[len(got)-1]
		mu.Unlock()
		if last != c.want {
			t.Errorf("sent %s: the upstream got %s, want %s", c.sent, last, c.want)
		}
	}
}

// serve serves h on a loopback port until the test ends, and returns
// its address.
func serve(t *testing.T, h fasthttp.RequestHandler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fasthttp.Server{Handler: h}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Shutdown() })
	return ln.Addr().String()
}
