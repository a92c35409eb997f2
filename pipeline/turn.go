package pipeline

import (
	"fmt"
	"slices"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/wire"
)

// RoundsLimitText is the final answer when the last allowed round of the
// history tools still called one: the upstream's answer is not sent.
const RoundsLimitText = "I could not finish looking through the conversation history within the allowed number of tool rounds."

// ToolTurn is what a history-tool exchange's rounds leave for its commit:
// Recall's rounds (its calls, then their results, two messages a round),
// the results of Recall's calls in a final answer that also calls the
// client's tools (Post), the ids of Recall's calls (Mine), and whether
// the rounds ran out (Limited: the final answer is RoundsLimitText).
type ToolTurn struct {
	Rounds  []wire.Message
	Post    *wire.Message
	Mine    map[string]bool
	Limited bool
}

// Finish returns the stored turn of a tool exchange whose final answer is
// a, stamped (Recall's rounds, the answer, the results of Recall's calls
// in it), and the answer as the client gets it, Recall's calls left out.
// relayed is the text a stream already gave the client in earlier
// rounds: the client holds it as the start of the answer's text, so the
// answer it gets starts with it, and the stored answer is hashed as the
// client holds it (a client that resends its history resends it so).
// count counts a stored message's tokens; stored is told, round by round
// (the final answer's is the last, last), which messages of the turn it
// produced.
func (t *ToolTurn) Finish(a wire.Answer, relayed string, count func(p wire.Protocol, raw []byte) int, stored func(round int, msgs []history.Message), last int) ([]history.Message, wire.Answer, error) {
	codec := wire.For(a.Protocol) // the stored form's protocol
	if t.Limited {
		a.Message = wire.Message{Role: wire.RoleAssistant, Parts: []wire.Part{{Kind: wire.Text, Text: RoundsLimitText}}}
		a.Stop = wire.StopEnd
		raws, err := codec.Encode(nil, []wire.Message{a.Message})
		if err != nil {
			return nil, wire.Answer{}, fmt.Errorf("%w: %w", apierr.Internal, err)
		}
		a.Stored = raws
	}
	s := &turnBuilder{codec: codec, proto: a.Protocol, count: count}
	for i := 0; i < len(t.Rounds); i += 2 {
		from := len(s.turn)
		raws, err := codec.Encode(nil, StoredRound(t.Rounds[i:i+2]))
		if err != nil {
			return nil, wire.Answer{}, fmt.Errorf("%w: %w", apierr.Internal, err)
		}
		for _, raw := range raws {
			s.add(raw, history.Internal, raw)
		}
		stored(i/2, s.turn[from:])
	}
	from := len(s.turn)
	client := a
	client.Stored = nil
	client.Message.Parts = slices.DeleteFunc(slices.Clone(a.Message.Parts), func(p wire.Part) bool {
		return p.Kind == wire.ToolCall && t.Mine[p.CallID]
	})
	// What the client holds, when a stream relayed text before this
	// answer: each visible stored message is hashed as that.
	var held [][]byte
	if relayed != "" {
		client.Message = WithLeadingText(client.Message, relayed)
		held, _ = codec.Encode(nil, []wire.Message{client.Message})
	}
	visible := t.storeAnswer(s, &client, a.Stored)
	if len(held) > 0 && len(held) == len(visible) {
		for i, at := range visible {
			s.turn[at].Hash = codec.Hash(held[i])
		}
		client.Stored = held
	}
	if t.Post != nil {
		// The results of Recall's calls in a mixed answer are stored as
		// its rounds' are: a note of what was read, never the text.
		raws, err := codec.Encode(nil, StoredRound([]wire.Message{a.Message, *t.Post})[1:])
		if err != nil {
			return nil, wire.Answer{}, fmt.Errorf("%w: %w", apierr.Internal, err)
		}
		for _, raw := range raws {
			s.add(raw, history.Internal, raw)
		}
	}
	stored(last, s.turn[from:])
	return s.turn, client, nil
}

// storeAnswer adds the final answer's stored messages to the turn, and
// to what the client gets (client.Stored) those it sees: one that calls
// only Recall's tools and says nothing is the client's to never see, one
// that calls both is kept with the client's calls alone. It returns the
// indexes in the turn of the messages the client sees.
func (t *ToolTurn) storeAnswer(s *turnBuilder, client *wire.Answer, answer [][]byte) (visible []int) {
	if t.Limited {
		for _, raw := range answer {
			s.add(raw, 0, raw)
			visible = append(visible, len(s.turn)-1)
		}
		client.Stored = answer
		return visible
	}
	notMine := func(id string) bool { return !t.Mine[id] }
	var ids []string
	for _, raw := range answer {
		ids = s.codec.Calls(ids[:0], raw)
		n := 0
		for _, id := range ids {
			if t.Mine[id] {
				n++
			}
		}
		switch {
		case n == 0:
			s.add(raw, 0, raw)
			client.Stored = append(client.Stored, raw)
		case n == len(ids) && !HasContent(s.codec, raw):
			s.add(raw, history.Internal, raw)
			continue
		default:
			seen, _ := s.codec.KeepCalls(raw, notMine)
			s.add(raw, history.Mixed, seen)
			client.Stored = append(client.Stored, seen)
		}
		visible = append(visible, len(s.turn)-1)
	}
	return visible
}

// turnBuilder builds a stored turn, one message at a time.
type turnBuilder struct {
	codec wire.Codec
	proto wire.Protocol
	count func(p wire.Protocol, raw []byte) int
	turn  []history.Message
}

// add adds raw, stored with flags and hashed as hashOf (what the client
// holds of it).
func (s *turnBuilder) add(raw []byte, flags history.Flags, hashOf []byte) {
	role := s.codec.Role(raw)
	if role == "" {
		role = wire.RoleAssistant
	}
	s.turn = append(s.turn, history.Message{Role: role, Protocol: s.proto, Raw: raw, Hash: s.codec.Hash(hashOf),
		Flags: flags, Tokens: s.count(s.proto, raw)})
}
