// Package uplink is Recall's link to its upstreams: the client that sends
// its requests (connection pools, idle connections the upstream closed
// found before a request is written on them, one more attempt for a
// request a reused connection lost before any byte of its answer), the
// headers that go upstream and those that come back, and the answer's
// body, a cut one read as an error.
package uplink

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpproxy"

	"github.com/recallproxy/recall/internal/sock"
)

// The link is the translation between the client's exchange and the
// upstream's, as httputil.ReverseProxy keeps it in one place: the request
// Recall sends, the response headers it relays, and the client that sends
// them. The client is fasthttp's, the server's own stack: a request is
// built in a pooled fasthttp.Request with no per-header allocation, and
// a connection is read and written by the goroutine that asked, where
// net/http's transport hands each exchange to two goroutines of its own
// (the proxy-ceiling rows of bench/run.sh compare the two). What
// fasthttp's client lacks is HTTP/2 (OpenAI's API and the compatible
// servers speak HTTP/1.1).

// hopHeaders are not forwarded in either direction (RFC 9110 section
// 7.6.1), with the framing headers each side sets itself.
var hopHeaders = [][]byte{
	[]byte("Connection"),
	[]byte("Proxy-Connection"),
	[]byte("Keep-Alive"),
	[]byte("Proxy-Authenticate"),
	[]byte("Proxy-Authorization"),
	[]byte("Te"),
	[]byte("Trailer"),
	[]byte("Transfer-Encoding"),
	[]byte("Upgrade"),
	[]byte("Content-Length"),
	[]byte("Host"),
}

func isHop(name []byte) bool { return hop.has(name) }

// nameSet is a set of header names, matched without regard to case,
// indexed by length: a name is compared with the few of its length.
type nameSet [][][]byte

func newNameSet(lists ...[][]byte) nameSet {
	var s nameSet
	for _, l := range lists {
		for _, n := range l {
			for len(s) <= len(n) {
				s = append(s, nil)
			}
			s[len(n)] = append(s[len(n)], n)
		}
	}
	return s
}

func (s nameSet) has(name []byte) bool {
	if len(name) >= len(s) {
		return false
	}
	for _, n := range s[len(name)] {
		if name[0]|0x20 == n[0]|0x20 && bytes.EqualFold(name, n) { // the first byte's case folded (ASCII names) decides most
			return true
		}
	}
	return false
}

var (
	hop = newNameSet(hopHeaders)
	// unsent: the request headers no client's request takes upstream.
	unsent = newNameSet(hopHeaders, credentialHeaders, [][]byte{[]byte(HeaderForwarded)})
)

// DefaultClient returns the upstream client Recall uses by default:
// connection pools sized for a busy proxy, response bodies streamed (an
// event stream is relayed as it comes), paths sent as the client wrote
// them, no transparent decompression (compressed answers reach the
// client as sent), no redirects followed, and proxies from the
// environment.
func DefaultClient() *fasthttp.Client {
	c := newClient()
	c.StreamResponseBody = true
	return c
}

// BufferingClient is DefaultClient reading each answer whole, failing one
// past maxBody bytes (fasthttp.ErrBodyTooLarge): for answers relayed as
// they are once complete. Streaming an answer costs fasthttp a body
// stream and its closures a request.
func BufferingClient(maxBody int) *fasthttp.Client {
	c := newClient()
	c.MaxResponseBodySize = maxBody
	return c
}

// idleUpstream is how long an upstream connection is kept idle: under
// the 5 s after which Node's and uvicorn's servers (so vLLM's and most
// self-hosted gateways') close one. An upstream that closes sooner is
// covered by the check of an idle connection before its next request
// (trackedConn.Write) and by Do's second attempt.
const idleUpstream = 4 * time.Second

// idleCheckAfter is how long a connection must have been idle before a
// request looks whether the upstream closed it: a busy connection costs
// no system call.
const idleCheckAfter = 100 * time.Millisecond

