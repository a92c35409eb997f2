// Package thread tells which thread of a conversation a request belongs
// to (DESIGN.md section 15). A coding agent on one base URL sends more
// than its conversation: a title for the session, a classifier's
// question, its own compaction. Those side calls reach the upstream as
// the agent sent them, and are never injected into or recorded as turns
// of the conversation.
//
// The rules, in order (the first that holds decides):
//
//  1. X-Recall-Thread: side names a side call, and X-Recall-Thread: main
//     the main thread, whatever the rules below say.
//  2. A request whose newest message asks for the agent's own compaction
//     (Claude Code's "create a detailed summary of the conversation so
//     far", see compactions) is a side call, tools or not; so is one whose
//     instructions open as an agent's background helper's do (Qwen Code's
//     memory extraction, see helpers), and one that sends no tool
//     definitions and whose instructions or newest message carry a known
//     marker of an agent's side call (Claude Code's and opencode's title
//     prompts, Gemini CLI's model router, see markers), on a
//     conversation's first request too.
//  3. A request that sends no tool definitions on a conversation whose
//     main thread sends them (history.Meta.Tools: an agent's conversation)
//     is a side call: an agent's own turns always carry its tools. One
//     that names the answer it continues (previous_response_id) is not.
//
// Everything else is the main thread. A request with tools is a side call
// only by its newest message or its instructions' opening, so an agent's
// turns cost little to classify, and neither does a plain chat client's
// (no tools, no marker, a conversation without tools).
package thread

import "bytes"

// Header is the request header a client names a request's thread with.
const Header = "X-Recall-Thread"

// Values of Header: a side call, the main thread.
const (
	Side = "side"
	Main = "main"
)

// Reasons a request is a side call, or is in the thread it is in, as
// exchange records give them.
const (
	ReasonHeader  = "header"   // X-Recall-Thread: side
	ReasonMarker  = "marker"   // a known side-call prompt (rule 2)
	ReasonNoTools = "no_tools" // no tools where the main thread has them (rule 3)
	// ReasonCompaction is the agent's own compaction request (rule 2).
	ReasonCompaction = "compaction"
	// ReasonAgentID is a subagent's thread named by the agent's own
	// header (Claude Code's x-claude-code-agent-id); a thread named by
	// X-Recall-Thread has ReasonHeader, as has a turn X-Recall-Thread:
	// main made one.
	ReasonAgentID = "agent_id"
)

// markers are phrases that only agents' side calls carry, in their
// instructions or their one user message, as they appear in the request's
// JSON (no character in them is escaped there).
var markers = [][]byte{
	// Claude Code's session title (system prompt, then user prompt).
	[]byte("Generate a concise, sentence-case title"),
	[]byte("Write the title in the language the user wrote in"),
	[]byte("Please generate a title and branch name for this session"),
	// opencode's (and its forks') title generator.
	[]byte("You are a title generator. You output ONLY a thread title"),
	[]byte("Generate a title for this conversation:"),
	// Gemini CLI's model router, before every prompt: its classifier
	// scores the prompt's complexity on a flash model (no tools).
	[]byte("You are a specialized Task Routing AI"),
}

// compactions are phrases of the requests agents make to compact their
// own context: a side call whether it sends tools or not (the agent
// sends its whole context; the answer is its summary, not a turn).
var compactions = [][]byte{
	// Claude Code's compaction prompt.
	[]byte("Your task is to create a detailed summary of the conversation so far"),
}

// helpers are the openings of the instructions of agents' background
// helpers: calls that send tools of their own (a narrower set than the
// agent's turns) and the conversation so far, plus a task of the helper's.
// Their answers are not turns of the conversation. Only the first
// helperWindow bytes of each instruction are searched: the phrases open
// the helper's system prompt.
var helpers = [][]byte{
	// Qwen Code's managed-memory extraction, after each answer.
	[]byte("You are now acting as the managed memory extraction subagent"),
	// Qwen Code's memory consolidation ("dream"), after some sessions:
	// its own tools, the memory files, and a task of its own.
	[]byte("You are performing a managed memory dream"),
}

const helperWindow = 256

// restarts are phrases an agent opens its context with when it restarts
// it from its own summary (see Restarted).
var restarts = [][]byte{
	// Claude Code, after compacting.
	[]byte("This session is being continued from a previous conversation that ran out of context"),
}

// Restarted reports whether first, a request's first message, opens an
// agent's context restarted from its own summary: the stored messages of
// the context it summarised, from where that context began, are what the
// summary replaced, and must not be sent again (plan.Make merges such a
// request with history.MergeRestart, the agent's messages the truth for
// its own context; the turns before it, which Recall injected, stay).
func Restarted(first []byte) bool {
	for _, m := range restarts {
		if bytes.Contains(first, m) {
			return true
		}
	}
	return false
}

// Request is what the rules read of a request.
type Request struct {
	// Header is the X-Recall-Thread header's value ("" when absent).
	Header string
	// Tools reports that the request sends tool definitions.
	Tools bool
	// Chained reports that the request names the answer it continues
	// (the Responses API's previous_response_id): it is in that answer's
	// thread, tools or not.
	Chained bool
	// Instructions and Last are the raw JSON of the request's
	// instructions and of its newest message, searched for markers.
	Instructions [][]byte
	Last         []byte
}

// Before returns why r is a side call by the rules that need nothing
// stored (1 and 2), or "" when those leave it to the conversation (rule
// 3, After).
func Before(r *Request) string {
	if r.Header == Side {
		return ReasonHeader
	}
	if r.Header == Main {
		return ""
	}
	for _, m := range compactions {
		if bytes.Contains(r.Last, m) {
			return ReasonCompaction
		}
	}
	for _, in := range r.Instructions {
		in = in[:min(len(in), helperWindow)]
		for _, m := range helpers {
			if bytes.Contains(in, m) {
				return ReasonMarker
			}
		}
	}
	if r.Tools {
		return ""
	}
	for _, m := range markers {
		if bytes.Contains(r.Last, m) {
			return ReasonMarker
		}
		for _, in := range r.Instructions {
			if bytes.Contains(in, m) {
				return ReasonMarker
			}
		}
	}
	return ""
}

// After returns why r is a side call of a conversation whose main thread
// sends tools (threadTools, history.Meta.Tools), or "" when it belongs to
// the main thread. A request chained to an answer of the thread is in it:
// a function's output sent by previous_response_id alone carries no tools
// (Open Responses' function-call-roundtrip).
func After(r *Request, threadTools bool) string {
	if !r.Tools && !r.Chained && threadTools && r.Header != Main {
		return ReasonNoTools
	}
	return ""
}
