package upstreamtest

import (
	"context"
	"net/http"
	"strconv"
)

// beforeAnswer plays what a scripted reply does before any answer byte:
// the hold, the delay, a scripted status and a reset before headers. A
// scripted status is written by writeStatus in the protocol's own error
// shape (status 0 is read as 500); a reset before headers is done by
// drop. It reports whether the answer should go on.
func (s *Server) beforeAnswer(ctx context.Context, reply Reply, gate <-chan struct{}, writeStatus func(status int), drop func()) bool {
	if reply.Hold && !s.stall(ctx, gate) {
		return false
	}
	if reply.Delay > 0 && !sleep(ctx, reply.Delay) {
		return false
	}
	if reply.Fault == FaultNone && reply.Status != 0 && reply.Status != http.StatusOK {
		reply.Fault = FaultStatus
	}
	switch reply.Fault {
	case FaultStatus:
		status := reply.Status
		if status == 0 {
			status = http.StatusInternalServerError
		}
		writeStatus(status)
		return false
	case FaultResetBeforeHeaders:
		drop()
		return false
	}
	return true
}

// beforeOpenAIAnswer is beforeAnswer for an OpenAI-shaped HTTP answer
// (chat completions, Responses): a scripted status is written as OpenAI
// writes it, with the reply's Retry-After.
func (s *Server) beforeOpenAIAnswer(ctx context.Context, w http.ResponseWriter, reply Reply, gate <-chan struct{}) bool {
	writeStatus := func(status int) {
		s.writeError(w, status, statusError(status, reply.Content), reply.RetryAfter)
	}
	return s.beforeAnswer(ctx, reply, gate, writeStatus, resetBeforeHeaders(w))
}

// resetBeforeHeaders is beforeAnswer's drop for an HTTP answer.
func resetBeforeHeaders(w http.ResponseWriter) func() {
	return func() { reset(w, true) }
}

// writeBody writes a non-streamed JSON answer with the reply's mid-body
// faults: malformed (the first half only, as if it were all), cut after
// half, or stalled after half until the gate opens; gz compresses what is
// sent. Headers already set on w stay; Content-Type, Content-Encoding and
// Content-Length are set here.
func (s *Server) writeBody(ctx context.Context, w http.ResponseWriter, body []byte, fault Fault, gz bool, gate <-chan struct{}) {
	if fault == FaultMalformedJSON {
		body = body[:len(body)/2]
	}
	h := w.Header()
	h["Content-Type"] = []string{"application/json"}
	if gz {
		h["Content-Encoding"] = []string{"gzip"}
		body = gzipBytes(body)
	}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(http.StatusOK)
	switch fault {
	case FaultCutMidStream:
		_, _ = w.Write(body[:len(body)/2])
		flush(w)
		reset(w, false)
	case FaultStallMidStream:
		_, _ = w.Write(body[:len(body)/2])
		flush(w)
		if !s.stall(ctx, gate) {
			return
		}
		_, _ = w.Write(body[len(body)/2:])
	default:
		_, _ = w.Write(body)
	}
}

// faultIndex is the index of the event at which a mid-stream fault
// strikes in a stream of n events: about halfway, never before first and
// never past the last; -1 when the fault is not a mid-stream one.
func faultIndex(fault Fault, n, first int) int {
	switch fault {
	case FaultCutMidStream, FaultStallMidStream, FaultMalformedJSON, FaultErrorEvent:
		return min(max(first, n/2), n-1)
	}
	return -1
}

// streamFaults is how one protocol's stream plays the mid-stream
// faults: cut drops the connection; malformed sends event i cut short
// (an object never closed) and reports whether the stream goes on;
// errorEvent sends the error event that ends the stream at event i.
type streamFaults struct {
	cut        func()
	malformed  func(i int) bool
	errorEvent func(i int)
}

// sendEvents sends a stream's n events in order with send, which
// reports whether the stream goes on, and plays the reply's mid-stream
// fault at event faultIndex(fault, n, first) with f, or a stall there
// until the gate opens. It reports whether every event was sent.
func (s *Server) sendEvents(ctx context.Context, fault Fault, n, first int, gate <-chan struct{}, f streamFaults, send func(i int) bool) bool {
	faultAt := faultIndex(fault, n, first)
	for i := range n {
		if i == faultAt {
			switch fault {
			case FaultCutMidStream:
				f.cut()
				return false
			case FaultStallMidStream:
				if !s.stall(ctx, gate) {
					return false
				}
			case FaultMalformedJSON:
				if !f.malformed(i) {
					return false
				}
			case FaultErrorEvent:
				f.errorEvent(i)
				return false
			}
		}
		if !send(i) {
			return false
		}
	}
	return true
}

// cutConnection is streamFaults.cut for an HTTP stream.
func cutConnection(w http.ResponseWriter) func() {
	return func() { reset(w, false) }
}