func newClient() *fasthttp.Client {
	return &fasthttp.Client{
		NoDefaultUserAgentHeader:      true,
		DisablePathNormalizing:        true,
		DisableHeaderNamesNormalizing: false,
		MaxConnsPerHost:               4096,
		MaxConnWaitTimeout:            time.Minute,
		MaxIdleConnDuration:           idleUpstream,
		ReadBufferSize:                16 << 10,
		WriteBufferSize:               16 << 10,
		Dial:                          dialUpstream,
		// A POST is sent again only when no byte of it left: its
		// connection was found closed before the request was written.
		// (Do sends once more when a reused connection closes
		// before any byte of the answer came back.)
		RetryIfErr: func(_ *fasthttp.Request, _ int, err error) (bool, bool) {
			return false, errors.Is(err, errIdleConnDead)
		},
		MaxIdemponentCallAttempts: 16,
	}
}

// errIdleConnDead is a pooled connection found closed (or holding bytes
// nobody asked for) before a request was written on it.
var errIdleConnDead = errors.New("uplink: the upstream closed an idle connection")

// Do sends req and reads resp's head within timeout. A request
// whose reused connection the upstream closed before any byte of the
// answer came back (the upstream's idle timeout crossing the request on
// the wire) is sent once more; never after a byte came back, and never
// twice on a connection it opened for this request. A body streamed from
// the client (a large upload passed through) cannot be sent again.
func Do(client *fasthttp.Client, req *fasthttp.Request, resp *fasthttp.Response, timeout time.Duration) error {
	streamed := req.IsBodyStream() // fasthttp drops the stream once sent
	err := client.DoTimeout(req, resp, timeout)
	if err != nil && !streamed && closedUnanswered(resp, err) {
		err = client.DoTimeout(req, resp, timeout)
	}
	return err
}

// closedUnanswered reports whether a failed exchange's connection was a
// reused one that the upstream closed before any byte of the answer:
// fasthttp reports a failure to read the answer's first byte as
// ErrConnectionClosed itself (a head cut after some bytes is another
// error, wrapping io.EOF), and resp still names the connection.
func closedUnanswered(resp *fasthttp.Response, err error) bool {
	if errors.Is(err, errIdleConnDead) {
		return true // no byte of the request left
	}
	if err != fasthttp.ErrConnectionClosed { //nolint:errorlint // exactly it: a cut head wraps io.EOF
		return false
	}
	c := connOf(resp)
	return c != nil && c.requests.Load() > 1
}

// proxyDial dials through HTTP(S)_PROXY when the environment names one
// (and NO_PROXY does not exclude the host), directly otherwise. One for
// the process: each keeps a goroutine.
var proxyDial = fasthttpproxy.FasthttpProxyHTTPDialerTimeout(10 * time.Second)

// dialUpstream dials a connection that remembers the upstream closing it
// (see streamBody).
func dialUpstream(addr string) (net.Conn, error) {
	c, err := proxyDial(addr)
	if err != nil {
		return nil, err
	}
	return track(c), nil
}

// track wraps a connection Recall dialed in a trackedConn.
func track(c net.Conn) *trackedConn {
	tc := &trackedConn{Coarse: sock.Coarse{Conn: c}}
	tc.local = &connAddr{c.LocalAddr(), tc}
	return tc
}

// trackedConn is an upstream connection that records the upstream's end
// of it, and makes itself known through its local address, which fasthttp
// hands to the response it reads (Response.LocalAddr). fasthttp lends a
// connection to one exchange at a time: a write after a read starts the
// next request.
type trackedConn struct {
	sock.Coarse  // deadlines: see package sock
	closedByPeer atomic.Bool
	local        *connAddr // made once: fasthttp asks for it on every response
	// requests counts the requests begun on it; read says an answer
	// began to be read since the last request began, lastRead (Unix ns)
	// when: one clock read an exchange (the idle time it measures is the
	// longer for an answer that took long, which costs a peek, no more).
	requests atomic.Int32
	read     atomic.Bool
	lastRead atomic.Int64
	// beforeRead runs before each read while a streamed body is read
	// (streamBody.BeforeWait), on the reading goroutine.
	beforeRead func() error
}

