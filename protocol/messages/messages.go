// Package messages is Anthropic's Messages API as a Recall wire protocol
// (https://docs.anthropic.com/en/api/messages): the Codec of its stored
// messages, the Upstream that sends a curated context to an anthropic
// upstream and reads its answer (streamed or not), and the Ingress that
// reads a client's request and renders answers and streams in Anthropic's
// shapes, whatever protocol the upstream spoke.
//
// A stored message is one element of a request's "messages", exactly as
// it arrived: {"role":"user"|"assistant","content": string | blocks}. Its
// blocks are text, image, document, tool_use, tool_result, thinking and
// redacted_thinking (and server-tool blocks, kept as they are); any of
// them may carry a cache_control hint.
//
// Instructions (the request's "system", never stored) are carried on the
// seam as messages of their own, {"role":"system","content": string |
// blocks}: a string system is one such message, a system of blocks one
// message per block (its cache_control kept). The same shape is what
// Encode writes for a canonical system or developer message.
package messages

import (
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/wire"
)

// init registers the protocol, and the anthropic kind of upstream: every
// request goes to it as Messages.
func init() {
	wire.Register(Codec{})
	wire.RegisterUpstream(wire.Messages, Upstream{}, wire.UpstreamKind{Name: wire.UpstreamAnthropic, Sends: wire.Messages})
}

// Block types of the Messages API.
const (
	typeText             = "text"
	typeImage            = "image"
	typeDocument         = "document"
	typeToolUse          = "tool_use"
	typeToolResult       = "tool_result"
	typeThinking         = "thinking"
	typeRedactedThinking = "redacted_thinking"
)

// Roles of the Messages API. System is not one of the API's message roles:
// it marks instructions on the seam, and a system message a client placed
// among its messages (a beta some models accept).
const (
	roleUser      = "user"
	roleAssistant = "assistant"
	roleSystem    = "system"
)

// str returns b as a string without copying; the string must not outlive
// b's contents.
func str(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// parse returns raw parsed, without copying.
func parse(raw []byte) gjson.Result { return gjson.Parse(str(raw)) }

// isThinking reports whether a block type is model reasoning, which
// counts for nothing on its own: a message of only thinking says nothing.
func isThinking(typ string) bool { return typ == typeThinking || typ == typeRedactedThinking }
