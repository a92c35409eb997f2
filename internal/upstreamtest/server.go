// Package upstreamtest is a fake OpenAI-compatible upstream for Recall's
// end-to-end tests, fault tests and load script.
//
// A Server listens on a real loopback TCP port and serves:
//
//   - POST /v1/chat/completions: validated as strictly as the strictest
//     OpenAI-compatible providers validate messages, unknown keys included
//     (see ValidateMessages), answered with scripted replies or an
//     echo of the last user message, streamed as OpenAI streams (SSE) when
//     the request asks for it, and failed on demand (see Fault);
//   - POST /v1/responses: the Responses API as Recall uses it (stateless:
//     previous_response_id and conversation are refused), answered from
//     the same Reply queue as a Response object or its event stream, with
//     a leading reasoning item carrying encrypted_content when the request
//     includes "reasoning.encrypted_content" for an o-series or gpt-5 model;
//   - GET /v1/responses upgraded to a WebSocket: the Responses API's
//     WebSocket mode, each response.create message validated and answered
//     as that POST, its events one message each (see websocket.go);
//   - POST /v1/models/{model}:generateContent and :streamGenerateContent
//     (and the same under /v1beta): Google's Gemini API, as strict as
//     the real one on roles, function call pairing and thought signatures
//     (see gemini.go), answered from the same Reply queue;
//   - GET (or HEAD) /v1/models and /v1/models/{model}: a small model list;
//   - POST /v1/embeddings: a vector per input derived from a hash of the
//     input (see Embed);
//   - /v1/files: an in-memory files store, with multipart upload, listing,
//     retrieval, content and deletion, emptied by Reset;
//   - any other path under /v1/: an echo of the path, method, body and
//     Authorization header, so pass-through tests can check what arrived.
//
// Every request is recorded as a Received, in arrival order, unless the
// Server was built with WithKeepRequests(0) (the load-test setting).
//
// The package imports nothing from this module, so any package's tests may
// use it.
package upstreamtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/tidwall/gjson"
)

// Received is one request as the fake saw it. Header, Body and Messages are
// shared with the Server's log and must not be modified.
type Received struct {
	Method string
	// RequestURI is the request target exactly as it arrived, raw path
	// and query.
	RequestURI string
	// Path is the decoded path, Query the raw query.
	Path   string
	Query  string
	Header http.Header
	// TransferEncoding is the request's transfer codings (["chunked"] for
	// a chunked body), which net/http takes out of Header.
	TransferEncoding []string
	Body             []byte
	// Messages is the parsed "messages" array of a chat-completions request,
	// or the "input" items of a Responses request (a string input as one
	// user message); nil for other paths or when it is not an array.
	Messages []json.RawMessage
	// Model and Stream are the request's "model" and "stream" fields.
	Model  string
	Stream bool
	// Rejected is the error the fake answered 400 with, or nil.
	Rejected *APIError
	// Summary reports that the request was shaped as a summariser call
	// (see EnqueueSummary).
	Summary bool
	// WebSocket reports a response.create message on a WebSocket of
	// /v1/responses: Method, RequestURI and Header are the upgrade's, Body
	// the message as it came, Messages its input items after those of the
	// response its previous_response_id named.
	WebSocket bool
	// At is when the request (or the message) arrived.
	At time.Time
}

// Option configures a Server.
type Option func(*Server)

// WithKeepRequests bounds the request log to the last n requests. The
// default (n < 0) keeps every request; n == 0 keeps none, which the load
// benchmark server uses so that its memory stays flat.
func WithKeepRequests(n int) Option {
	return func(s *Server) { s.keep = n }
}

// WithDescribe makes the default answer say what the fake received:
// "echo: <last user text> [received 3 messages: user, assistant, user]",
// so that a person trying Recall sees its memory at work.
func WithDescribe() Option {
	return func(s *Server) { s.describe = true }
}

// WithUnboundedSummaries answers summariser calls (see EnqueueSummary)
// with the whole SummaryAnswer, ignoring the request's
// max_completion_tokens or max_tokens, as a model that runs on past its
// limit does: tests of what Recall does with an answer longer than it
// asked for.
func WithUnboundedSummaries() Option {
	return func(s *Server) { s.unbounded = true }
}

// WithPromptTokens makes chat-completions answers report f's count as
// their usage's prompt_tokens, f given the request's model and messages
// (default: about a quarter of the messages' bytes): tests of what Recall
// learns from a provider that counts differently from its estimate. f is
// called from the handlers, concurrently; it must not modify messages.
func WithPromptTokens(f func(model string, messages []json.RawMessage) int) Option {
	return func(s *Server) { s.promptTokens = f }
}

// WithIdleTimeout closes a connection that waits longer than d for its
// next request, as Node's and uvicorn's servers close theirs after 5 s:
// tests of a client that keeps connections longer.
func WithIdleTimeout(d time.Duration) Option {
	return func(s *Server) { s.idle = d }
}

