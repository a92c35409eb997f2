package pipeline

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/wire"
)

// Pump is the pump stage: it reads an upstream's event stream r into asm
// until the answer is whole, and hands every event to onEvent as it
// comes: its bytes as they came, the deltas asm read from it (none for a
// comment or a ping), and whether it is the event that completes the
// answer.
// onEvent must not keep deltas; an error it returns ends the pump and is
// returned as it is (a client gone).
//
// The answer is bounded as a whole by max bytes of event data. A stream
// is whole at the event asm says completes it, or at a clean end that
// asm, a wire.Completer, accepts. Every error but onEvent's is classified
// for the client (apierr); the upstream's own error event is an
// *UpstreamEvent, so that a relay in the upstream's protocol can hand it
// on as it came.
//
// With relay set the deltas are not wanted but for the answer's Finish,
// nor the answer's canonical message: an assembler that can
// (wire.Relayer) reads the events and the answer without them.
func Pump(r io.Reader, asm wire.Assembler, max int, relay bool, onEvent func(raw []byte, deltas []wire.Delta, last bool) error) (wire.Answer, error) {
	er := eventReaders.Get().(*chat.EventReader)
	er.Reset(r, max)
	defer func() {
		er.Reset(nil, max)
		eventReaders.Put(er)
	}()
	var deltas []wire.Delta
	rl, _ := asm.(wire.Relayer)
	if !relay {
		rl = nil
	}
	finished := false
	total := 0
	for done := false; !done; {
		ev, rerr := er.Next()
		if len(ev.Raw) > 0 {
			if len(ev.Data) > 0 {
				if total += len(ev.Data); total > max {
					return wire.Answer{}, fmt.Errorf("%w: the streamed answer is larger than %d bytes", apierr.UpstreamTooLarge, max)
				}
				var err error
				if rl != nil {
					var fin bool
					fin, done, err = rl.Relay(ev.Name, ev.Data)
					deltas = deltas[:0]
					if fin && !finished {
						finished = true
						deltas = append(deltas, wire.Delta{Kind: wire.Finish})
					}
				} else {
					deltas, done, err = asm.Event(deltas[:0], ev.Name, ev.Data)
				}
				if err != nil {
					err = fmt.Errorf("%w: %w", apierr.UpstreamBadResponse, err)
					if errors.Is(err, wire.ErrUpstream) {
						return wire.Answer{}, &UpstreamEvent{Raw: slices.Clone(ev.Raw), err: err}
					}
					return wire.Answer{}, err
				}
			} else {
				deltas = deltas[:0]
			}
			if err := onEvent(ev.Raw, deltas, done); err != nil {
				return wire.Answer{}, err
			}
		}
		switch {
		case done:
		case rerr == io.EOF:
			if c, ok := asm.(wire.Completer); !ok || !c.Complete() {
				return wire.Answer{}, fmt.Errorf("%w: the stream ended before the answer did", apierr.UpstreamStreamCut)
			}
			done = true
		case errors.Is(rerr, chat.ErrEventTooLarge):
			return wire.Answer{}, fmt.Errorf("%w: %w", apierr.UpstreamTooLarge, rerr)
		case rerr != nil:
			return wire.Answer{}, fmt.Errorf("%w: %w", apierr.UpstreamStreamCut, rerr)
		}
	}
	var a wire.Answer
	var err error
	if rl != nil {
		a, err = rl.StoredAnswer()
	} else {
		a, err = asm.Answer()
	}
	if err != nil {
		return wire.Answer{}, fmt.Errorf("%w: %w", apierr.UpstreamBadResponse, err)
	}
	return a, nil
}

// eventReaders recycles the pump's event readers and their buffers, one a
// stream: nothing holds an event past Pump (an UpstreamEvent is a copy).
var eventReaders = sync.Pool{New: func() any { return new(chat.EventReader) }}

// UpstreamEvent is a stream that ended with the upstream's own error
// event (Raw, as it came).
type UpstreamEvent struct {
	Raw []byte
	err error
}

func (e *UpstreamEvent) Error() string { return e.err.Error() }
func (e *UpstreamEvent) Unwrap() error { return e.err }
