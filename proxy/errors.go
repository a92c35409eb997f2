package proxy

import (
	"context"
	"errors"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/wire"
)

var (
	errInterrupted = errors.New("proxy: upstream stream interrupted")
)

// upstreamError marks an error that came from talking to the upstream:
// sending the request, or reading its answer. Only such errors are
// answered as the upstream's fault (502, 504).
type upstreamError struct{ err error }

func (e *upstreamError) Error() string { return e.err.Error() }
func (e *upstreamError) Unwrap() error { return e.err }

// upstreamErr marks err as the upstream's (nil stays nil). Wrap what
// client.Do and reads of the upstream's answer return, where they return
// it.
func upstreamErr(err error) error {
	if err == nil {
		return nil
	}
	return &upstreamError{err}
}

// classify maps any pipeline error to the catalogue entry it is answered
// with: the one place the chat path decides a status.
// An error is the upstream's only if it is marked so (upstreamErr): a
// timeout is a 504, anything else a 502. Every other unrecognised error is
// a local failure, a 500 whose message says nothing of the cause (the log
// has it).
func classify(err error) *apierr.Error {
	var ae *apierr.Error
	var re *chat.Error
	var cle *history.ContextLengthError
	var ue *upstreamError
	var fe *wire.FileError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &re):
		return apierr.Invalid(re.Code, re.Param, re.Message)
	case errors.As(err, &fe):
		return apierr.UnsupportedFile(fe.Reason)
	case errors.As(err, &cle):
		return apierr.ContextLength(cle.Message())
	case errors.As(err, &ue):
		var te interface{ Timeout() bool } // net.Error's, and fasthttp.ErrTimeout's
		if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &te) && te.Timeout() {
			return apierr.UpstreamTimeout
		}
		return apierr.UpstreamUnavailable
	default:
		return apierr.Internal
	}
}

// writeError renders e as OpenAI does.
func writeError(rc *fasthttp.RequestCtx, e *apierr.Error) { apierr.Write(rc, e, apierr.OpenAI) }

// errorBody is e in OpenAI's error shape.
func errorBody(e *apierr.Error) []byte { return apierr.OpenAI(e) }
