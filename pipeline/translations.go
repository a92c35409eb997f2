package pipeline

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/wire"
)

// A bridged request (a client's protocol other than its upstream's)
// sends its whole stored context translated, and that context is the
// same on every request but for the newest turns. translations keeps the
// upstream's encoding of each message, and of each run of messages its
// codec joins (wire.Separable), by content, so that a request decodes and
// encodes only what is new. An upstream whose codec is not Separable
// (Gemini's function responses name the call they answer, which another
// message holds) is encoded whole, every request.
//
// The memo is direct-mapped: a slot holds the last entry hashed to it,
// replaced by the next, which needs no bookkeeping of an eviction order. An entry is found by a 128-bit hash of its
// messages' protocols and bytes (two seeded hashes, drawn per process),
// never by a message's identity: an edited message hashes elsewhere, and
// an erased one is never asked for again (a request that sends its exact
// bytes holds them already).
//
// The memo's memory is bounded in bytes, not by its slots: an entry is
// kept only while the encodings kept stay within translationBudget
// (replacing a slot's entry frees that entry's share). A full memo still
// takes an entry into an occupied slot whose entry is as large or
// larger, so that it follows the traffic.
const (
	// translationSlots is enough that a process's hot conversations fit:
	// the load script's 1,000 conversations of 50 turns are over 100,000
	// messages.
	translationSlots = 1 << 18
	// translationBudget bounds the bytes of the encodings kept (each
	// entry counted with translationOverhead).
	translationBudget = 64 << 20
	// translationOverhead is an entry's bytes beside its encoding: the
	// translation and its slice of messages.
	translationOverhead = 96
	// maxTranslationBytes bounds the encoding the memo keeps: a huge one
	// costs its memory and is rarely sent twice.
	maxTranslationBytes = 64 << 10
)

// memoKey names an entry: the hashes of its messages (one, or a run's),
// their bytes' total size, the protocol of the first, and the protocol
// they are translated to.
type memoKey struct {
	h1, h2   uint64
	size     int
	from, to wire.Protocol
}

// translation is the encoding in protocol to of one message (role its
// canonical role, which decides whether it joins its neighbours), or of
// a run of messages that protocol joins (role ""); bytes is its share of
// translationBudget.
type translation struct {
	memoKey
	role  string
	out   [][]byte
	bytes int64
}

// newTranslation returns the translation k names, out capped.
func newTranslation(k memoKey, role string, out [][]byte) *translation {
	out = capped(out)
	return &translation{memoKey: k, role: role, out: out, bytes: int64(encodedSize(out) + translationOverhead + 24*len(out))}
}

// keep puts t in slot unless its encoding is too large to keep, or
// keeping it would take the memo past budget (translatedBytes counts
// what is kept).
func keep(slot *atomic.Pointer[translation], t *translation, budget int64) {
	if encodedSize(t.out) > maxTranslationBytes {
		return
	}
	old := slot.Load()
	delta := t.bytes
	if old != nil {
		delta -= old.bytes
	}
	if delta > 0 && translatedBytes.Load()+delta > budget {
		return
	}
	if slot.CompareAndSwap(old, t) {
		translatedBytes.Add(delta)
	}
}

// holds reports whether t is the translation k names.
func (t *translation) holds(k memoKey) bool { return t != nil && t.memoKey == k }

var (
	// translated is the memo's table, made on a process's first
	// translation: a process that bridges nothing neither holds its 2 MiB
	// nor has the collector scan them.
	translated = sync.OnceValue(func() *[translationSlots]atomic.Pointer[translation] {
		return new([translationSlots]atomic.Pointer[translation])
	})
	transA, transB   = maphash.MakeSeed(), maphash.MakeSeed()
	translationCalls atomic.Uint64 // decodes to translate; tests read it
	translatedBytes  atomic.Int64  // the kept entries' bytes (translation.bytes)
)

