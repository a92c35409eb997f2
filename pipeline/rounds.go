package pipeline

import (
	"slices"
	"strings"

	"github.com/recallproxy/recall/tools"
	"github.com/recallproxy/recall/wire"
)

// The history tools' rounds (proxy/tools.go): what a round keeps, what
// the client sees of it.

// StoredRound is a round of Recall's own tool calls (the call, then its
// results) as the turn stores it: the results of the tools that read
// other conversations (get_conversation, search_conversations) are kept
// as a note of what was read, never the text, so that deleting or
// forgetting what they read erases it from every copy (DESIGN.md section
// 9: erasure is final). The round's own later calls got the text whole.
func StoredRound(round []wire.Message) []wire.Message {
	names := map[string]string{}
	for _, m := range round {
		for _, p := range m.Parts {
			if p.Kind == wire.ToolCall {
				names[p.CallID] = p.Name
			}
		}
	}
	out := slices.Clone(round)
	for i, m := range out {
		cloned := false
		for j, p := range m.Parts {
			if p.Kind != wire.ToolResult || names[p.CallID] != tools.GetConversation && names[p.CallID] != tools.SearchConversations {
				continue
			}
			if !cloned { // never write into the round the upstream calls use
				out[i].Parts, cloned = slices.Clone(m.Parts), true
			}
			out[i].Parts[j].Text = "[" + names[p.CallID] + " read other conversations here; what it read is not kept with this one. Call the tool again to read it now.]"
		}
	}
	return out
}

// WithLeadingText returns m with text before its first text part (a new
// first part if it has none): a stream renders the text of every round
// into the same text part.
func WithLeadingText(m wire.Message, text string) wire.Message {
	parts := make([]wire.Part, 0, len(m.Parts)+1)
	parts = append(parts, wire.Part{Kind: wire.Text, Text: text})
	merged := false
	for _, p := range m.Parts {
		if !merged && p.Kind == wire.Text {
			parts[0].Text += p.Text
			merged = true
			continue
		}
		parts = append(parts, p)
	}
	m.Parts = parts
	return m
}

// HasContent reports whether a stored message carries anything besides
// tool calls (text the client must see).
func HasContent(codec wire.Codec, raw []byte) bool {
	m, err := codec.Decode(raw)
	if err != nil {
		return true
	}
	return slices.ContainsFunc(m.Parts, func(p wire.Part) bool { return p.Kind != wire.ToolCall })
}

// AnswerDeltas are the deltas that stream a whole answer's text and tool
// calls.
func AnswerDeltas(a *wire.Answer) []wire.Delta {
	var ds []wire.Delta
	calls := 0
	for _, p := range a.Message.Parts {
		switch p.Kind {
		case wire.Text:
			ds = append(ds, wire.Delta{Kind: wire.TextDelta, Text: p.Text})
		case wire.Refusal:
			ds = append(ds, wire.Delta{Kind: wire.RefusalDelta, Text: p.Text})
		case wire.ToolCall:
			ds = append(ds, wire.Delta{Kind: wire.ToolCallStart, Index: calls, CallID: p.CallID, Name: p.Name},
				wire.Delta{Kind: wire.ArgumentsDelta, Index: calls, Text: p.Arguments})
			calls++
		}
	}
	return ds
}

// RoundFilter decides which of a round's deltas the client sees, and
// renders those.
type RoundFilter struct {
	// Offered are the history tools offered (see tools.Offered).
	Offered []wire.Tool
	// mine are the round's calls of Recall's tools, calls the round's
	// calls of the client's tools (their index in the client's stream),
	// by their index in the round.
	mine  map[int]bool
	calls map[int]int
	// n counts the client's calls rendered, across rounds.
	n int
	// Text is the text rendered in the round.
	Text strings.Builder
}

// NextRound readies f for the next round.
func (f *RoundFilter) NextRound() {
	clear(f.mine)
	clear(f.calls)
	f.Text.Reset()
}

// Render appends d's events when the client may see d: not a call of
// Recall's tools, not a finish (the closing events are rendered from the
// final answer once committed), not reasoning.
func (f *RoundFilter) Render(dst []byte, ren wire.Renderer, d wire.Delta) []byte {
	switch d.Kind {
	case wire.Finish, wire.ReasoningDelta:
		return dst
	case wire.ToolCallStart:
		if tools.Offered(f.Offered, d.Name) {
			if f.mine == nil {
				f.mine = map[int]bool{}
			}
			f.mine[d.Index] = true
			return dst
		}
		if f.calls == nil {
			f.calls = map[int]int{}
		}
		f.calls[d.Index] = f.n
		d.Index = f.n
		f.n++
	case wire.ArgumentsDelta:
		i, ok := f.calls[d.Index]
		if !ok { // Recall's, or a call not started (none to render)
			return dst
		}
		d.Index = i
	case wire.TextDelta:
		f.Text.WriteString(d.Text)
	}
	return ren.Delta(dst, d)
}
