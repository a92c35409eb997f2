package history

import (
	"fmt"
	"slices"
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
		if hist[i].Role == RoleTool {
			continue
		}
		if hist[i].Role == RoleAssistant {
			ids = callIDs(ids, hist[i].Raw)
		}
		break
	}
	for i, m := range fresh {
		switch m.Role {
		case RoleTool:
			if !slices.Contains(ids, toolCallID(m.Raw)) {
				return &OrphanResultError{Index: i}
			}
		case RoleAssistant:
			ids = callIDs(ids[:0], m.Raw)
		default:
			ids = ids[:0]
		}
	}
	return nil
}