func (c *trackedConn) Read(p []byte) (int, error) {
	if f := c.beforeRead; f != nil {
		if err := f(); err != nil {
			return 0, err
		}
	}
	n, err := c.Conn.Read(p)
	if err == io.EOF {
		c.closedByPeer.Store(true)
	}
	if n > 0 && !c.read.Load() {
		c.lastRead.Store(time.Now().UnixNano())
		c.read.Store(true)
	}
	return n, err
}

// Write writes p; the first write of a request on a connection that sat
// idle looks first whether the upstream closed it meanwhile, and writes
// nothing if so (errIdleConnDead: fasthttp sends the request on another
// connection).
func (c *trackedConn) Write(p []byte) (int, error) {
	if c.requests.Load() == 0 || c.read.Load() {
		if c.read.Load() && time.Since(time.Unix(0, c.lastRead.Load())) >= idleCheckAfter && idleConnDead(c.Conn) {
			return 0, errIdleConnDead
		}
		c.read.Store(false)
		c.requests.Add(1)
	}
	return c.Conn.Write(p)
}

func (c *trackedConn) LocalAddr() net.Addr { return c.local }

type connAddr struct {
	net.Addr
	conn *trackedConn
}

// connOf returns the connection resp was read from, if Recall dialed it.
func connOf(resp *fasthttp.Response) *trackedConn {
	if a, ok := resp.LocalAddr().(*connAddr); ok {
		return a.conn
	}
	return nil
}

// streamBody is an answer's body streamed from a connection of ours: it
// says when a read is to wait on the connection (BeforeWait), and, of a
// chunked body, takes the connection's word on its end: fasthttp's
// chunked reader takes an upstream that closes the connection where the
// next chunk's size should come for the end of the body (io.EOF): the
// answer would be relayed as whole, and the dead connection pooled.
type streamBody struct {
	r       io.Reader
	conn    *trackedConn
	chunked bool
}

var errCutAtChunk = errors.New("uplink: the upstream closed the connection before the body's last chunk")

func (b *streamBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if b.chunked && err == io.EOF && b.conn.closedByPeer.Load() {
		err = errCutAtChunk
	}
	return n, err
}

// BeforeWait sets f to run before each read of the connection the body
// is read from (nil: none), which is where a read may wait on the
// upstream: what fasthttp buffered already is read without one. An error
// from f is the read's. It must be called, and the body read, by one
// goroutine, and f unset before the body is released.
func (b *streamBody) BeforeWait(f func() error) bool {
	b.conn.beforeRead = f
	return true
}

// Target is where a request goes upstream and what it carries there.
type Target struct {
	// BaseURL is the upstream's, ending in its API version ("/v1").
	BaseURL string
	// ConvHeader is the client's header naming the conversation: it
	// does not go upstream.
	ConvHeader string
	// Key is the one credential that goes upstream, as a bearer key
	// ("": none); Headers are added as they are.
	Key     string
	Headers map[string]string
}

// SetRequest fills req with the upstream request for a client request to
// t: same method, path below the API version and query, byte for byte as
// the client sent them, the client's headers minus hop-by-hop, Recall's
// own and every credential header, then t's one credential (the tenant's
// key, or in pass-through the bearer key the client authenticated with)
// and t's extra headers. Recorded and passed-through calls both build
// theirs here. path is the raw path, starting with "/v1/". The body is
// the caller's to set; bodyless says there is none.
func SetRequest(req *fasthttp.Request, rc *fasthttp.RequestCtx, t *Target, path []byte, bodyless bool) {
	// fasthttp frames every request but a GET or a HEAD with a length,
	// 0 for none: one that came without a body (a DELETE, an OPTIONS) is
	// sent without, its headers written as they are, Host among them.
	req.Header.SetMethodBytes(rc.Method())
	bodyless = bodyless && !rc.IsGet() && !rc.IsHead()
	if bodyless {
		req.Header.DisableSpecialHeader()
	}
	// The client's header names are as fasthttp's server normalized
	// them: adding them does not normalize them again.
	req.Header.DisableNormalizing()
	addForwarded(&req.Header, &rc.Request.Header, t.ConvHeader)
	req.Header.EnableNormalizing()
	var buf [512]byte
	u := append(buf[:0], t.BaseURL...)
	u = append(u, path[len("/v1"):]...)
	if q := rc.URI().QueryString(); len(q) > 0 {
		u = append(u, '?')
		u = append(u, q...)
	}
	req.SetRequestURIBytes(u)
	req.URI().DisablePathNormalizing = true
	if bodyless {
		req.Header.SetBytesKV([]byte(fasthttp.HeaderHost), req.URI().Host())
	}
	if key := t.Key; key != "" {
		var v [128]byte // no allocation for a key of up to 121 bytes
		req.Header.SetCanonical(keyAuthorization, append(append(v[:0], "Bearer "...), key...))
	}
	for k, v := range t.Headers {
		req.Header.Set(k, v)
	}
}

