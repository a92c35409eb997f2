package summary

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/wire"
)

// DefaultPrompt is the summariser's instructions when the tenant sets no
// summary.prompt.
const DefaultPrompt = `You maintain the running summary of a conversation between a user and an AI assistant. ` +
	`The user message holds the previous summary, if any, and a transcript of the turns to add to it. ` +
	`Write one new summary that replaces the previous one and covers everything in both. ` +
	`Keep every name, fact, number, date, decision and open task or question, the user's stated preferences, ` +
	`and which tools were called and what they returned (briefly). Drop greetings and small talk. ` +
	`Write concise notes in the conversation's language. Answer with the summary only.`

// titleInstruction is added to the prompt when the summarised turns end an
// episode: the answer's first line is the episode's title.
const titleInstruction = "\n\nThis part of the conversation has ended. " +
	"Begin your answer with one line `Title: ` followed by a title of 5 to 8 words for the transcript's turns, " +
	"then a blank line, then the summary."

// compactInstruction is added to the prompt of the call that shortens a
// previous summary too long to carry into the next call (userContent with
// no turns).
const compactInstruction = "\n\nThere are no new turns this time: the previous summary has grown too long. " +
	"Rewrite it shorter, keeping what matters most for the rest of the conversation."

// toolResultChars bounds a tool result in the transcript: the summary
// keeps what a tool returned, not all of it.
const toolResultChars = 600

// messageChars bounds any other message in the transcript (a message
// longer than the summariser's window would never fit).
const messageChars = 24000

// turn is one stored turn: its messages, oldest first.
type turn struct {
	msgs []history.Message
}

func (t turn) last() uint64 { return t.msgs[len(t.msgs)-1].Seq }

// open reports whether the turn ends with tool calls not yet answered,
// read through the message's protocol (chat tool_calls, a Responses
// function_call item, Anthropic tool_use blocks).
func (t turn) open() bool {
	m := t.msgs[len(t.msgs)-1]
	return m.Role == wire.RoleAssistant && len(m.Codec().Calls(nil, m.Raw)) > 0
}

// turns groups msgs (active, oldest first) by their Turn.
func turns(msgs []history.Message) []turn {
	var out []turn
	for i := 0; i < len(msgs); {
		j := i + 1
		for j < len(msgs) && msgs[j].Turn == msgs[i].Turn {
			j++
		}
		out = append(out, turn{msgs: msgs[i:j:j]})
		i = j
	}
	return out
}

// systemPrompt returns the summariser's system message text.
func systemPrompt(prompt string, title bool) string {
	if prompt == "" {
		prompt = DefaultPrompt
	}
	if title {
		prompt += titleInstruction
	}
	return prompt
}

// userContent renders the summariser's user message: the previous summary
// and the transcript of ts.
func userContent(previous string, ts []turn) string {
	// One allocation: a message's transcript lines are rarely longer
	// than its stored JSON (growing the builder from empty was a third
	// of the rendering).
	size := len(previous) + 64
	for _, t := range ts {
		for i := range t.msgs {
			size += len(t.msgs[i].Raw) + 16
		}
	}
	var b strings.Builder
	b.Grow(size)
	if previous != "" {
		b.WriteString("Previous summary:\n")
		b.WriteString(previous)
		b.WriteString("\n\n")
	}
	b.WriteString("Transcript of the turns to add:\n")
	for _, t := range ts {
		for _, m := range t.msgs {
			writeMessage(&b, &m)
		}
	}
	return b.String()
}

// writeMessage writes a stored message of any protocol as transcript
// lines, read through its codec into the canonical model: "role: text"
// (images as [image], refusals marked), tool calls as "role called
// name(arguments) [id]" and tool results, cut to toolResultChars, as
// "tool result (id): text". A chat-completions tool call, a Responses
// function call and an Anthropic tool_use read alike; a provider's opaque
// pieces (reasoning, thinking) are left out.
func writeMessage(b *strings.Builder, m *history.Message) {
	cm, err := m.Codec().Decode(m.Raw)
	if err != nil {
		return
	}
	role := cm.Role
	switch role {
	case wire.RoleTool:
		role = wire.RoleUser // text beside tool results is the user's
	case "":
		role = "message"
	}
	var texts []string
	flush := func() {
		if len(texts) > 0 {
			b.WriteString(role)
			b.WriteString(": ")
			b.WriteString(cut(strings.Join(texts, "\n"), messageChars))
			b.WriteByte('\n')
			texts = texts[:0]
		}
	}
	for _, p := range cm.Parts {
		switch p.Kind {
		case wire.Text:
			if p.Text != "" {
				texts = append(texts, p.Text)
			}
		case wire.Image:
			texts = append(texts, "[image]")
		case wire.File:
			texts = append(texts, "[file "+p.Name+"]")
		case wire.Refusal:
			texts = append(texts, "(refused) "+p.Text)
		case wire.ToolCall:
			flush()
			b.WriteString(role)
			b.WriteString(" called ")
			b.WriteString(p.Name)
			b.WriteByte('(')
			b.WriteString(cut(p.Arguments, toolResultChars))
			b.WriteString(")")
			if p.CallID != "" {
				b.WriteString(" [" + p.CallID + "]")
			}
			b.WriteByte('\n')
		case wire.ToolResult:
			flush()
			b.WriteString("tool result")
			if p.CallID != "" {
				b.WriteString(" (" + p.CallID + ")")
			}
			b.WriteString(": ")
			b.WriteString(cut(p.Text, toolResultChars))
			b.WriteByte('\n')
		}
	}
	flush()
}

// cut shortens s to about n characters (on a rune boundary) with a marker
// saying how much was left out.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	kept := wire.RunePrefix(s, n)
	return kept + " […" + strconv.Itoa(len(s)-len(kept)) + " more characters]"
}

// parseAnswer splits a summariser answer into its title (when asked for
// one) and the summary text.
func parseAnswer(answer string, title bool) (t, text string) {
	answer = strings.TrimSpace(answer)
	if title {
		first, rest, _ := strings.Cut(answer, "\n")
		if s, ok := strings.CutPrefix(strings.TrimSpace(first), "Title:"); ok {
			t = cleanTitle(s)
			answer = strings.TrimSpace(rest)
		}
	}
	return t, answer
}

// cleanTitle trims quotes and markup from a title and keeps at most 8 words.
func cleanTitle(s string) string {
	s = strings.Trim(strings.TrimSpace(s), "\"'*#`")
	words := strings.Fields(s)
	if len(words) > 8 {
		words = words[:8]
	}
	return strings.Join(words, " ")
}

// fallbackTitle makes a title from the first user message of ts when the
// summariser gave none: its first 8 words, past the <system-reminder>
// blocks a coding agent puts before the user's words.
func fallbackTitle(ts []turn) string {
	for _, t := range ts {
		for _, m := range t.msgs {
			if m.Role == wire.RoleUser {
				if s := cleanTitle(systemReminders.ReplaceAllString(string(m.Text()), " ")); s != "" {
					return s
				}
			}
		}
	}
	return "Conversation"
}

// systemReminders are the <system-reminder> blocks coding agents (Claude
// Code, Qwen Code) put in a user message: their context, not the user's
// words.
var systemReminders = regexp.MustCompile(`(?s)<system-reminder>.*?</system-reminder>`)
