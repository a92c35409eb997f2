package gemini

import (
	"unicode/utf8"

	"github.com/recallproxy/recall/tokens"
	"github.com/recallproxy/recall/wire"
)

// Tokens returns the tokens of a stored content as the budget counts a
// message of another protocol than chat completions: the chat messages
// that chat's Encode writes for Decode's reading of raw, each counted as
// tokens.Counter.Message counts it, plus a token per four bytes of the
// opaque parts (thoughts, signatures), which chat cannot carry. A content
// of text parts alone, the shape most have, is read in one pass and
// allocates nothing; any other is decoded and its parts counted as chat
// would write them, without writing them. ok is false for raw that is
// not valid UTF-8 (the chat encoding rewrites its strings), for a content
// Decode refuses, and for one holding images or files: the caller counts
// those through the encoding. raw is not retained.
func (c Codec) Tokens(tc *tokens.Counter, enc tokens.Encoding, raw []byte) (n int, ok bool) {
	if !utf8.Valid(raw) {
		return 0, false
	}
	texts := 0
	if _, ok := scanTexts(raw, func(t string) {
		if t != "" {
			texts++
			n += tc.Text(enc, t)
		}
	}); ok {
		if texts == 0 { // Encode writes nothing
			return tokens.MessageOverhead, true
		}
		return framed + n, true
	}
	m, err := c.decodeTree(raw)
	if err != nil {
		return 0, false
	}
	return chatTokens(tc, enc, &m)
}

// framed is what tokens.Counter.Message counts of a chat message beside
// its content: its framing, and its role, one of the API's (one token).
const framed = tokens.MessageOverhead + 1

// chatTokens counts m as tokens.Counter.Message counts what chat's Encode
// writes for it: a tool message per tool result, then one message of the
// texts and tool calls if there are any. ok is false for a part it does
// not know how chat writes (an image, a file, a refusal).
func chatTokens(tc *tokens.Counter, enc tokens.Encoding, m *wire.Message) (n int, ok bool) {
	written, body, opaque := false, 0, 0
	for _, p := range m.Parts {
		switch p.Kind {
		case wire.ToolResult:
			n += framed + tc.Text(enc, p.CallID) + tc.Text(enc, p.Text)
		case wire.Text:
			written = true
			body += tc.Text(enc, p.Text)
		case wire.ToolCall:
			written = true
			args := p.Arguments
			if args == "" {
				args = "{}"
			}
			body += tc.Call(enc, p.Name, args)
		case wire.Opaque:
			if p.Origin == wire.ChatCompletions {
				return 0, false
			}
			opaque += len(p.Raw)
		default:
			return 0, false
		}
	}
	if written {
		n += framed + body
	} else if n == 0 { // Encode writes nothing
		n = tokens.MessageOverhead
	}
	return n + opaque/4, true
}
