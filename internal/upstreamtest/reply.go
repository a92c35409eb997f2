package upstreamtest

import "time"

// Reply scripts one chat-completions answer. Replies are queued FIFO with
// Server.Enqueue and each accepted POST /v1/chat/completions takes the next
// one; a request rejected with 400 takes none. When the queue is empty, or a
// Reply has no Content, Refusal or ToolCalls, the answer's content is
// "echo: <text of the last user message>" with finish_reason "stop".
type Reply struct {
	// Content is the assistant's text. With n > 1, choice i gets "[i] "
	// prepended. For FaultStatus, a non-empty Content replaces the error
	// message.
	Content string
	// Refusal, when set, is sent as the message's refusal (streamed as
	// refusal deltas).
	Refusal string
	// ToolCalls are the calls the assistant makes, in parallel when several;
	// the finish_reason becomes "tool_calls" and the content null unless
	// Content is also set. An empty ID is generated as "call_<n>_<index>".
	ToolCalls []ToolCall
	// Fault makes the answer fail in a scripted way; see the Fault constants.
	Fault Fault
	// Status is the HTTP status of a FaultStatus answer (default 500). A
	// Status other than 0 and 200 implies FaultStatus.
	Status int
	// RetryAfter, when set, is sent as the Retry-After header (with 429).
	RetryAfter string
	// Delay is waited before the response headers are written, or until the
	// request's context ends.
	Delay time.Duration
	// Hold makes the answer wait, before its headers, until Release (or
	// the end of the request), counted in Stalled: a test can then act
	// while the call is provably in flight.
	Hold bool
	// Gzip compresses the response body (Content-Encoding: gzip), streamed
	// or not; a stream is flushed through the compressor per event.
	Gzip bool
	// Chunks is about how many content deltas a streamed answer is split
	// into (default 4).
	Chunks int
	// LineEnding ends every line of a streamed answer: "\n" (the
	// default), "\r\n" or "\r", all legal in SSE.
	LineEnding string
	// DescendingToolIndexes streams the tool calls with descending
	// "index" values, the last call first (index 0 is still the first
	// call of ToolCalls).
	DescendingToolIndexes bool
	// CacheCreation is how many of the prompt's input tokens a Messages
	// answer says were written to the prompt cache
	// (cache_creation_input_tokens; the prompt then counts at least so
	// many more than it read from the cache). The other protocols report
	// no such count.
	CacheCreation int
}

// ToolCall is one function call of a scripted Reply.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Fault selects how a scripted answer fails.
type Fault int

// The faults a Reply can script. For the mid-body faults the cut point is
// after the role delta and about half of the remaining events (streaming),
// or after half of the body (non-streaming).
const (
	// FaultNone answers normally.
	FaultNone Fault = iota
	// FaultStatus answers Reply.Status with an OpenAI-shaped error body.
	FaultStatus
	// FaultResetBeforeHeaders closes the connection before any response
	// byte, with an RST where the platform allows (SetLinger(0)).
	FaultResetBeforeHeaders
	// FaultCutMidStream sends the role delta and some content, then closes
	// the connection without the finish chunk or [DONE]. Non-streaming, it
	// closes after half of a body announced with its full Content-Length.
	FaultCutMidStream
	// FaultStallMidStream sends the role delta and some content, then blocks
	// until Server.Release or the end of the request's context; released,
	// the answer completes normally. Non-streaming, it stalls after half of
	// the body.
	FaultStallMidStream
	// FaultMalformedJSON answers 200 with a truncated JSON body
	// (non-streaming), or inserts one event of truncated JSON mid-stream and
	// then completes the stream (streaming).
	FaultMalformedJSON
	// FaultEventsAfterDone completes the stream, [DONE] included, then
	// sends more: a content chunk carrying AfterDoneText, a finish chunk
	// and a second [DONE] (streaming only).
	FaultEventsAfterDone
	// FaultNoDone completes the stream (finish chunk, usage chunk when
	// asked) and ends the body cleanly without [DONE] (streaming only).
	FaultNoDone
	// FaultErrorEvent sends the role delta and some content, then an
	// OpenAI-shaped error event ({"error":{...}}, code ErrorEventCode)
	// and ends the body cleanly, as OpenAI does when it fails mid-stream
	// (streaming only).
	FaultErrorEvent
)

// AfterDoneText is the content FaultEventsAfterDone sends after [DONE].
const AfterDoneText = "TEXT-AFTER-DONE"

// ErrorEventCode is the error code of FaultErrorEvent's error event.
const ErrorEventCode = "upstreamtest_mid_stream_error"

// String names the fault, for test names and failure messages.
func (f Fault) String() string {
	switch f {
	case FaultNone:
		return "none"
	case FaultStatus:
		return "status"
	case FaultResetBeforeHeaders:
		return "reset-before-headers"
	case FaultCutMidStream:
		return "cut-mid-stream"
	case FaultStallMidStream:
		return "stall-mid-stream"
	case FaultMalformedJSON:
		return "malformed-json"
	case FaultEventsAfterDone:
		return "events-after-done"
	case FaultNoDone:
		return "no-done"
	case FaultErrorEvent:
		return "error-event"
	default:
		return "fault(" + itoa(int(f)) + ")"
	}
}
