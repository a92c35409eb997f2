package pipeline

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/recallproxy/recall/internal/apierr"
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

// Rounds is the state of the history tools' rounds of one exchange
// across its upstream calls: what the next round sends, what the rounds
// reported, and what they leave for the commit (ToolTurn).
type Rounds struct {
	// Up is the upstream's protocol, Msgs the messages it is sent,
	// grown by each round's calls and results.
	Up   wire.Protocol
	Msgs [][]byte
	// Offered are the history tools offered; Limit bounds the upstream
	// calls; Runner runs the tools.
	Offered []wire.Tool
	Limit   int
	Runner  tools.Runner
	// Now is the clock Ran is told the runs' times by; Ran, if set, is
	// told of every history tool run.
	Now func() time.Time
	Ran func(call wire.Part, start time.Time, r tools.Result)
	// Usage is the rounds' usage, summed.
	Usage wire.Usage

	// ToolTurn is what the rounds leave for the commit.
	ToolTurn
}

// Step takes the answer a of round n (counted from 1): it runs Recall's
// calls in it and reports whether another round follows (its request
// then carries the calls and their results, in Msgs). None follows a
// final answer (no call of Recall's), an answer that also calls the
// client's tools (those go to the client: Post), nor round Limit
// (Limited).
func (r *Rounds) Step(ctx context.Context, a *wire.Answer, n int) (more bool, err error) {
	r.Usage.InputTokens += a.Usage.InputTokens
	r.Usage.OutputTokens += a.Usage.OutputTokens
	r.Usage.CachedTokens += a.Usage.CachedTokens
	r.Usage.CacheCreationTokens += a.Usage.CacheCreationTokens
	results := wire.Message{Role: wire.RoleTool}
	theirs := 0
	for _, part := range a.Message.Parts {
		if part.Kind != wire.ToolCall {
			continue
		}
		if !tools.Offered(r.Offered, part.Name) {
			theirs++
			continue
		}
		r.Mine[part.CallID] = true
		start := r.Now()
		res := r.Runner.Run(ctx, part.Name, part.Arguments)
		if r.Ran != nil {
			r.Ran(part, start, res)
		}
		results.Parts = append(results.Parts, wire.Part{Kind: wire.ToolResult, CallID: part.CallID, Text: res.Text, IsError: res.IsError})
	}
	if len(results.Parts) == 0 {
		return false, nil // the final answer
	}
	if theirs > 0 {
		r.Post = &results // the client's calls go to the client
		return false, nil
	}
	r.Rounds = append(r.Rounds, a.Message, results)
	if n == r.Limit {
		r.Limited = true
		return false, nil
	}
	enc, err := wire.For(r.Up).Encode(nil, []wire.Message{a.Message, results})
	if err != nil {
		return false, fmt.Errorf("%w: %w", apierr.Internal, err)
	}
	r.Msgs = append(r.Msgs[:len(r.Msgs):len(r.Msgs)], enc...)
	return true, nil
}