// WithToolCallsForTools gives a scripted reply that calls tools only to
// a request that offers tools, as a model calls tools only then: the
// next request with tools takes it, and requests without (an agent's
// title call) are answered as if none were queued.
func WithToolCallsForTools() Option {
	return func(s *Server) { s.toolsOnly = true }
}

// WithWindow gives model an input window of tokens: a chat-completions
// request whose prompt counts more (as its usage's prompt_tokens would)
// is refused with 400 context_length_exceeded in OpenAI's words, as
// OpenAI, vLLM and LiteLLM refuse it.
func WithWindow(model string, tokens int) Option {
	return func(s *Server) {
		if s.windows == nil {
			s.windows = map[string]int{}
		}
		s.windows[model] = tokens
	}
}

// Server is a fake OpenAI-compatible upstream on a loopback port. It is safe
// for concurrent use.
type Server struct {
	// promptTokens, if set, counts the usage's prompt tokens.
	promptTokens func(model string, messages []json.RawMessage) int
	keep         int
	describe     bool // answers say what they received
	unbounded    bool // summary answers ignore their limit
	created      int64
	idle         time.Duration  // the server's idle timeout (0: none)
	windows      map[string]int // models' input windows (WithWindow)
	toolsOnly    bool           // scripted tool calls for requests with tools only

	ln  net.Listener
	srv *http.Server
	url string

	seq   atomic.Uint64 // ids of responses and tool calls
	conns atomic.Int64  // connections accepted

	mu      sync.Mutex
	reqs    []Received
	count   int           // requests since the last Reset
	stalled int           // handlers blocked in FaultStallMidStream now
	changed chan struct{} // closed on the next change of count or stalled; nil while nobody waits
	queue   []Reply
	// summaryQueue holds the scripted answers of summariser calls.
	summaryQueue []Reply
	files        []*file       // the files store, in upload order
	gate         chan struct{} // closed by Release
	// cached are the prompt prefixes Anthropic's cache would hold (see
	// promptCache).
	cached map[string]bool
	// sockets are the open WebSockets, which Close closes; upgrades
	// counts those accepted; closed refuses more.
	sockets  map[*websocket.Conn]struct{}
	upgrades int
	closed   bool
}

// New starts a Server listening on 127.0.0.1:0. It panics if it cannot
// listen, as httptest.NewServer does.
func New(opts ...Option) *Server {
	s, err := Listen("127.0.0.1:0", opts...)
	if err != nil {
		panic(err)
	}
	return s
}

// NewTB is New plus tb.Cleanup(s.Close).
func NewTB(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s := New(opts...)
	tb.Cleanup(s.Close)
	return s
}

// Listen starts a Server on addr, for commands that serve a chosen address.
func Listen(addr string, opts ...Option) (*Server, error) {
	s := newServer(opts...)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("upstreamtest: listen %s: %w", addr, err)
	}
	s.ln = ln
	s.url = "http://" + ln.Addr().String() + "/v1"
	s.srv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: time.Minute, IdleTimeout: s.idle,
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				s.conns.Add(1)
			}
		}}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func newServer(opts ...Option) *Server {
	s := &Server{keep: -1, created: time.Now().Unix(), gate: make(chan struct{})}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Conns returns how many connections the Server has accepted: a client
// that reuses its connections makes one per request in flight.
func (s *Server) Conns() int { return int(s.conns.Load()) }

// URL returns the base URL including "/v1", e.g. http://127.0.0.1:12345/v1.
func (s *Server) URL() string { return s.url }

// Close stops the listener, closes every connection and releases stalled
// streams. It is safe to call more than once.
func (s *Server) Close() {
	if s.srv != nil {
		_ = s.srv.Close()
	}
	s.closeSockets()
	s.Release()
}

// Handler returns the Server's handler, so that a command can serve it on an
// address of its choosing.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// Requests returns the recorded requests in arrival order. The slice is a
// copy; its elements share their contents with the log.
func (s *Server) Requests() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.reqs...)
}

// Last returns the most recent recorded request, or the zero Received if
// none is recorded.
func (s *Server) Last() Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reqs) == 0 {
		return Received{}
	}
	return s.reqs[len(s.reqs)-1]
}

// Count returns how many requests arrived since New or the last Reset,
// recorded or not.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

// WaitRequests blocks until at least n requests arrived since New or the
// last Reset, or ctx ends. Tests use it to wait for requests made in the
// background (summaries) without sleeping.
func (s *Server) WaitRequests(ctx context.Context, n int) error {
	return s.waitFor(ctx, func() bool { return s.count >= n }, "wait for "+itoa(n)+" requests")
}

// Stalled returns how many answers are blocked in FaultStallMidStream now.
func (s *Server) Stalled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stalled
}

