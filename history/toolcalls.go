package history

import "github.com/recallproxy/recall/wire"

// The tool-call structure of stored messages, read through each message's
// protocol codec: history parses no protocol's JSON itself.

// absent is what a message's codec found missing from its Raw: tool calls,
// tool results, cache hints. A commit works it out once for each message
// it appends (Apply), so that the requests that replay the message do not
// scan its bytes again for each (most messages have none of the three).
// Each bit is knowledge of an absence, and holds only for the Raw it was
// found in: a message whose Raw is replaced by one of another length (an
// edit, a cut) is scanned again, and the zero value knows nothing.
type absent uint8

const (
	noCalls absent = 1 << iota
	noResults
	noHints
)

// learn sets what m's Raw lacks.
func (m *Message) learn() {
	c := m.Codec()
	var a absent
	if len(c.Calls(nil, m.Raw)) == 0 {
		a |= noCalls
	}
	if len(c.Results(nil, m.Raw)) == 0 {
		a |= noResults
	}
	if h := c.WithoutCacheHints(m.Raw); len(h) == len(m.Raw) && (len(h) == 0 || &h[0] == &m.Raw[0]) {
		a |= noHints
	}
	m.absent, m.absentLen = a, uint32(len(m.Raw))
}

// learnAll learns what each of msgs lacks that was not learned for its
// Raw: messages read from a store (which keeps no such bits) as the
// window cache takes them, so that the requests replaying them do not
// scan them, as they do not scan those committed since.
func learnAll(msgs []Message) {
	for i := range msgs {
		if m := &msgs[i]; m.absent == 0 || int(m.absentLen) != len(m.Raw) {
			m.learn()
		}
	}
}

// lacks reports whether m's Raw is known to lack what a names.
func (m *Message) lacks(a absent) bool {
	return m.absent&a == a && int(m.absentLen) == len(m.Raw)
}

// WithoutCacheHints returns m's Raw without the client's cache hints
// (its codec's WithoutCacheHints), Raw itself when it is known to have
// none.
func (m *Message) WithoutCacheHints() []byte {
	if m.lacks(noHints) {
		return m.Raw
	}
	return m.Codec().WithoutCacheHints(m.Raw)
}

// calls appends the ids of the tool calls m asks for. They alias m.Raw.
func calls(dst []string, m *Message) []string {
	if m.lacks(noCalls) {
		return dst
	}
	return m.Codec().Calls(dst, m.Raw)
}

// results appends the ids of the tool calls m answers. They alias m.Raw.
func results(dst []string, m *Message) []string {
	if m.lacks(noResults) {
		return dst
	}
	return m.Codec().Results(dst, m.Raw)
}

// hasCalls reports whether m is an assistant message that asks for tool
// calls.
func hasCalls(m *Message) bool {
	return m.Role == wire.RoleAssistant && len(calls(nil, m)) > 0
}

// answers reports whether m carries tool results: a tool message, or (in
// protocols that send results in user messages) a user message with them.
func answers(m *Message) bool {
	if m.Role == wire.RoleTool {
		return true
	}
	return m.Role == wire.RoleUser && len(results(nil, m)) > 0
}

// itemized reports whether m's protocol stores one answer's calls as
// several assistant messages.
func itemized(m *Message) bool { return m.Codec().Itemized() }
