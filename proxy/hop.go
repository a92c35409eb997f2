package proxy

import (
	"errors"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/metrics"
	"github.com/recallproxy/recall/uplink"
)

// Fleet names the replica that owns a conversation among the replicas
// sharing the store; *fleet.Fleet implements it. A memory request on a
// conversation another replica owns is forwarded there (hop), so that
// one replica serves each conversation: its window cache and its lease
// stay warm.
type Fleet interface {
	// Owner returns the base URL of the replica that owns key, a
	// conversation's store key (its tenant's namespace, a zero byte, the
	// conversation), and whether that replica is this one. It is called
	// on every memory request: it must be cheap, and must not keep key.
	Owner(key string) (url string, self bool)
	// ID is this replica's id, which a forwarded request carries
	// (uplink.HeaderForwarded).
	ID() string
}

// keyForwarded is uplink.HeaderForwarded as fasthttp's server
// normalizes it.
var keyForwarded = []byte(uplink.HeaderForwarded)

// owner returns the URL of the replica that owns conversation conv of
// x's caller, if it is another replica and the request may go there: a
// request already forwarded (marked uplink.HeaderForwarded) is served
// where it lands, whoever this replica thinks owns it, so that no
// request goes round in a loop while two replicas' views differ.
func (s *Server) owner(rc *fasthttp.RequestCtx, x *exchange, conv string) (string, bool) {
	if s.cfg.Fleet == nil || len(rc.Request.Header.PeekCanonical(keyForwarded)) > 0 {
		return "", false
	}
	url, self := s.cfg.Fleet.Owner(x.c.Namespace + "\x00" + conv)
	return url, !self
}

// hop forwards the request to the replica at owner, which owns its
// conversation conv and serves it as if the client had sent it there
// (recording the turn: this replica records nothing), and relays its
// answer as it comes (relayAnswer). It reports false, having answered
// nothing, when the hop failed before any byte of the answer came back
// (the owner could not be reached, refused, or closed the connection):
// the caller then serves the request here, the store's lease keeping the
// conversation's history whole. A hop that timed out is answered 504
// here, not served again: the owner may have served it.
//
// body is the request's body, which stays the caller's: it is only read
// until hop returns. relayed reports whether a stream's relay took x,
// which then ends it.
func (s *Server) hop(rc *fasthttp.RequestCtx, x *exchange, body []byte, conv, owner string) (answered, relayed bool) {
	req := fasthttp.AcquireRequest()
	uplink.SetPeerRequest(req, rc, owner, s.cfg.Fleet.ID())
	req.SetBodyRaw(body)
	resp := fasthttp.AcquireResponse()
	resp.Header.SetNoDefaultContentType(true)
	// The owner's exchange is bounded by the tenant's timeout, and its
	// commit by the commit timeout.
	timeout := x.c.timeout() + s.cfg.CommitTimeout
	sent := x.now()
	err := uplink.Do(s.peers, req, resp, timeout)
	fasthttp.ReleaseRequest(req)
	if err != nil && (errors.Is(err, uplink.ErrPeerUnreachable) || !isTimeout(err)) {
		fasthttp.ReleaseResponse(resp)
		s.fellBack(x, owner, err)
		return false, false
	}
	s.metrics.Hop(metrics.HopForwarded)
	x.hop, x.rec.Sent, x.key.Conversation = owner, sent, conv
	if err != nil {
		fasthttp.ReleaseResponse(resp)
		x.fail(rc, upstreamErr(err))
		return true, false
	}
	return true, s.relayAnswer(rc, x, resp, sent.Add(timeout))
}

// isTimeout reports whether err is a timeout (fasthttp.ErrTimeout, or a
// net.Error's).
func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

// fellBack counts a hop that failed before its answer and logs it: each
// at debug level, with a warning at most once a minute, so that an owner
// unreachable for long (a replica_url the others cannot reach) shows.
func (s *Server) fellBack(x *exchange, owner string, err error) {
	s.metrics.Hop(metrics.HopFallback)
	now := s.cfg.Now().UnixNano()
	last := s.hopWarned.Load()
	msg := "the conversation's owner replica could not be reached: served here"
	if now-last >= int64(time.Minute) && s.hopWarned.CompareAndSwap(last, now) {
		s.log.Warn(msg, "owner", owner, "tenant", x.c.cfg.ID, "error", err.Error())
		return
	}
	s.log.Debug(msg, "owner", owner, "tenant", x.c.cfg.ID, "error", err.Error())
}