// WaitStalled blocks until exactly n answers are blocked in
// FaultStallMidStream, or ctx ends. Waiting for 1 proves a stream reached
// its stall point; waiting for 0 afterwards proves the stalled handler saw
// Release or the end of its request (a client that went away).
func (s *Server) WaitStalled(ctx context.Context, n int) error {
	return s.waitFor(ctx, func() bool { return s.stalled == n }, "wait for "+itoa(n)+" stalled answers")
}

// waitFor blocks until cond, evaluated under s.mu, holds or ctx ends.
func (s *Server) waitFor(ctx context.Context, cond func() bool, what string) error {
	for {
		s.mu.Lock()
		if cond() {
			s.mu.Unlock()
			return nil
		}
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("upstreamtest: %s: %w", what, ctx.Err())
		}
	}
}

// notifyLocked wakes the waiters of waitFor; s.mu must be held.
func (s *Server) notifyLocked() {
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// stall blocks until gate is closed or ctx ends, counted in Stalled; it
// reports whether it was released.
func (s *Server) stall(ctx context.Context, gate <-chan struct{}) bool {
	s.mu.Lock()
	s.stalled++
	s.notifyLocked()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.stalled--
		s.notifyLocked()
		s.mu.Unlock()
	}()
	select {
	case <-gate:
		return true
	case <-ctx.Done():
		return false
	}
}

// Reset forgets the recorded requests, the arrival count, the queued
// replies and the stored files.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs, s.count, s.queue, s.files, s.summaryQueue = nil, 0, nil, nil, nil
}

// Enqueue appends scripted replies to the queue of chat-completions answers.
func (s *Server) Enqueue(r ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, r...)
}

// Release unblocks every stream stalled by FaultStallMidStream, including
// stalls of requests that arrived before the call but have not reached their
// stall point yet. Requests arriving later stall until the next Release.
func (s *Server) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.gate)
	s.gate = make(chan struct{})
}

// record logs rec and, when take is set, dequeues the next scripted reply.
// It returns the reply (ok false when the queue was empty) and the stall
// gate current at arrival.
func (s *Server) record(rec *Received, take bool) (r Reply, ok bool, gate chan struct{}) {
	return s.recordFrom(rec, take, &s.queue)
}

// parseBody is a request body's JSON: the zero Result, which is not an
// object, for a body that is not valid JSON.
func parseBody(body []byte) gjson.Result {
	if !gjson.ValidBytes(body) {
		return gjson.Result{}
	}
	return gjson.ParseBytes(body)
}

// takeReply records a request of an exchange (its model, stream flag,
// messages or input items, rejection and whether it is a summariser call)
// and takes the next scripted reply for it: from the summary queue for a
// summariser call, none for a rejected request.
func (s *Server) takeReply(rec *Received, model string, stream, summary bool, msgs []gjson.Result, rejected *APIError) (Reply, chan struct{}) {
	if rec != nil {
		rec.Model, rec.Stream, rec.Rejected, rec.Summary = model, stream, rejected, summary
		for _, m := range msgs {
			rec.Messages = append(rec.Messages, json.RawMessage(m.Raw))
		}
	}
	queue := &s.queue
	if summary {
		queue = &s.summaryQueue
	}
	reply, _, gate := s.recordFrom(rec, rejected == nil, queue)
	return reply, gate
}

// recordFrom is record taking the reply from queue.
func (s *Server) recordFrom(rec *Received, take bool, queue *[]Reply) (r Reply, ok bool, gate chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count++
	s.notifyLocked()
	if s.keep != 0 && rec != nil {
		if s.keep > 0 && len(s.reqs) >= s.keep {
			n := copy(s.reqs, s.reqs[len(s.reqs)-s.keep+1:])
			clear(s.reqs[n:])
			s.reqs = s.reqs[:n]
		}
		s.reqs = append(s.reqs, *rec)
	}
	// With WithToolCallsForTools, a scripted tool call waits for a
	// request that offers tools (an agent's side call, which offers none,
	// may come between).
	if q := *queue; take && len(q) > 0 && (!s.toolsOnly || len(q[0].ToolCalls) == 0 || rec == nil || offersTools(rec.Body)) {
		r, ok = q[0], true
		q[0] = Reply{}
		*queue = q[1:]
	}
	return r, ok, s.gate
}

// offersTools reports whether a request body of any protocol defines
// tools (a non-empty top-level "tools" array).
func offersTools(body []byte) bool {
	t := gjson.GetBytes(body, "tools")
	return t.IsArray() && len(t.Array()) > 0
}

// keeping reports whether requests are recorded at all.
func (s *Server) keeping() bool { return s.keep != 0 }

func (s *Server) nextSeq() uint64 { return s.seq.Add(1) }

func itoa(n int) string { return strconv.Itoa(n) }
