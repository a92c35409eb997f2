package history

import (
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Repair makes msgs valid for the strictest provider, in the sent copy
// only: every tool result must directly follow (with its siblings) the
// assistant message that asked for it, and every tool call must have a
// result before the next non-tool message. Orphan and duplicate results are
// dropped; unanswered calls are removed from their assistant message, which
// is dropped if nothing remains. count recomputes the tokens of a rewritten
// message (nil keeps the old count). It returns the repaired messages and
// how many calls and results it removed.
func Repair(msgs []Message, count func([]byte) int) ([]Message, int) {
	if !needsRepair(msgs) {
		return msgs, 0
	}
	out := make([]Message, 0, len(msgs))
	repaired := 0
	for i := 0; i < len(msgs); {
		m := msgs[i]
		i++
		switch {
		case m.Role == RoleTool:
			repaired++ // a result with no call right before it
			continue
		case m.Role != RoleAssistant || !hasToolCalls(m.Raw):
			out = append(out, m)
			continue
		}
		calls := callIDs(nil, m.Raw)
		answered := make(map[string]bool, len(calls))
		var results []Message
		for ; i < len(msgs) && msgs[i].Role == RoleTool; i++ {
			id := toolCallID(msgs[i].Raw)
			if answered[id] || !contains(calls, id) {
				repaired++
				continue
			}
			answered[id] = true
			results = append(results, msgs[i])
		}
		if len(answered) < len(calls) {
			var ok bool
			m, ok = dropCalls(m, answered, count)
			repaired += len(calls) - len(answered)
			if !ok {
				continue
			}
		}
		out = append(out, m)
		out = append(out, results...)
	}
	return out, repaired
}

// needsRepair is the fast path: a scan that allocates nothing when every
// call is answered in place.
func needsRepair(msgs []Message) bool {
	var pending []string
	var buf [16]string
	for _, m := range msgs {
		if m.Role == RoleTool {
			id := toolCallID(m.Raw)
			k := index(pending, id)
			if k < 0 {
				return true
			}
			pending = append(pending[:k], pending[k+1:]...)
			continue
		}
		if len(pending) > 0 {
			return true
		}
		if m.Role == RoleAssistant && hasToolCalls(m.Raw) {
			pending = callIDs(buf[:0], m.Raw)
		}
	}
	return len(pending) > 0
}

// dropCalls removes the unanswered calls from an assistant message. It
// reports false if the message has nothing left to say.
func dropCalls(m Message, answered map[string]bool, count func([]byte) int) (Message, bool) {
	kept := make([]byte, 0, len(m.Raw))
	kept = append(kept, '[')
	gjson.GetBytes(m.Raw, "tool_calls").ForEach(func(_, v gjson.Result) bool {
		if answered[v.Get("id").String()] {
			if len(kept) > 1 {
				kept = append(kept, ',')
			}
			kept = append(kept, v.Raw...)
		}
		return true
	})
	kept = append(kept, ']')
	var raw []byte
	var err error
	if len(kept) == 2 {
		c := gjson.GetBytes(m.Raw, "content")
		if empty := c.String() == "" || (c.IsArray() && len(c.Array()) == 0); empty {
			return m, false
		}
		raw, err = sjson.DeleteBytes(m.Raw, "tool_calls")
	} else {
		raw, err = sjson.SetRawBytes(m.Raw, "tool_calls", kept)
	}
	if err != nil {
		return m, false
	}
	m.Raw = raw
	if count != nil {
		m.Tokens = count(raw)
	}
	return m, true
}

func index(s []string, v string) int {
	for i := range s {
		if s[i] == v {
			return i
		}
	}
	return -1
}

func contains(s []string, v string) bool { return index(s, v) >= 0 }
