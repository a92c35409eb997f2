// Package tracingtest receives the spans a Tracer exports over OTLP/HTTP,
// for the tests of the packages that trace.
package tracingtest

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Request is one export a Receiver received.
type Request struct {
	Path   string
	Header http.Header
	Export *collectortrace.ExportTraceServiceRequest
}

// Receiver is an OTLP/HTTP trace receiver on loopback: it decodes each
// request (gzip or not) as an ExportTraceServiceRequest, keeps it with its
// path and headers, and answers it with the receiver's status (200 with an
// ExportTraceServiceResponse unless told otherwise). A request it cannot
// decode fails the test.
type Receiver struct {
	*httptest.Server
	got chan struct{} // a request was received (cap 64)

	mu      sync.Mutex
	status  int
	answers []int
	release chan struct{}
	reqs    []Request
}

// NewReceiver starts a Receiver, closed when t ends.
func NewReceiver(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{status: http.StatusOK, got: make(chan struct{}, 64)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ex, err := decode(req)
		if err != nil {
			t.Errorf("OTLP receiver: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.reqs = append(r.reqs, Request{Path: req.URL.Path, Header: req.Header.Clone(), Export: ex})
		status, release := r.status, r.release
		if len(r.answers) > 0 {
			status, r.answers = r.answers[0], r.answers[1:]
		}
		r.mu.Unlock()
		r.got <- struct{}{}
		if release != nil {
			<-release
		}
		if status != http.StatusOK {
			w.WriteHeader(status)
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Write(out)
	}))
	t.Cleanup(r.Close)
	return r
}

func decode(req *http.Request) (*collectortrace.ExportTraceServiceRequest, error) {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			return nil, err
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	var ex collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &ex); err != nil {
		return nil, err
	}
	return &ex, nil
}

// SetStatus makes the receiver answer the requests that follow with
// status.
func (r *Receiver) SetStatus(status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = status
}

// SetAnswers makes the receiver answer the requests that follow with
// statuses, one a request, and then with its status.
func (r *Receiver) SetAnswers(statuses []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers = statuses
}

// Hold makes each request that follows wait to be answered until release
// is closed.
func (r *Receiver) Hold(release chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.release = release
}

// Requests returns the requests received so far, in order.
func (r *Receiver) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.reqs...)
}

// Spans returns every span received so far, in order.
func (r *Receiver) Spans() []*tracepb.Span {
	var out []*tracepb.Span
	for _, req := range r.Requests() {
		out = append(out, SpansOf(req.Export)...)
	}
	return out
}

// Wait waits for n more requests, failing the test after ten seconds.
func (r *Receiver) Wait(t testing.TB, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for range n {
		select {
		case <-r.got:
		case <-deadline:
			t.Fatalf("the OTLP receiver got too few requests, want %d more", n)
		}
	}
}

// SpansOf is every span of ex, in order.
func SpansOf(ex *collectortrace.ExportTraceServiceRequest) []*tracepb.Span {
	var out []*tracepb.Span
	for _, rs := range ex.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			out = append(out, ss.Spans...)
		}
	}
	return out
}
