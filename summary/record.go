package summary

import (
	"errors"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/tokens"
)

// call is one summariser call as its exchange record tells it: what it
// sent besides the instructions (the summary so far it extends, through
// which seq, and the turns it folds in; none when it compacts the
// previous summary alone) and how it ended.
type call struct {
	system, prev string
	prevThrough  uint64
	covers       []turn
	start        time.Time
	answer       answer
	err          error
}

// record hands the exchange record of c, a call made for w's
// conversation with model, to Config.OnExchange (DESIGN.md section 13):
// kind "summary", its status and times, Recall's estimate of what it
// sent against what the upstream reported, the seqs it folded in as
// Included and the summary it extended as Summary. Like every record it
// refers to messages by seq and copies no text.
func (m *Manager) record(w *work, model string, enc tokens.Encoding, budget int, c call) {
	if m.cfg.OnExchange == nil {
		return
	}
	end := m.cfg.Now()
	r := history.ExchangeRecord{
		ID:        history.NextExchangeID(c.start),
		Object:    "conversation.exchange",
		CreatedAt: c.start.Unix(),
		Kind:      "summary",
		// Recall's own call, in chat completions both ways.
		Ingress:     "chat.completions",
		Upstream:    "chat.completions",
		Model:       model,
		Status:      "answered",
		HTTPStatus:  c.answer.status,
		Budget:      budget,
		Calibration: 1,
		Included:    []history.Span{},
		Dropped:     []history.Dropped{},
		Cut:         []history.CutResult{},
		Committed:   []history.Span{},
		Incarnation: w.incarnation,
	}
	total := end.Sub(c.start).Milliseconds()
	r.LatencyMS = history.ExchangeLatency{FirstByte: c.answer.firstByte.Milliseconds(), Upstream: total, Total: total}
	switch {
	case c.err == nil:
	case errors.Is(c.err, errUpstream) && c.answer.status == 0:
		r.Status, r.Error = "upstream_error", apierr.UpstreamUnavailable.Code
	case errors.Is(c.err, errUpstream):
		r.Status, r.Error = "upstream_error", apierr.UpstreamBadResponse.Code
	default:
		r.Status = "failed"
	}
	t := &r.Tokens
	// The instructions and the transcript go as a system and a user
	// message; the stored messages' counts stand in for their lines in
	// the transcript (counting a long transcript again would cost what
	// fitsByBytes saves).
	t.Instructions = m.instr.tokens(enc, c.system) + tokens.MessageOverhead
	if c.prev != "" {
		t.Summary = m.prevs.tokens(enc, c.prev)
		r.Summary = &history.SummaryUse{Through: c.prevThrough, Tokens: t.Summary}
	}
	for _, tn := range c.covers {
		for i := range tn.msgs {
			t.History += tn.msgs[i].Tokens
			r.Included = addSeq(r.Included, tn.msgs[i].Seq)
		}
	}
	t.EstimatedInput = tokens.ReplyPriming + t.Instructions + tokens.MessageOverhead + t.Summary + t.History
	t.CalibratedInput = t.EstimatedInput
	t.ReportedInput, t.Output = c.answer.promptTokens, c.answer.complTok
	m.cfg.OnExchange(w.key, r)
}

// addSeq adds seq, past every seq of spans, to spans.
func addSeq(spans []history.Span, seq uint64) []history.Span {
	if n := len(spans); n > 0 && spans[n-1].To+1 == seq {
		spans[n-1].To = seq
		return spans
	}
	return append(spans, history.Span{From: seq, To: seq})
}
