package history

import "github.com/recallproxy/recall/wire"

// The tool-call structure of stored messages, read through each message's
// protocol codec: history parses no protocol's JSON itself.

// calls appends the ids of the tool calls m asks for. They alias m.Raw.
func calls(dst []string, m *Message) []string { return m.Codec().Calls(dst, m.Raw) }

// results appends the ids of the tool calls m answers. They alias m.Raw.
func results(dst []string, m *Message) []string { return m.Codec().Results(dst, m.Raw) }

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
