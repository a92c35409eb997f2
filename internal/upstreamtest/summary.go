package upstreamtest

import (
	"regexp"
	"strings"

	"github.com/tidwall/gjson"
)

// A summariser call is recognised by its shape (Recall's summary package
// sends it so): exactly two messages, a leading system message that asks
// for a summary, then one user message, and no tools. Such calls take
// their replies from their own queue (EnqueueSummary), so that a test's
// chat script is not consumed by background summaries, and by default
// are answered by SummaryAnswer: text derived from the input, so tests
// can see what the summariser was given.

// isSummaryCall reports whether rq, with root its body, is shaped as a
// summariser call.
func isSummaryCall(rq *request, root gjson.Result) bool {
	if len(rq.msgs) != 2 || root.Get("tools").Exists() {
		return false
	}
	sys, user := rq.msgs[0], rq.msgs[1]
	text := sys.Get("content").Str
	// A chat request whose only history is Recall's injected summary has
	// the same shape: its system message states a summary, it does not
	// ask for one.
	return sys.Get("role").Str == "system" && user.Get("role").Str == "user" &&
		strings.Contains(strings.ToLower(text), "summary") && !strings.HasPrefix(text, injectedSummary)
}

// injectedSummary starts the summary message Recall injects into chat
// requests (plan.SummaryPrefix; this package imports nothing of Recall).
const injectedSummary = "Summary of the earlier conversation:"

// EnqueueSummary appends scripted replies to the queue of summariser
// answers (a Reply with Fault or Status fails the call, Delay or Hold
// delays it; an empty Content answers SummaryAnswer).
func (s *Server) EnqueueSummary(r ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.summaryQueue = append(s.summaryQueue, r...)
}

// SummaryCalls returns the recorded summariser calls, in arrival order.
func (s *Server) SummaryCalls() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Received
	for _, r := range s.reqs {
		if r.Summary {
			out = append(out, r)
		}
	}
	return out
}

// CapSummary keeps a SummaryAnswer within maxTokens (about 4 bytes a
// token; 0: no cap), as a model answers within the request's max_tokens:
// the oldest items go first, the title line stays. Without it a summary
// that repeats every user message grows with every compaction, which no
// upstream does.
func CapSummary(answer string, maxTokens int) string {
	limit := 4 * maxTokens
	if maxTokens <= 0 || len(answer) <= limit {
		return answer
	}
	title, summary := "", answer
	if rest, ok := strings.CutPrefix(answer, "Title: "); ok {
		line, body, _ := strings.Cut(rest, "\n\n")
		title, summary = "Title: "+line+"\n\n", body
	}
	items := strings.Split(summary, "; ")
	for len(items) > 1 && len(title)+len(strings.Join(items, "; ")) > limit {
		items = items[1:]
	}
	summary = strings.Join(items, "; ")
	if len(title)+len(summary) > limit && limit > len(title) {
		summary = summary[len(title)+len(summary)-limit:]
	}
	return title + summary
}

// SummaryAnswer is the fake's deterministic answer to a summariser call
// with the given system and user contents. The summary is the previous
// summary's items followed by the text of each user message of the
// transcript, joined by "; " (so the previous summary and the new turns
// it was given show in it), as a model's summary keeps the user's
// requests and the facts they state. A user message runs from its
// "user: " line to the next line that opens a transcript entry
// (transcriptEntry); its item is its text on one line, without its
// <system-reminder> blocks: the context a coding agent (Claude Code) puts
// before the user's request is not what a model's summary keeps, and a
// message of reminders only, or of tagged blocks of context only (Codex's
// <environment_context> item), adds no item, and the blocks of context a
// message opens with (Gemini CLI's <session_context>) are left out. A message's later lines stay:
// Claude Code's context restarted from its own summary is one user
// message whose first line only announces that summary. When the system
// message asks for a title ("Title:"), the answer starts with
// "Title: Talk about " and the first words of the first new user item,
// 5 to 8 words in all.
func SummaryAnswer(system, user string) string {
	prev, transcript := "", user
	if rest, ok := strings.CutPrefix(user, "Previous summary:\n"); ok {
		prev, transcript, _ = strings.Cut(rest, "\n\nTranscript")
	}
	var items []string
	if prev != "" {
		items = append(items, strings.Split(prev, "; ")...)
	}
	var first string
	var msg []string // the user message being read, its lines
	add := func() {
		text := systemReminders.ReplaceAllString(strings.Join(msg, "\n"), "")
		if text = withoutContext(strings.Join(strings.Fields(text), " ")); text != "" {
			items = append(items, text)
			if first == "" {
				first = text
			}
		}
		msg = nil
	}
	for line := range strings.Lines(transcript) {
		line = strings.TrimRight(line, "\n")
		switch text, ok := strings.CutPrefix(line, "user: "); {
		case ok:
			if msg != nil {
				add()
			}
			msg = []string{text}
		case msg != nil && transcriptEntry.MatchString(line):
			add()
		case msg != nil:
			msg = append(msg, line)
		}
	}
	if msg != nil {
		add()
	}
	summary := strings.Join(items, "; ")
	if !strings.Contains(system, "Title:") {
		return summary
	}
	words := strings.Fields(first)
	if len(words) > 4 {
		words = words[:4]
	}
	for len(words) < 3 {
		words = append(words, "things")
	}
	return "Title: Talk about " + strings.Join(words, " ") + "\n\n" + summary
}

// transcriptEntry matches the line that opens an entry of the
// summariser's transcript (summary.writeMessage): "role: text",
// "role called name(…)" or "tool result…".
var transcriptEntry = regexp.MustCompile(`^(?:(?:user|assistant|system|developer|message)(?:: | called )|tool result)`)

// systemReminders are the <system-reminder> blocks a coding agent puts in
// its user messages.
var systemReminders = regexp.MustCompile(`(?s)<system-reminder>.*?</system-reminder>`)

// withoutContext returns text without the tagged blocks, <name>…</name>,
// it opens with: an agent's context (Codex's <environment_context> item,
// Gemini CLI's <session_context> before the prompt), not a request.
func withoutContext(text string) string {
	for strings.HasPrefix(text, "<") {
		name, _, ok := strings.Cut(text[1:], ">")
		if !ok || name == "" || strings.ContainsAny(name, " /") {
			return text
		}
		_, rest, ok := strings.Cut(text, "</"+name+">")
		if !ok {
			return text
		}
		text = strings.TrimSpace(rest)
	}
	return text
}
