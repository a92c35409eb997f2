package summary

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/protocol/chat"
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
	var b strings.Builder
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

// writeLine renders one message of the transcript as "role: text", tool
// calls as "assistant called name(arguments)" and tool results, cut to
// toolResultChars, as "tool result (id): text".
// writeMessage writes a stored message of any protocol as transcript
// lines: another protocol's through its chat-completions rendition, so
// the summariser reads function calls, tool_use blocks and their results
// alike (only a provider's opaque pieces are left out).
func writeMessage(b *strings.Builder, m *history.Message) {
	if m.Protocol == wire.ChatCompletions {
		writeLine(b, m.Raw)
		return
	}
	cm, err := m.Codec().Decode(m.Raw)
	if err != nil {
		return
	}
	msgs, _ := chat.Codec{}.Encode(nil, []wire.Message{cm})
	for _, raw := range msgs {
		writeLine(b, raw)
	}
}

func writeLine(b *strings.Builder, raw []byte) {
	m := gjson.ParseBytes(raw)
	role := m.Get("role").Str
	text := contentText(m.Get("content"))
	switch role {
	case wire.RoleTool:
		b.WriteString("tool result")
		if id := m.Get("tool_call_id").Str; id != "" {
			b.WriteString(" (" + id + ")")
		}
		b.WriteString(": ")
		b.WriteString(cut(text, toolResultChars))
		b.WriteByte('\n')
		return
	case "":
		role = "message"
	}
	if text != "" || m.Get("refusal").Str != "" {
		if text == "" {
			text = "(refused) " + m.Get("refusal").Str
		}
		b.WriteString(role)
		b.WriteString(": ")
		b.WriteString(cut(text, messageChars))
		b.WriteByte('\n')
	}
	m.Get("tool_calls").ForEach(func(_, c gjson.Result) bool {
		b.WriteString(role)
		b.WriteString(" called ")
		b.WriteString(c.Get("function.name").Str)
		b.WriteByte('(')
		b.WriteString(cut(c.Get("function.arguments").Str, toolResultChars))
		b.WriteString(")")
		if id := c.Get("id").Str; id != "" {
			b.WriteString(" [" + id + "]")
		}
		b.WriteByte('\n')
		return true
	})
}

// contentText returns a message content's text: the string, or the text
// parts joined, other parts named.
func contentText(c gjson.Result) string {
	if c.Type == gjson.String {
		return c.Str
	}
	var parts []string
	c.ForEach(func(_, p gjson.Result) bool {
		switch typ := p.Get("type").Str; typ {
		case "text":
			parts = append(parts, p.Get("text").Str)
		default:
			parts = append(parts, "["+typ+"]")
		}
		return true
	})
	return strings.Join(parts, "\n")
}

// cut shortens s to about n characters (on a rune boundary) with a marker
// saying how much was left out.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + " […" + strconv.Itoa(len(s)-i) + " more characters]"
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
// summariser gave none: its first 8 words.
func fallbackTitle(ts []turn) string {
	for _, t := range ts {
		for _, m := range t.msgs {
			if m.Role == wire.RoleUser {
				if s := cleanTitle(contentText(gjson.GetBytes(m.Raw, "content"))); s != "" {
					return s
				}
			}
		}
	}
	return "Conversation"
}
