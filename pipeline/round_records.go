package pipeline

import (
	"slices"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/tracing"
	"github.com/recallproxy/recall/wire"
)

// Round is what one upstream call of a tool exchange was, for its
// exchange record (a part of the exchange's Record): its times, whether
// it streamed, the model and usage the upstream reported, and how many
// messages of the stored turn it produced (its answer, and the results
// of Recall's calls in it).
type Round struct {
	Sent, FirstByte, Done time.Time
	Stream                bool
	Model                 string
	Usage                 wire.Usage
	Stored                int
	// Tokens are the stored tokens of those messages.
	Tokens int
	// Runs are the history tools run on the round's answer, for its
	// span (kept only when the exchange is traced).
	Runs []tracing.ToolRun
}

// RoundRecords are the exchange records of a tool exchange's rounds
// beyond the first, of kind "tool_round", made from first, the
// exchange's own record, which then describes the first round: what it
// committed (the client's fresh new messages, the first answer and the
// results of Recall's calls in it) and the usage the upstream reported
// for it.
// Each round's record includes what the turn stored before it (it was
// sent as the conversation so far), commits what that round answered,
// and reports its own upstream times and usage.
func RoundRecords(first *history.ExchangeRecord, rounds []Round, fresh int) []history.ExchangeRecord {
	if len(rounds) == 0 {
		return nil
	}
	r0 := rounds[0]
	first.Tokens.ReportedInput, first.Tokens.Output, first.Tokens.Cached = r0.Usage.InputTokens, r0.Usage.OutputTokens, r0.Usage.CachedTokens
	first.Tokens.CacheCreation = r0.Usage.CacheCreationTokens
	committed := len(first.Committed) == 1
	next := uint64(0) // the first seq a round's answer got
	if committed {
		next = first.Committed[0].From + uint64(fresh)
		first.Committed[0].To = next + uint64(r0.Stored) - 1
		next += uint64(r0.Stored)
	}
	var out []history.ExchangeRecord
	extra := r0.Tokens // stored tokens of the rounds before the round
	for _, rd := range rounds[1:] {
		r := *first
		r.ID = history.NextExchangeID(rd.Sent)
		r.CreatedAt = rd.Sent.Unix()
		r.Kind = "tool_round"
		if rd.Model != "" {
			r.Model = rd.Model
		}
		r.Stream = rd.Stream
		r.NewMessages = 0
		r.Included = slices.Clone(first.Included)
		r.Dropped = slices.Clone(first.Dropped)
		r.Cut = slices.Clone(first.Cut)
		r.Committed = []history.Span{}
		if committed {
			r.Included = addSpan(r.Included, history.Span{From: first.Committed[0].From, To: next - 1})
			if rd.Stored > 0 {
				r.Committed = append(r.Committed, history.Span{From: next, To: next + uint64(rd.Stored) - 1})
			}
			next += uint64(rd.Stored)
		}
		// The client's new messages and the earlier rounds went as the
		// conversation so far.
		r.Tokens.History = first.Tokens.History + first.Tokens.New + extra
		r.Tokens.New = 0
		r.Tokens.EstimatedInput = first.Tokens.EstimatedInput + extra
		r.Tokens.ReportedInput, r.Tokens.Output, r.Tokens.Cached = rd.Usage.InputTokens, rd.Usage.OutputTokens, rd.Usage.CachedTokens
		r.Tokens.CacheCreation = rd.Usage.CacheCreationTokens
		// A round's time is its upstream call's: running Recall's tools
		// before it is the exchange's (first) record's.
		up := rd.Done.Sub(rd.Sent)
		r.LatencyMS = history.ExchangeLatency{Upstream: up.Milliseconds(), Total: up.Milliseconds()}
		if !rd.FirstByte.IsZero() {
			r.LatencyMS.FirstByte = rd.FirstByte.Sub(rd.Sent).Milliseconds()
		}
		out = append(out, r)
		extra += rd.Tokens
	}
	return out
}

// addSpan adds sp, past every seq of spans, to spans.
func addSpan(spans []history.Span, sp history.Span) []history.Span {
	if n := len(spans); n > 0 && spans[n-1].To+1 == sp.From {
		spans[n-1].To = sp.To
		return spans
	}
	return append(spans, sp)
}
