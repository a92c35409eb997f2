package pipeline

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"errors"
	"fmt"
	"io"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/wire"
)

// Reading an upstream's answer: a whole one (ParseAnswer), a round of
// the history tools' streamed or whole (ReadRound); a stream's events go
// through the pump (Pump).

// ErrTooLarge is a body past its limit (ReadLimited).
var ErrTooLarge = errors.New("proxy: body too large")

// ReadLimited reads r whole, failing with ErrTooLarge past limit bytes.
func ReadLimited(r io.Reader, limit int) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, ErrTooLarge
	}
	return b, nil
}

// Decoder returns a reader decoding r, of content encoding enc.
func Decoder(enc string, r io.Reader) (io.Reader, error) {
	switch enc {
	case "gzip", "x-gzip":
		return gzip.NewReader(r)
	case "deflate":
		return flate.NewReader(r), nil
	}
	return nil, fmt.Errorf("proxy: unsupported content encoding %q", enc)
}

// Decode returns raw decoded per its content encoding, bounded by limit.
func Decode(enc string, raw []byte, limit int) ([]byte, error) {
	if enc == "" || enc == "identity" {
		return raw, nil
	}
	zr, err := Decoder(enc, bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	return ReadLimited(zr, limit)
}

// ParseAnswer reads an upstream's whole answer (enc: its content
// encoding); for a client of the upstream's own protocol (same), which
// gets the answer's bytes and whose stored form they are, without its
// canonical message when the upstream can leave it out
// (wire.StoredParser).
func ParseAnswer(up wire.Upstream, enc string, raw []byte, max int, same bool) (wire.Answer, error) {
	// The upstream's parser refuses an answer that is not JSON
	// (wire.Upstream): it is not checked twice.
	decoded, err := Decode(enc, raw, max)
	var a wire.Answer
	if err == nil {
		if sp, ok := up.(wire.StoredParser); ok && same {
			a, err = sp.ParseStored(decoded)
		} else {
			a, err = up.ParseAnswer(decoded)
		}
	}
	if errors.Is(err, ErrTooLarge) {
		return wire.Answer{}, fmt.Errorf("%w: decode upstream answer: %w", apierr.UpstreamTooLarge, err)
	}
	if err != nil {
		return wire.Answer{}, fmt.Errorf("%w: %w", apierr.UpstreamBadResponse, err)
	}
	return a, nil
}

// ReadRound reads one round of the history tools' answer from body (an
// event stream through the pump, or a whole answer when the upstream did
// not stream; enc its content encoding, the answer bounded by max bytes)
// and writes to w what the client may see of it (f) as it comes,
// rendered by ren.
func ReadRound(w Writer, body io.Reader, enc string, stream bool, up wire.Upstream, max int,
	ren wire.Renderer, f *RoundFilter) (wire.Answer, error) {
	if enc != "" {
		var err error
		if body, err = Decoder(enc, body); err != nil {
			return wire.Answer{}, fmt.Errorf("%w: %w", apierr.UpstreamBadResponse, err)
		}
	}
	var out []byte
	if !stream {
		raw, err := ReadLimited(body, max)
		switch {
		case errors.Is(err, ErrTooLarge):
			return wire.Answer{}, fmt.Errorf("%w: read upstream answer: %w", apierr.UpstreamTooLarge, err)
		case err != nil:
			return wire.Answer{}, fmt.Errorf("%w: read upstream answer: %w", apierr.UpstreamStreamCut, err)
		}
		a, err := ParseAnswer(up, "", raw, max, false)
		if err != nil {
			return wire.Answer{}, err
		}
		for _, d := range AnswerDeltas(&a) {
			out = f.Render(out, ren, d)
		}
		return a, WriteFlush(w, out)
	}
	return Pump(body, up.NewAssembler(), max, false, func(_ []byte, deltas []wire.Delta, _ bool) error {
		out = out[:0]
		for _, d := range deltas {
			out = f.Render(out, ren, d)
		}
		return WriteFlush(w, out)
	})
}
