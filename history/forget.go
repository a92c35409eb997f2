package history

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/recallproxy/recall/wire"
)

// ErrInstruction is a forget instruction Forget does not understand.
var ErrInstruction = errors.New(`history: forget instructions are "oldest", "before:turn_N", "speaker:user|assistant|tool" or "position:N"`)

// Forget selects the messages a forget instruction removes from msgs, a
// conversation's active messages, oldest first, and returns their
// sequence numbers, ascending. The instructions:
//
//	oldest               the oldest message
//	before:turn_N        every message of the turns before turn N
//	speaker:ROLE         every message of ROLE (user, assistant or tool)
//	position:N           the N-th message, from 1
//
// Whatever is selected, an assistant message with tool calls and the tool
// results answering it go together: forgetting one forgets the others, so
// the messages left stay a valid context. It fails with ErrInstruction for
// an instruction it does not understand; a valid one may select nothing.
func Forget(msgs []Message, instruction string) ([]uint64, error) {
	kind, arg, _ := strings.Cut(instruction, ":")
	pick := make([]bool, len(msgs))
	switch kind {
	case "oldest":
		if arg != "" {
			return nil, ErrInstruction
		}
		if len(msgs) > 0 {
			pick[0] = true
		}
	case "before":
		n, ok := strings.CutPrefix(arg, "turn_")
		turn, err := strconv.ParseUint(n, 10, 32)
		if !ok || err != nil {
			return nil, ErrInstruction
		}
		for i := range msgs {
			pick[i] = uint64(msgs[i].Turn) < turn
		}
	case "speaker":
		if arg != wire.RoleUser && arg != wire.RoleAssistant && arg != wire.RoleTool {
			return nil, ErrInstruction
		}
		for i := range msgs {
			pick[i] = msgs[i].Role == arg
		}
	case "position":
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 {
			return nil, ErrInstruction
		}
		if n <= len(msgs) {
			pick[n-1] = true
		}
	default:
		return nil, ErrInstruction
	}
	closeToolGroups(msgs, pick)
	var seqs []uint64
	for i, p := range pick {
		if p {
			seqs = append(seqs, msgs[i].Seq)
		}
	}
	return seqs, nil
}

// Forgetting is a forget as Change.Forget carries it: the ranges made
// inactive and what that does to the metadata's counters, computed by
// PlanForget from the active messages (the change's Version guarantees
// they are still the stored ones when it lands).
type Forgetting struct {
	// Ranges are the forgotten messages' sequence numbers, ascending.
	Ranges []Range
	// Hard erases the records and their search entries; soft only flags
	// them Forgotten (kept, listed with include=forgotten, never sent).
	Hard bool
	// Messages, Tokens and Turns are removed from the active counts.
	Messages, Tokens, Turns int
	// FirstHash and LastTurn are those of the active messages left.
	FirstHash uint64
	LastTurn  uint32
}

// PlanForget computes the forget of seqs (ascending, as Forget returns
// them) from active, the conversation's active messages, oldest first. It
// returns nil when seqs is empty.
func PlanForget(active []Message, seqs []uint64, hard bool) *Forgetting {
	if len(seqs) == 0 {
		return nil
	}
	f := &Forgetting{Ranges: Ranges(seqs), Hard: hard}
	before, after := map[uint32]bool{}, map[uint32]bool{}
	j := 0
	for _, m := range active {
		before[m.Turn] = true
		if j < len(seqs) && seqs[j] == m.Seq {
			j++
			f.Messages++
			f.Tokens += m.Tokens
			continue
		}
		if len(after) == 0 {
			f.FirstHash = m.Hash
		}
		after[m.Turn] = true
		f.LastTurn = m.Turn
	}
	f.Turns = len(before) - len(after)
	return f
}

// closeToolGroups extends pick so that an assistant message with tool
// calls and the results answering it (the tool messages right after it)
// are picked all or none.
func closeToolGroups(msgs []Message, pick []bool) {
	for i := 0; i < len(msgs); i++ {
		if !hasCalls(&msgs[i]) {
			continue
		}
		ids := calls(nil, &msgs[i])
		end := i + 1
		for end < len(msgs) && itemized(&msgs[i]) && msgs[end].Role == wire.RoleAssistant {
			ids = calls(ids, &msgs[end])
			end++
		}
		for end < len(msgs) && answers(&msgs[end]) && answersAny(&msgs[end], ids) {
			end++
		}
		if slices.Contains(pick[i:end], true) {
			for j := i; j < end; j++ {
				pick[j] = true
			}
		}
		i = end - 1
	}
}

// answersAny reports whether m answers one of ids.
func answersAny(m *Message, ids []string) bool {
	for _, id := range results(nil, m) {
		if slices.Contains(ids, id) {
			return true
		}
	}
	return false
}

// Ranges compresses ascending sequence numbers into ranges, merging runs
// of consecutive numbers (a gap between them of inactive messages is not
// known here and not merged over).
func Ranges(seqs []uint64) []Range {
	var out []Range
	for _, s := range seqs {
		if n := len(out); n > 0 && out[n-1].To+1 == s {
			out[n-1].To = s
			continue
		}
		out = append(out, Range{From: s, To: s})
	}
	return out
}
