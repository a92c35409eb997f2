package pipeline

import (
	"fmt"
	"hash/maphash"
	"slices"
	"sync/atomic"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/wire"
)

// A bridged request (a client's protocol other than its upstream's)
// sends its whole stored context translated, and that context is the
// same on every request but for the newest turns. translations keeps
// each message's chat-completions encoding by content, so that a request
// decodes and encodes only what is new. Chat completions alone: its codec
// writes each canonical message apart from its neighbours (but for a run
// of assistant messages, which it joins), so one message's encoding is
// its part of any sequence's.
//
// The memo is direct-mapped: a slot holds the last message hashed to it,
// replaced by the next, which bounds its memory without the bookkeeping
// of an eviction order. An entry is found by a 128-bit hash of the
// message's protocol and bytes (two seeded hashes, drawn per process),
// never by a message's identity: an edited message hashes elsewhere, and
// an erased one is never asked for again (a request that sends its exact
// bytes holds them already).
const (
	translationSlots = 1 << 15
	// maxTranslationBytes bounds the encoding of a message the memo keeps:
	// a huge one costs its memory and is rarely sent twice.
	maxTranslationBytes = 64 << 10
)

// translation is one message's encoding in protocol to (chat
// completions, or any protocol for an instruction: instructions), role
// its canonical role, which decides whether it joins its neighbours.
type translation struct {
	h1, h2   uint64
	size     int
	from, to wire.Protocol
	role     string
	out      [][]byte
}

// holds reports whether t is m's translation to protocol to, hashed as
// h1 and h2 (translationKey).
func (t *translation) holds(m *plan.Message, to wire.Protocol, h1, h2 uint64) bool {
	return t != nil && t.h1 == h1 && t.h2 == h2 && t.size == len(m.Raw) && t.from == m.Protocol && t.to == to
}

var (
	translated       [translationSlots]atomic.Pointer[translation]
	transA, transB   = maphash.MakeSeed(), maphash.MakeSeed()
	translationCalls atomic.Uint64 // decodes on a miss; tests read it
)

// translationKey returns the slot and the hashes of a message's
// translation to protocol to.
func translationKey(m *plan.Message, to wire.Protocol) (*atomic.Pointer[translation], uint64, uint64) {
	h1 := maphash.Bytes(transA, m.Raw) ^ uint64(m.Protocol) ^ uint64(to)<<8
	h2 := maphash.Bytes(transB, m.Raw)
	return &translated[h1&(translationSlots-1)], h1, h2
}

// appendChat appends msgs encoded as chat completions to dst, each from
// translated when it holds it. It returns what Encode of all of them
// would: a run of assistant messages is encoded together.
func appendChat(dst [][]byte, msgs []plan.Message) ([][]byte, error) {
	// ts holds each message's translation; decoded, the few decoded on a
	// miss, for a run of assistant messages to use (a slice of
	// wire.Message a message was 8 KB a request for a 50-turn window).
	type decodedAt struct {
		i int
		m wire.Message
	}
	ts := make([]*translation, len(msgs))
	var decoded []decodedAt
	for i := range msgs {
		m := &msgs[i]
		slot, h1, h2 := translationKey(m, wire.ChatCompletions)
		if t := slot.Load(); t.holds(m, wire.ChatCompletions, h1, h2) {
			ts[i] = t
			continue
		}
		cm, err := decode(m)
		if err != nil {
			return nil, err
		}
		decoded = append(decoded, decodedAt{i, cm})
		translationCalls.Add(1)
		out, err := wire.For(wire.ChatCompletions).Encode(nil, []wire.Message{cm})
		if err != nil {
			return nil, err
		}
		ts[i] = &translation{h1: h1, h2: h2, size: len(m.Raw), from: m.Protocol, to: wire.ChatCompletions, role: cm.Role, out: capped(out)}
		if n := encodedSize(out); n <= maxTranslationBytes {
			slot.Store(ts[i])
		}
	}
	for i := 0; i < len(ts); {
		j := i + 1
		for j < len(ts) && ts[j].role == wire.RoleAssistant && ts[j-1].role == wire.RoleAssistant {
			j++
		}
		if j == i+1 {
			dst = append(dst, ts[i].out...)
			i = j
			continue
		}
		// A run of assistant messages goes as one.
		run := make([]wire.Message, 0, j-i)
		for k := i; k < j; k++ {
			at := slices.IndexFunc(decoded, func(d decodedAt) bool { return d.i == k })
			if at >= 0 {
				run = append(run, decoded[at].m)
				continue
			}
			cm, err := decode(&msgs[k])
			if err != nil {
				return nil, err
			}
			run = append(run, cm)
		}
		var err error
		if dst, err = wire.For(wire.ChatCompletions).Encode(dst, run); err != nil {
			return nil, err
		}
		i = j
	}
	return dst, nil
}

// appendInstructions appends msgs, instructions and the summary, in
// protocol up (not chat completions: appendChat) to dst: each in up as
// stored, each other one translated alone, from translated when it holds
// it. Every codec writes an instruction apart from its neighbours (a
// message item of its own, a system block, a systemInstruction part), so
// one instruction's encoding is its part of any sequence's. ok is false,
// and dst as given, when one of another protocol is not an instruction
// by its role: the caller then encodes them together.
func appendInstructions(dst [][]byte, up wire.Protocol, msgs []plan.Message) (out [][]byte, ok bool, err error) {
	start := len(dst)
	for i := range msgs {
		m := &msgs[i]
		if m.Protocol == up {
			dst = append(dst, m.Raw)
			continue
		}
		slot, h1, h2 := translationKey(m, up)
		if t := slot.Load(); t.holds(m, up, h1, h2) {
			dst = append(dst, t.out...)
			continue
		}
		cm, err := decode(m)
		if err != nil {
			return dst[:start], false, err
		}
		if cm.Role != wire.RoleSystem && cm.Role != wire.RoleDeveloper {
			return dst[:start], false, nil
		}
		translationCalls.Add(1)
		enc, err := wire.For(up).Encode(nil, []wire.Message{cm})
		if err != nil {
			return dst[:start], false, err
		}
		t := &translation{h1: h1, h2: h2, size: len(m.Raw), from: m.Protocol, to: up, role: cm.Role, out: capped(enc)}
		if encodedSize(enc) <= maxTranslationBytes {
			slot.Store(t)
		}
		dst = append(dst, t.out...)
	}
	return dst, true, nil
}

// decode reads m into the canonical model.
func decode(m *plan.Message) (wire.Message, error) {
	cm, err := wire.For(m.Protocol).Decode(m.Raw)
	if err != nil {
		return cm, fmt.Errorf("%w: %w", apierr.Internal, err)
	}
	return cm, nil
}

// capped returns out with each message's capacity cut to its length: an
// append by a caller copies rather than writing into the memo's bytes.
func capped(out [][]byte) [][]byte {
	for i, b := range out {
		out[i] = b[:len(b):len(b)]
	}
	return out[:len(out):len(out)]
}

// encodedSize is the bytes of out's messages.
func encodedSize(out [][]byte) int {
	n := 0
	for _, b := range out {
		n += len(b)
	}
	return n
}