// addForwarded adds to dst, one by one, the headers of src that go
// upstream: forwardRequestHeader's, but those src's Connection header
// names (hop-by-hop too, RFC 9110 section 7.6.1).
func addForwarded(dst, src *fasthttp.RequestHeader, convHeader string) {
	var namedBuf [4][]byte
	named := connectionOptions(src, namedBuf[:0])
	for k, v := range src.All() {
		if forwardRequestHeader(k, convHeader) && !connectionNames(named, k) {
			dst.AddBytesKV(k, v) // copied into dst's buffers
		}
	}
}

// connectionOptions appends the values of h's Connection headers to
// named. Read before the headers they name: a header may come before
// the Connection header that names it.
func connectionOptions(h *fasthttp.RequestHeader, named [][]byte) [][]byte {
	for k, v := range h.All() {
		if isConnection(k) && namesHeaders(v) {
			named = append(named, v)
		}
	}
	return named
}

// namesHeaders reports whether a Connection header's value has an option
// but keep-alive and close, the two most carry: those name no header
// that is not hop-by-hop already.
func namesHeaders(v []byte) bool {
	for len(v) > 0 {
		var option []byte
		option, v, _ = bytes.Cut(v, []byte(","))
		option = bytes.TrimSpace(option)
		if len(option) > 0 && !bytes.EqualFold(option, []byte("keep-alive")) && !bytes.EqualFold(option, []byte("close")) {
			return true
		}
	}
	return false
}

// CopyResponseHeader copies the upstream's status and headers (request ids,
// rate limits, content type and encoding) to the client response, but for
// hop-by-hop headers: those of hopHeaders and those the upstream's
// Connection header names.
func CopyResponseHeader(rc *fasthttp.RequestCtx, resp *fasthttp.Response) {
	rc.SetStatusCode(resp.StatusCode())
	var namedBuf [4][]byte
	named := namedBuf[:0]
	for k, v := range resp.Header.All() {
		if isConnection(k) && namesHeaders(v) {
			named = append(named, v)
		}
	}
	// The upstream's header names are as fasthttp's client normalized
	// them: adding them does not normalize them again.
	rc.Response.Header.DisableNormalizing()
	for k, v := range resp.Header.All() {
		if !isHop(k) && !connectionNames(named, k) {
			rc.Response.Header.AddBytesKV(k, v)
		}
	}
	rc.Response.Header.EnableNormalizing()
}

var (
	headerConnection = []byte(fasthttp.HeaderConnection)
	keyAuthorization = []byte(fasthttp.HeaderAuthorization) // a canonical name, set as it is
)

func isConnection(name []byte) bool {
	return len(name) == len(headerConnection) && bytes.EqualFold(name, headerConnection)
}

// Bodyless reports whether a client's request came without a body: no
// length (fasthttp reports 0 for none) and not chunked.
func Bodyless(rc *fasthttp.RequestCtx) bool {
	size := rc.Request.Header.ContentLength() // -2: neither a length nor chunked
	return size < -1 || size == 0 && !declaresLength(rc.Request.Header.RawHeaders())
}

// declaresLength reports whether a raw request header block has a
// Content-Length line (fasthttp reports 0 for a request without one).
func declaresLength(raw []byte) bool {
	name := []byte(fasthttp.HeaderContentLength)
	for len(raw) > 0 {
		var line []byte
		line, raw, _ = bytes.Cut(raw, []byte("\n"))
		if k, _, ok := bytes.Cut(line, []byte(":")); ok && bytes.EqualFold(bytes.TrimSpace(k), name) {
			return true
		}
	}
	return false
}

