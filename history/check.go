package history

import (
	"fmt"
	"slices"

	"github.com/recallproxy/recall/wire"
)

// OrphanResultError is a tool message among a request's new messages that
// answers no call: neither an earlier new message nor the stored history
// holds an assistant message asking for its tool_call_id, with only tool
// messages between. Repair mends stored history; the current turn is the
// client's, and is refused as OpenAI refuses it.
type OrphanResultError struct {
	// Index is the tool message's position among the new messages.
	Index int
}

func (e *OrphanResultError) Error() string {
	return fmt.Sprintf("history: new message %d is a tool result that answers no tool call", e.Index)
}

// CheckNew checks the tool results among fresh, the new messages, against
// the calls before them: in fresh, or at the end of hist, the stored
// history they follow. hist must hold the whole of its last turn.
func CheckNew(hist, fresh []Message) error {
	var ids []string // the open assistant message's call ids
	// The open calls at the end of the stored history, if any.
	for i := len(hist) - 1; i >= 0; i-- {
		if hist[i].Role == wire.RoleTool {
			continue
		}
		if hist[i].Role == wire.RoleAssistant {
			ids = calls(ids, &hist[i])
			if itemized(&hist[i]) { // the call group may go on before it
				continue
			}
		}
		break
	}
	var rbuf [8]string
	for i := range fresh {
		m := &fresh[i]
		if answers(m) {
			for _, id := range results(rbuf[:0], m) {
				if !slices.Contains(ids, id) {
					return &OrphanResultError{Index: i}
				}
			}
			if m.Role == wire.RoleUser {
				ids = ids[:0]
			}
			continue
		}
		switch {
		case m.Role == wire.RoleAssistant && itemized(m) && i > 0 && fresh[i-1].Role == wire.RoleAssistant:
			ids = calls(ids, m)
		case m.Role == wire.RoleAssistant:
			ids = calls(ids[:0], m)
		default:
			ids = ids[:0]
		}
	}
	return nil
}
