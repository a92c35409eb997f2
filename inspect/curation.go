package inspect

import (
	"math"
	"slices"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/plan"
)

// Fill sets what r records of p, the plan an exchange sent: the budget
// and the calibration it was planned with, Recall's token estimates by
// kind of message and of the tool definitions (and whole, as is and
// calibrated), the summary sent (with its role, and whether it was cut),
// the seqs included and those dropped with the reason, the tool results
// cut and the calls repaired. Included lists the stored messages sent;
// the new ones are counted (NewMessages), and are the first of Committed
// if the exchange stored them.
//
// Dropped covers every stored seq before the exchange's new messages that
// was not sent, whether curation dropped it (p.Report.Dropped) or the
// store never read it: superseded (by an edit before, or by this
// exchange), forgotten (soft or hard), summarised (up to the summary's
// Through), and otherwise budget (the load stops at the budget, the turn
// cap or the cut point it keeps). Turns is set where it is known: the
// ranges curation dropped, and the summarised range when it is whole.
func Fill(r *history.ExchangeRecord, p *plan.Plan) {
	r.Budget = p.Budget
	r.Calibration = p.Ratio
	if r.Calibration == 0 {
		r.Calibration = 1
	}
	r.RepairedCalls = p.Report.RepairedCalls
	r.Tokens.EstimatedInput = p.Report.Tokens
	r.Tokens.CalibratedInput = int(math.Round(float64(p.Report.Tokens) * r.Calibration))
	r.Cut = p.Report.Cut
	if r.Cut == nil {
		r.Cut = []history.CutResult{} // [] in JSON, as every list of the record
	}
	r.Tokens.Tools = p.Tools
	r.Included = []history.Span{}
	role := ""
	for _, m := range p.Messages {
		switch m.Kind {
		case plan.Instruction:
			r.Tokens.Instructions += m.Tokens
		case plan.SummaryMessage:
			r.Tokens.Summary += m.Tokens
			role = m.Role
		case plan.History:
			r.Tokens.History += m.Tokens
		case plan.New:
			r.Tokens.New += m.Tokens
		}
		switch m.Kind {
		case plan.History:
			r.Included = addSeq(r.Included, m.Seq)
		case plan.New:
			r.NewMessages++
		}
	}
	if p.Summary != nil {
		r.Summary = &history.SummaryUse{Through: p.Summary.Through, Tokens: r.Tokens.Summary, Role: role, Cut: p.SummaryCut}
	}
	r.Dropped = dropped(p, r.Included)
}

// addSeq adds seq, past every seq of spans, to spans.
func addSeq(spans []history.Span, seq uint64) []history.Span {
	if n := len(spans); n > 0 && spans[n-1].To+1 == seq {
		spans[n-1].To = seq
		return spans
	}
	return append(spans, history.Span{From: seq, To: seq})
}

// label says why the seqs From..To were not sent ("" for sent ones);
// earlier labels win over later ones where they overlap.
type label struct {
	from, to uint64
	reason   string
	turns    int
}

// dropped partitions the stored seqs before the new messages that were
// not sent into ranges by reason (see Fill).
func dropped(p *plan.Plan, included []history.Span) []history.Dropped {
	out := []history.Dropped{}
	last := uint64(0)
	if p.Meta.NextSeq > 0 {
		last = p.Meta.NextSeq - 1
	}
	if last == 0 {
		return out
	}
	if p.Supersede == nil && len(p.Meta.Gaps) == 0 && p.Summary == nil && len(p.Report.Dropped) == 0 &&
		len(included) == 1 && included[0].From == 1 && included[0].To == last {
		return out // everything stored was sent: the common case costs nothing
	}
	return partition(out, dropLabels(p, included, last), last)
}

// dropLabels labels the stored seqs up to last with why they were not
// sent: superseded, forgotten, summarized or the strategies' reasons;
// the included spans are labelled "" (sent).
func dropLabels(p *plan.Plan, included []history.Span, last uint64) []label {
	var labels []label
	if p.Supersede != nil && p.Supersede.Seq < last {
		labels = append(labels, label{p.Supersede.Seq + 1, last, history.DroppedSuperseded, 0})
	}
	for _, g := range p.Meta.Gaps {
		reason := history.DroppedForgotten
		if g.Flags == 0 || g.Flags == history.Superseded {
			reason = history.DroppedSuperseded
		}
		labels = append(labels, label{g.From, g.To, reason, 0})
	}
	for _, in := range included {
		labels = append(labels, label{in.From, in.To, "", 0})
	}
	if p.Summary != nil {
		labels = append(labels, label{1, p.Summary.Through, history.DroppedSummarized, p.Summary.Turns})
	}
	for _, d := range p.Report.Dropped {
		labels = append(labels, label{d.From, d.To, d.Reason, d.Turns})
	}
	return labels
}

// partition appends to out the seqs 1 to last split at every label's
// bounds, each range with the reason of the first label covering it
// (budget when none does; none for a sent one), adjacent ranges of one
// reason merged; a range keeps a label's turns when it is that whole
// label.
func partition(out []history.Dropped, labels []label, last uint64) []history.Dropped {
	points := []uint64{1, last + 1}
	for _, l := range labels {
		points = append(points, l.from, l.to+1)
	}
	slices.Sort(points)
	points = slices.Compact(points)
	for i := 0; i+1 < len(points) && points[i] <= last; i++ {
		from, to := points[i], min(points[i+1]-1, last)
		if from == 0 {
			continue
		}
		reason, whole := history.DroppedBudget, label{}
		for _, l := range labels {
			if l.from <= from && to <= l.to {
				reason, whole = l.reason, l
				break
			}
		}
		if reason == "" {
			continue // sent
		}
		if n := len(out); n > 0 && out[n-1].Reason == reason && out[n-1].To+1 == from {
			out[n-1].To = to
		} else {
			out = append(out, history.Dropped{From: from, To: to, Reason: reason})
		}
		n := len(out)
		out[n-1].Turns = 0
		if whole.turns > 0 && out[n-1].From == whole.from && out[n-1].To == whole.to {
			out[n-1].Turns = whole.turns
		}
	}
	return out
}
