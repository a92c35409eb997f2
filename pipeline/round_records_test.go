package pipeline

import (
	"reflect"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/wire"
)

// TestRoundRecordsSplitTheTurnByRound: the exchange's own record keeps
// the first round's part of the committed turn (the client's new
// message and what the first round stored) and usage; every later round
// has a record of its own that includes what the turn stored before it
// and commits what it answered, timed by its own upstream call.
func TestRoundRecordsSplitTheTurnByRound(t *testing.T) {
	t0 := time.Unix(1000, 0)
	first := history.ExchangeRecord{ID: "x1", Kind: "chat", Committed: []history.Span{{From: 10, To: 99}},
		Included: []history.Span{{From: 1, To: 9}}, Tokens: history.ExchangeTokens{History: 100, New: 5, EstimatedInput: 105}}
	rounds := []Round{
		{Sent: t0, Done: t0.Add(time.Second), Usage: wire.Usage{InputTokens: 110, OutputTokens: 7}, Stored: 2, Tokens: 20},
		{Sent: t0.Add(2 * time.Second), FirstByte: t0.Add(2500 * time.Millisecond), Done: t0.Add(3 * time.Second),
			Model: "m2", Usage: wire.Usage{InputTokens: 130, OutputTokens: 9}, Stored: 1, Tokens: 4},
	}
	out := RoundRecords(&first, rounds, 1)
	if want := []history.Span{{From: 10, To: 12}}; !reflect.DeepEqual(first.Committed, want) || first.Tokens.ReportedInput != 110 || first.Tokens.Output != 7 {
		t.Errorf("first: committed %v, input %d, output %d; want %v, 110, 7", first.Committed, first.Tokens.ReportedInput, first.Tokens.Output, want)
	}
	if len(out) != 1 {
		t.Fatalf("got %d round records, want 1", len(out))
	}
	r := out[0]
	if r.Kind != "tool_round" || r.Model != "m2" || r.CreatedAt != 1002 ||
		!reflect.DeepEqual(r.Included, []history.Span{{From: 1, To: 12}}) || !reflect.DeepEqual(r.Committed, []history.Span{{From: 13, To: 13}}) {
		t.Errorf("round: kind %q, model %q, created %d, included %v, committed %v; want tool_round, m2, 1002, [1-12], [13-13]",
			r.Kind, r.Model, r.CreatedAt, r.Included, r.Committed)
	}
	if r.Tokens.History != 125 || r.Tokens.New != 0 || r.Tokens.EstimatedInput != 125 || r.Tokens.ReportedInput != 130 ||
		r.LatencyMS.Upstream != 1000 || r.LatencyMS.FirstByte != 500 {
		t.Errorf("round: tokens %+v, latency %+v; want history 125, estimated 125, input 130, upstream 1000 ms, first byte 500 ms", r.Tokens, r.LatencyMS)
	}
	if !reflect.DeepEqual(first.Included, []history.Span{{From: 1, To: 9}}) {
		t.Errorf("the first record's included spans changed: %v", first.Included)
	}
}
