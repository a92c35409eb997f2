package prototest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/recallproxy/recall/wire"
)

// IngressServer is an API endpoint at path that answers each request as
// the proxy renders an answer through in: the body parsed by in (a
// refusal fails t and is answered 400), then the answer answer returns
// for the request (it may set the request's ids), rendered whole by
// AppendAnswer when the request does not stream, else by a Renderer
// driven by deltas, each delta's events flushed on their own, then
// ended. The server closes when t's test ends.
func IngressServer(t testing.TB, in wire.Ingress, path string, answer func(req *wire.Request) *wire.Answer, deltas []wire.Delta) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		req, err := in.ParseRequest(body)
		if err != nil {
			t.Errorf("parse the SDK's request: %v\n%s", err, body)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		a := answer(req)
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(in.AppendAnswer(nil, req, a))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		rd := in.NewRenderer(req)
		for _, d := range deltas {
			_, _ = w.Write(rd.Delta(nil, d))
			w.(http.Flusher).Flush()
		}
		_, _ = w.Write(rd.End(nil, a))
	}))
	t.Cleanup(srv.Close)
	return srv
}