// translationKey returns the slot and the key of a message's translation
// to protocol to.
func translationKey(m *plan.Message, to wire.Protocol) (*atomic.Pointer[translation], memoKey) {
	h1 := maphash.Bytes(transA, m.Raw) ^ uint64(m.Protocol) ^ uint64(to)<<8
	h2 := maphash.Bytes(transB, m.Raw)
	k := memoKey{h1: h1, h2: h2, size: len(m.Raw), from: m.Protocol, to: to}
	return &translated()[h1&(translationSlots-1)], k
}

// runKey returns the slot and the key of the translation of a run of
// messages, ts their own translations.
func runKey(ts []*translation) (*atomic.Pointer[translation], memoKey) {
	var a, b maphash.Hash
	a.SetSeed(transA)
	b.SetSeed(transB)
	k := memoKey{from: ts[0].from, to: ts[0].to}
	var word [8]byte
	for _, t := range ts {
		binary.LittleEndian.PutUint64(word[:], t.h1)
		a.Write(word[:])
		binary.LittleEndian.PutUint64(word[:], t.h2)
		b.Write(word[:])
		k.size += t.size
	}
	k.h1, k.h2 = a.Sum64(), b.Sum64()
	return &translated()[k.h1&(translationSlots-1)], k
}

// appendJoined appends msgs encoded in protocol up, whose codec is j, to
// dst, each message and each run of them j joins from translated when it
// holds it. It returns what up's Encode of all of them would.
func appendJoined(dst [][]byte, up wire.Protocol, j wire.Separable, msgs []plan.Message) ([][]byte, error) {
	// ts holds each message's translation; decoded, the few decoded on a
	// miss, for a run to use (a slice of wire.Message a message was 8 KB
	// a request for a 50-turn window).
	type decodedAt struct {
		i int
		m wire.Message
	}
	ts := make([]*translation, len(msgs))
	var decoded []decodedAt
	for i := range msgs {
		m := &msgs[i]
		slot, k := translationKey(m, up)
		if t := slot.Load(); t.holds(k) {
			ts[i] = t
			continue
		}
		cm, err := decode(m)
		if err != nil {
			return nil, err
		}
		decoded = append(decoded, decodedAt{i, cm})
		out, err := wire.For(up).Encode(nil, []wire.Message{cm})
		if err != nil {
			return nil, err
		}
		ts[i] = newTranslation(k, cm.Role, out)
		keep(slot, ts[i], translationBudget)
	}
	for i := 0; i < len(ts); {
		n := i + 1
		for n < len(ts) && j.Joins(ts[n-1].role, ts[n].role) {
			n++
		}
		if n == i+1 {
			dst = append(dst, ts[i].out...)
			i = n
			continue
		}
		// A run goes as one.
		slot, k := runKey(ts[i:n])
		if t := slot.Load(); t.holds(k) {
			dst = append(dst, t.out...)
			i = n
			continue
		}
		run := make([]wire.Message, 0, n-i)
		for at := i; at < n; at++ {
			if d := slices.IndexFunc(decoded, func(d decodedAt) bool { return d.i == at }); d >= 0 {
				run = append(run, decoded[d].m)
				continue
			}
			cm, err := decode(&msgs[at])
			if err != nil {
				return nil, err
			}
			run = append(run, cm)
		}
		out, err := wire.For(up).Encode(nil, run)
		if err != nil {
			return nil, err
		}
		t := newTranslation(k, "", out)
		keep(slot, t, translationBudget)
		dst = append(dst, t.out...)
		i = n
	}
	return dst, nil
}

// appendInstructions appends msgs, instructions and the summary, in
// protocol up (not chat completions: appendJoined) to dst: each in up as
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
		slot, k := translationKey(m, up)
		if t := slot.Load(); t.holds(k) {
			if t.role != wire.RoleSystem && t.role != wire.RoleDeveloper {
				return dst[:start], false, nil
			}
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
		enc, err := wire.For(up).Encode(nil, []wire.Message{cm})
		if err != nil {
			return dst[:start], false, err
		}
		t := newTranslation(k, cm.Role, enc)
		keep(slot, t, translationBudget)
		dst = append(dst, t.out...)
	}
	return dst, true, nil
}

// decode reads m into the canonical model, for a translation.
func decode(m *plan.Message) (wire.Message, error) {
	translationCalls.Add(1)
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
