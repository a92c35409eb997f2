// Package chat is the chat-completions wire protocol: it does the
// byte-level work on chat-completions traffic that the proxy needs on
// every request: it validates a request body and splices a
// new "messages" array into it without re-encoding anything else, computes a
// canonical hash of a message, reads server-sent events exactly as they were
// sent, and rebuilds the assistant message from a streamed or non-streamed
// reply.
//
// Everything here is on the hot path, so the package follows gjson's lead:
// values returned by [ParseRequest] point into the body they were parsed
// from instead of copying it, and must not be used after that body is
// reused or modified. Each function documents what it copies.
//
// It implements wire.Codec for stored chat messages, and imports nothing
// else from this module but wire.
package chat

import (
	"unsafe"

	"github.com/recallproxy/recall/wire"
)

// Roles recognised in messages: chat completions names them as the
// canonical model does.
const (
	RoleSystem    = wire.RoleSystem
	RoleDeveloper = wire.RoleDeveloper
	RoleUser      = wire.RoleUser
	RoleAssistant = wire.RoleAssistant
	RoleTool      = wire.RoleTool
)

// Error is a request problem the client must fix; the proxy renders it as a
// 400 in OpenAI's shape
// {"error":{"message","type":"invalid_request_error","param","code"}}.
type Error struct {
	// Message is the human-readable explanation, phrased like OpenAI's.
	Message string
	// Param names the offending parameter, like "messages[3].role"; it is
	// empty when the problem is the body as a whole.
	Param string
	// Code is OpenAI's machine-readable code, like "invalid_type"; it may be
	// empty.
	Code string
}

// Error returns the message prefixed with the package name; render Message,
// not Error, to clients.
func (e *Error) Error() string { return "chat: " + e.Message }

// bytesString returns a string sharing b's memory. The caller must not
// modify b while the string, or anything sliced from it, is in use, and must
// copy any piece of it that outlives b.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// offsetIn returns the byte offset of sub inside s, where sub is a substring
// of s (as gjson's Raw values are of the document they were parsed from).
func offsetIn(s, sub string) int {
	return int(uintptr(unsafe.Pointer(unsafe.StringData(sub))) - uintptr(unsafe.Pointer(unsafe.StringData(s))))
}
