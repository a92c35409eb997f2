package pipeline

import (
	"slices"
	"strconv"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/wire"
)

// TurnOf reads a decoded request's instructions and conversation messages
// into their stored form, through the ingress protocol's codec.
func TurnOf(p wire.Protocol, req *wire.Request) (instructions, in []history.Message, err error) {
	codec := wire.For(p)
	ni := len(req.Instructions)
	all := make([]history.Message, ni, ni+len(req.Messages)) // one array for both
	for i, raw := range req.Instructions {
		all[i] = history.Message{Role: codec.Role(raw), Protocol: p, Raw: raw}
	}
	instructions, in = all[:ni:ni], all[ni:]
	for i, raw := range req.Messages {
		if slices.Contains(req.InPlace, i) {
			continue // sent where it stands, never stored
		}
		role := codec.Role(raw)
		if role == "" {
			return nil, nil, apierr.InvalidValue("messages["+strconv.Itoa(i)+"]", "Message "+strconv.Itoa(i)+" is not a message Recall can read.")
		}
		in = append(in, history.Message{Role: role, Protocol: p, Raw: raw, Hash: codec.Hash(raw)})
	}
	return instructions, in, nil
}
