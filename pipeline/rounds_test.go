package pipeline

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recallproxy/recall/tools"
	"github.com/recallproxy/recall/wire"
)

// TestStoredRoundKeepsANoteOfWhatWasRead: a round of get_conversation is
// stored with a note in place of the text it read (erasure of that
// conversation is final), an end_conversation result as it was, and the
// round the upstream calls use is never written into.
func TestStoredRoundKeepsANoteOfWhatWasRead(t *testing.T) {
	round := []wire.Message{
		{Role: wire.RoleAssistant, Parts: []wire.Part{
			{Kind: wire.ToolCall, CallID: "c1", Name: tools.GetConversation, Arguments: `{"id":"other"}`},
			{Kind: wire.ToolCall, CallID: "c2", Name: tools.EndConversation, Arguments: `{}`},
		}},
		{Role: wire.RoleTool, Parts: []wire.Part{
			{Kind: wire.ToolResult, CallID: "c1", Text: "the secret plan"},
			{Kind: wire.ToolResult, CallID: "c2", Text: "ended"},
		}},
	}
	got := StoredRound(round)
	if r := got[1].Parts[0].Text; strings.Contains(r, "secret") || !strings.Contains(r, tools.GetConversation) {
		t.Errorf("got the stored result %q, want a note naming %s, not what it read", r, tools.GetConversation)
	}
	if r := got[1].Parts[1].Text; r != "ended" {
		t.Errorf("got end_conversation's stored result %q, want %q", r, "ended")
	}
	if r := round[1].Parts[0].Text; r != "the secret plan" {
		t.Errorf("the round the upstream calls use now reads %q, want it as it was", r)
	}
}

// TestRoundFilterShowsTheClientOnlyItsOwn: of a round's deltas the
// client sees its text and its own tools' calls, numbered across rounds
// from 0, never Recall's calls, their arguments, reasoning or the finish.
func TestRoundFilterShowsTheClientOnlyItsOwn(t *testing.T) {
	f := &RoundFilter{Offered: tools.Definitions([]string{tools.GetConversation}, nil)}
	var ren spyRenderer
	rounds := [][]wire.Delta{
		{
			{Kind: wire.ReasoningDelta, Text: "hmm"},
			{Kind: wire.TextDelta, Text: "looking"},
			{Kind: wire.ToolCallStart, Index: 0, CallID: "r1", Name: tools.GetConversation},
			{Kind: wire.ArgumentsDelta, Index: 0, Text: `{"id":"x"}`},
			{Kind: wire.ToolCallStart, Index: 1, CallID: "u1", Name: "weather"},
			{Kind: wire.ArgumentsDelta, Index: 1, Text: `{"city":"Oslo"}`},
			{Kind: wire.Finish, Text: wire.StopToolCalls},
		},
		{
			{Kind: wire.ToolCallStart, Index: 0, CallID: "u2", Name: "time"},
			{Kind: wire.ArgumentsDelta, Index: 0, Text: `{}`},
		},
	}
	for i, round := range rounds {
		for _, d := range round {
			f.Render(nil, &ren, d)
		}
		if i == 0 && f.Text.String() != "looking" {
			t.Errorf("got the round's text %q, want %q", f.Text.String(), "looking")
		}
		f.NextRound()
	}
	want := `text "looking"; call 0 u1 weather; args 0 {"city":"Oslo"}; call 1 u2 time; args 1 {}`
	if got := strings.Join(ren.seen, "; "); got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

// spyRenderer names the deltas it is given.
type spyRenderer struct{ seen []string }

func (r *spyRenderer) Delta(dst []byte, d wire.Delta) []byte {
	switch d.Kind {
	case wire.TextDelta:
		r.seen = append(r.seen, "text "+`"`+d.Text+`"`)
	case wire.ToolCallStart:
		r.seen = append(r.seen, "call "+strconv.Itoa(d.Index)+" "+d.CallID+" "+d.Name)
	case wire.ArgumentsDelta:
		r.seen = append(r.seen, "args "+strconv.Itoa(d.Index)+" "+d.Text)
	default:
		r.seen = append(r.seen, "other")
	}
	return dst
}

func (r *spyRenderer) End(dst []byte, _ *wire.Answer) []byte { return dst }

// TestRoundsStepRunsRecallsCallsUntilAFinalAnswer: a round that calls
// only Recall's tools is run and followed by another (its calls and
// results sent), unless it is the last round allowed; a round that also
// calls the client's tools goes to the client; a round without calls is
// the final answer.
func TestRoundsStepRunsRecallsCallsUntilAFinalAnswer(t *testing.T) {
	mine := wire.Part{Kind: wire.ToolCall, CallID: "c1", Name: tools.EndConversation, Arguments: `{}`}
	theirs := wire.Part{Kind: wire.ToolCall, CallID: "c2", Name: "weather", Arguments: `{}`}
	text := wire.Part{Kind: wire.Text, Text: "done"}
	for _, tt := range []struct {
		name              string
		parts             []wire.Part
		n                 int
		more, limited     bool
		post              bool
		sent, rounds, ran int
	}{
		{name: "Recall's call", parts: []wire.Part{mine}, n: 1, more: true, sent: 1 + 2, rounds: 2, ran: 1},
		{name: "Recall's call, last round", parts: []wire.Part{mine}, n: 3, limited: true, sent: 1, rounds: 2, ran: 1},
		{name: "the client's call too", parts: []wire.Part{mine, theirs}, n: 1, post: true, sent: 1, ran: 1},
		{name: "final answer", parts: []wire.Part{text}, n: 1, sent: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ran := 0
			r := &Rounds{Up: wire.ChatCompletions, Msgs: [][]byte{[]byte(`{"role":"user","content":"hi"}`)},
				Offered: tools.Definitions([]string{tools.EndConversation}, nil), Limit: 3, Now: time.Now,
				Ran:      func(wire.Part, time.Time, tools.Result) { ran++ },
				ToolTurn: ToolTurn{Mine: map[string]bool{}}}
			a := &wire.Answer{Message: wire.Message{Role: wire.RoleAssistant, Parts: tt.parts}, Usage: wire.Usage{InputTokens: 5}}
			more, err := r.Step(context.Background(), a, tt.n)
			if err != nil {
				t.Fatal(err)
			}
			if more != tt.more || r.Limited != tt.limited || (r.Post != nil) != tt.post || len(r.Msgs) != tt.sent ||
				len(r.Rounds) != tt.rounds || ran != tt.ran || r.Usage.InputTokens != 5 {
				t.Errorf("got more %v, limited %v, post %v, %d sent, %d stored, %d run, input %d; want %v, %v, %v, %d, %d, %d, 5",
					more, r.Limited, r.Post != nil, len(r.Msgs), len(r.Rounds), ran, r.Usage.InputTokens,
					tt.more, tt.limited, tt.post, tt.sent, tt.rounds, tt.ran)
			}
		})
	}
}
