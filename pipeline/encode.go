package pipeline

import (
	"slices"

	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/wire"
)

// EncodePlan returns the planned messages in the upstream's protocol,
// instructions (and the summary) apart from the conversation. The
// conversation goes as stored when every message of it is in the
// upstream's protocol; when any is not, it goes through the canonical
// model, so the upstream's codec shapes every turn by its rules
// (Anthropic's alternation, chat's tool messages). Instructions are each
// written apart from their neighbours, so to an upstream of another
// protocol than chat completions those in its protocol go as stored and
// the others (the summary, a chat message) are translated one by one,
// from the memo of translations (encodeInstructions). The summary thus
// leaves a conversation and its instructions in the upstream's protocol
// as stored: their bytes do not change when a summary appears (the
// upstream's prompt cache keeps them), and neither a long context nor
// the summary is decoded and encoded again on every request. asStored
// reports that the conversation's messages went as they were stored.
func EncodePlan(up wire.Protocol, msgs []plan.Message) (instr, conv [][]byte, asStored bool, err error) {
	return EncodePlanIn(nil, up, msgs)
}

// EncodePlanIn is EncodePlan laying both lists out in scratch when it
// has room for len(msgs) (a caller's recycled array: instr and conv
// alias it), in an array of its own otherwise.
func EncodePlanIn(scratch [][]byte, up wire.Protocol, msgs []plan.Message) (instr, conv [][]byte, asStored bool, err error) {
	n := 0
	for n < len(msgs) && (msgs[n].Kind == plan.Instruction || msgs[n].Kind == plan.SummaryMessage) {
		n++
	}
	all := scratch[:cap(scratch)] // one array for both, when they go as stored
	if len(all) < len(msgs) {
		all = make([][]byte, len(msgs))
	}
	if instr, err = encodeInstructions(all[:0:n], up, msgs[:n]); err != nil {
		return nil, nil, false, err
	}
	if conv, asStored, err = appendEncoded(all[n:n], up, msgs[n:]); err != nil {
		return nil, nil, false, err
	}
	return instr, conv, asStored, nil
}

// encodeInstructions appends the instructions and the summary (msgs) in
// protocol up to dst: to any protocol but chat completions each one
// apart, those of another protocol from the memo of translations
// (appendInstructions), so that a summary (a chat message) beside
// instructions in the upstream's protocol costs a request neither a
// decode nor an encode, and the instructions keep their stored bytes.
func encodeInstructions(dst [][]byte, up wire.Protocol, msgs []plan.Message) ([][]byte, error) {
	if up != wire.ChatCompletions {
		out, ok, err := appendInstructions(dst, up, msgs)
		if ok || err != nil {
			return out, err
		}
	}
	out, _, err := appendEncoded(dst, up, msgs)
	return out, err
}

// appendEncoded appends msgs in protocol up to dst: as stored (reporting
// so) when every one is in it, else all of them through the canonical
// model and up's codec (to a protocol whose codec is wire.Separable, each
// message and each run it joins from the memo of translations when it
// holds it).
func appendEncoded(dst [][]byte, up wire.Protocol, msgs []plan.Message) ([][]byte, bool, error) {
	same := true
	for i := range msgs {
		same = same && msgs[i].Protocol == up
	}
	if same {
		for i := range msgs {
			dst = append(dst, msgs[i].Raw)
		}
		return dst, true, nil
	}
	if j, ok := wire.For(up).(wire.Separable); ok {
		dst, err := appendJoined(dst, up, j, msgs)
		return dst, false, err
	}
	canon := make([]wire.Message, 0, len(msgs))
	for i := range msgs {
		cm, err := decode(&msgs[i])
		if err != nil {
			return nil, false, err
		}
		canon = append(canon, cm)
	}
	dst, err := wire.For(up).Encode(dst, canon)
	return dst, false, err
}

// InPlace returns the planned messages with the request's in-place
// instructions (wire.Request.InPlace: never stored, never merged) put back
// where the client placed them: right after the planned copy of the
// message the client sent before each (found by hash, from the end), at
// the start of the conversation for one the client sent first, or before
// the first new message when that message was not sent (curated out).
func InPlace(planned []plan.Message, p wire.Protocol, req *wire.Request) []plan.Message {
	if len(req.InPlace) == 0 {
		return planned
	}
	codec := wire.For(p)
	out := append([]plan.Message(nil), planned...)
	lastPrev, lastAt := -2, 0
	for _, idx := range req.InPlace {
		prev := idx - 1
		for prev >= 0 && slices.Contains(req.InPlace, prev) {
			prev--
		}
		at := -1
		switch {
		case prev == lastPrev: // after the one placed before it
			at = lastAt + 1
		case prev < 0:
			at = 0
			for at < len(out) && (out[at].Kind == plan.Instruction || out[at].Kind == plan.SummaryMessage) {
				at++
			}
		default:
			want := codec.Hash(req.Messages[prev])
			for i := len(out) - 1; i >= 0 && at < 0; i-- {
				if out[i].Kind == plan.History || out[i].Kind == plan.New {
					if wire.For(out[i].Protocol).Hash(out[i].Raw) == want {
						at = i + 1
					}
				}
			}
		}
		if at < 0 {
			at = len(out)
			for i, m := range out {
				if m.Kind == plan.New {
					at = i
					break
				}
			}
		}
		m := plan.Message{Kind: plan.New, Role: wire.RoleSystem, Protocol: p, Raw: req.Messages[idx]}
		out = slices.Insert(out, at, m)
		lastPrev, lastAt = prev, at
	}
	return out
}

// SameRaw reports whether a and b are the same values in the same
// memory: messages sent as the request holds them.
func SameRaw(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) || len(a[i]) > 0 && &a[i][0] != &b[i][0] {
			return false
		}
	}
	return true
}