// forwardRequestHeader reports whether a client's request header goes
// upstream: not a hop-by-hop one, not a credential (SetRequest sets
// the one that goes), not the conversation header nor Recall's own
// X-Recall-* headers and HeaderForwarded. It reads the name in place, allocation free.
func forwardRequestHeader(name []byte, convHeader string) bool {
	return !unsent.has(name) &&
		!(len(name) == len(convHeader) && bytes.EqualFold(name, []byte(convHeader))) &&
		!(len(name) >= len(recallHeaderPrefix) && bytes.EqualFold(name[:len(recallHeaderPrefix)], recallHeaderPrefix))
}

// credentialHeaders carry an API key in the protocols Recall's clients
// speak: OpenAI's and most gateways' Authorization, Anthropic's
// x-api-key, Azure OpenAI's api-key, Google's x-goog-api-key, and a
// proxy's Proxy-Authorization. None of a client's goes upstream: Recall
// authenticates the client by its bearer key and sends the one credential
// the tenant's configuration picks, so a client key never reaches an
// upstream alongside or instead of the tenant's.
var credentialHeaders = [][]byte{
	[]byte(fasthttp.HeaderAuthorization),
	[]byte("X-Api-Key"),
	[]byte("Api-Key"),
	[]byte("X-Goog-Api-Key"),
	[]byte("Proxy-Authorization"),
}

var recallHeaderPrefix = []byte("X-Recall-")

// connectionNames reports whether the values of a Connection header list
// name among their comma-separated options, as Caddy's and httputil's
// removeConnectionHeaders read them.
func connectionNames(values [][]byte, name []byte) bool {
	for _, v := range values {
		for len(v) > 0 {
			var option []byte
			option, v, _ = bytes.Cut(v, []byte(","))
			if bytes.EqualFold(bytes.TrimSpace(option), name) {
				return true
			}
		}
	}
	return false
}

// IsEventStream reports whether the upstream answers with an event stream.
func IsEventStream(resp *fasthttp.Response) bool {
	return bytes.HasPrefix(resp.Header.ContentType(), []byte("text/event-stream"))
}

// Body is the upstream's answer body as it streams in (an empty
// reader for an answer without one). A body cut short reads as an error,
// not as its end.
func Body(resp *fasthttp.Response) io.Reader {
	st := resp.BodyStream()
	if st == nil {
		return bytes.NewReader(resp.Body())
	}
	// A length-delimited body cut short is fasthttp's error already; a
	// body delimited by the connection's end ends there by definition.
	if c := connOf(resp); c != nil {
		return &streamBody{r: st, conn: c, chunked: resp.Header.ContentLength() == -1}
	}
	return st
}

// Release ends the body stream of an answer read or abandoned and
// returns resp to its pool. A body not read to its end closes the
// connection rather than drain it, and so does one whose connection the
// upstream closed.
func Release(resp *fasthttp.Response) {
	if c := connOf(resp); c != nil && c.closedByPeer.Load() {
		if st, ok := resp.BodyStream().(fasthttp.ReadCloserWithError); ok {
			_ = st.CloseWithError(errCutAtChunk)
		}
	}
	_ = resp.CloseBodyStream()
	fasthttp.ReleaseResponse(resp)
}

// Interrupt ends the body stream of resp from another goroutine than
// its reader's: a read blocked on the upstream returns at once.
func Interrupt(body io.Reader) {
	if c, ok := body.(fasthttp.ReadCloserWithError); ok {
		_ = c.CloseWithError(ErrInterrupted)
	}
}

// ErrInterrupted ends a body Interrupt interrupted.
var ErrInterrupted = errors.New("uplink: upstream stream interrupted")

// idleConnDead reports whether an idle upstream connection can no longer
// carry a request: the upstream closed or reset it, or sent bytes nobody
// asked for (a late error page, a TLS alert before its close), which the
// next request would read as its answer. A connection this cannot look
// into is taken as alive (a request that finds it closed is sent again,
// see Do).
func idleConnDead(c net.Conn) bool {
	pending, closed, err := sock.Peek(c)
	return err == nil && (pending || closed)
}
