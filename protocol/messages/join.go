package messages

import (
	"bytes"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/protocol/internal/body"
	"github.com/recallproxy/recall/wire"
)

// JoinResults returns msgs (messages in this protocol's JSON, as sent
// upstream) with a user message that carries only tool_result blocks
// joined with the user message after it when that one begins with
// tool_result blocks: Anthropic wants every result of an assistant
// message's calls in the one user message after it, and a turn whose
// calls were answered partly by Recall's history tools and partly by the
// client is stored as two such messages (Recall's results, then the
// client's). The joined message has the first's blocks, then the
// second's. last, the index of a message in msgs (or -1), is returned as
// its index in the result: a joined message's index for either of its
// parts. msgs is not modified; when nothing is joined it is returned as
// it is.
//
// roles, when not nil, holds a role for each message of msgs: Codec's
// Role of it, or "" where the caller does not know it. A message whose
// role is known is not read to find whether it may join its neighbour
// (a history window of 100 messages was 12% of a Messages request's CPU
// scanned for tool results: BenchmarkMessagesPath50), only the pairs
// that may are parsed: a tool message, then a user or tool one.
func JoinResults(msgs [][]byte, roles []string, last int) ([][]byte, int) {
	var out [][]byte
	newLast := last
	role := func(i int) string {
		if roles == nil {
			return ""
		}
		return roles[i]
	}
	// A pair to join holds a tool result in both messages, one at an odd
	// index: the odd ones are scanned first, and an even one only beside
	// an odd one that may hold a result, which spares scanning about half
	// the messages of a request that has none. seen keeps the last answer
	// for each parity. A message of a known role holds a tool result only
	// as a tool or user message.
	seen := [2]struct {
		i   int
		may bool
	}{{i: -1}, {i: -1}}
	may := func(i int) bool {
		if r := role(i); r != "" {
			return r == wire.RoleTool || r == wire.RoleUser
		}
		s := &seen[i&1]
		if s.i != i {
			s.i, s.may = i, mayHoldToolResult(msgs[i])
		}
		return s.may
	}
	// joinable's first message is a tool message.
	tool := func(i int) bool {
		r := role(i)
		return r == "" || r == wire.RoleTool
	}
	for i, raw := range msgs {
		odd, even := i, i-1
		if i&1 == 0 {
			odd, even = i-1, i
		}
		if i > 0 && tool(i-1) && may(odd) && may(even) && joinable(msgs[i-1], raw) {
			if out == nil {
				out = append(make([][]byte, 0, len(msgs)), msgs[:i]...)
			}
			prev := out[len(out)-1]
			out[len(out)-1] = joined(prev, raw)
			if i <= last {
				newLast--
			}
			continue
		}
		if out != nil {
			out = append(out, raw)
		}
	}
	if out == nil {
		return msgs, last
	}
	return out, newLast
}

// joinable reports whether prev carries only tool results and next is a
// user message that begins with one.
func joinable(prev, next []byte) bool {
	if (Codec{}).Role(prev) != wire.RoleTool {
		return false
	}
	n := parse(next)
	return n.Get("role").Str == roleUser && n.Get("content.0.type").Str == typeToolResult
}

// mayHoldToolResult reports whether a message's bytes can hold a
// tool_result block: the type spelled out to its closing quote
// (searched from its underscore, which prose has fewer of than the t
// of "tool"), or an escape that could spell it. It spares parsing the
// messages of a request that has none (every message, on the Messages
// plain path).
func mayHoldToolResult(m []byte) bool {
	return bytes.Contains(m, []byte(typeToolResult[len("tool"):]+`"`)) || bytes.Contains(m, []byte(`\u`))
}

// joined is a user message with a's content blocks, then b's.
func joined(a, b []byte) []byte {
	var blocks []string
	for _, m := range [2][]byte{a, b} {
		parse(m).Get("content").ForEach(func(_, v gjson.Result) bool {
			blocks = append(blocks, v.Raw)
			return true
		})
	}
	return body.AppendMessage(nil, roleUser, "content", blocks)
}
