package proxy

import (
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/wire"
)

// chatMessages is the chat path's planned context as chat-completions
// messages: each as stored while every one is chat completions' own (the
// common case, no copy of a body), or else the whole context through the
// canonical model (encodePlan): a conversation that other protocols added
// to (a tool loop begun on the Responses API, a Messages answer) goes out
// as chat completions takes it, never as the other protocol stored it.
func chatMessages(msgs []plan.Message) ([][]byte, error) {
	out := make([][]byte, len(msgs))
	for i, m := range msgs {
		if m.Protocol != wire.ChatCompletions {
			instr, conv, _, err := encodePlan(wire.ChatCompletions, msgs)
			if err != nil {
				return nil, err
			}
			return append(instr, conv...), nil
		}
		out[i] = m.Raw
	}
	return out, nil
}
