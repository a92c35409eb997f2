package uplink

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// A replica that receives a request on a conversation another replica
// owns (package fleet) forwards it there: the link between replicas is
// the link to an upstream with the client's request kept whole, its
// credentials and Recall's own headers included, since the owner serves
// it as if the client had sent it there.

// HeaderForwarded marks a request one replica forwarded to another; its
// value is the forwarding replica's id. A request that carries it is
// served where it lands, never forwarded again (no loops, whatever two
// replicas think of who owns what), and it never goes upstream.
const HeaderForwarded = "Recall-Forwarded"

// peerDialTimeout bounds the dial of a connection to another replica: a
// replica that went away is found fast, and its request served where it
// came.
const peerDialTimeout = time.Second

// idlePeer is how long a connection to another replica is kept idle:
// Recall's server keeps a connection for minutes between requests.
const idlePeer = 30 * time.Second

// PeerClient returns the client that forwards requests to other
// replicas: DefaultClient's (answers streamed, paths as written, no
// redirects, one more attempt for a request a reused connection lost
// before any byte of its answer: Do), but dialing directly, never
// through a proxy from the environment (replicas reach each other at
// the address replica_url gives), within peerDialTimeout, and keeping
// idle connections longer.
func PeerClient() *fasthttp.Client {
	c := newClient()
	c.StreamResponseBody = true
	c.Dial = dialPeer
	c.MaxIdleConnDuration = idlePeer
	return c
}

// ErrPeerUnreachable is a failure to connect to another replica: no
// byte of the request reached it (a timeout among them).
var ErrPeerUnreachable = errors.New("uplink: the replica could not be reached")

// dialPeer dials another replica directly.
func dialPeer(addr string) (net.Conn, error) {
	c, err := fasthttp.DialTimeout(addr, peerDialTimeout)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPeerUnreachable, err)
	}
	return track(c), nil
}

// SetPeerRequest fills req with the client's request forwarded to the
// replica at base ("http://host:port"): the same method, the path and
// query byte for byte as the client sent them (a /c/{id} prefix
// included), and the client's headers but the hop-by-hop ones (those
// of hopHeaders, those its Connection header names, and Expect, which
// this replica answered), credentials and Recall's own headers
// included: the owner authenticates the request and reads them again.
// Then HeaderForwarded, with from, this replica's id. The body is the
// caller's to set.
func SetPeerRequest(req *fasthttp.Request, rc *fasthttp.RequestCtx, base, from string) {
	req.Header.SetMethodBytes(rc.Method())
	src := &rc.Request.Header
	var namedBuf [4][]byte
	named := connectionOptions(src, namedBuf[:0])
	// The client's header names are as fasthttp's server normalized
	// them: adding them does not normalize them again.
	req.Header.DisableNormalizing()
	for k, v := range src.All() {
		if !isHop(k) && !isExpect(k) && !connectionNames(named, k) {
			req.Header.AddBytesKV(k, v)
		}
	}
	req.Header.EnableNormalizing()
	req.Header.Set(HeaderForwarded, from)
	var buf [512]byte
	u := append(buf[:0], strings.TrimSuffix(base, "/")...)
	u = append(u, rc.URI().PathOriginal()...)
	if q := rc.URI().QueryString(); len(q) > 0 {
		u = append(u, '?')
		u = append(u, q...)
	}
	req.SetRequestURIBytes(u)
	req.URI().DisablePathNormalizing = true
}

var headerExpect = []byte(fasthttp.HeaderExpect)

func isExpect(name []byte) bool {
	return len(name) == len(headerExpect) && bytes.EqualFold(name, headerExpect)
}
