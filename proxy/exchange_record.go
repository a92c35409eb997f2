package proxy

import (
	"errors"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/calibrate"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/inspect"
	"github.com/recallproxy/recall/pipeline"
	"github.com/recallproxy/recall/thread"
	"github.com/recallproxy/recall/uplink"
	"github.com/recallproxy/recall/wire"
)

// Statuses of an exchange record (history.ExchangeRecord.Status).
const (
	recordAnswered      = "answered"
	recordUpstreamError = "upstream_error"
	recordClientGone    = "client_gone"
	recordCommitFailed  = "commit_failed"
	recordFailed        = "failed"
)

// answered notes the upstream's answer's headers: the time of its first
// byte (as the client library reports it: the headers read) and whether
// it streams.
func (x *exchange) answered(resp *fasthttp.Response) {
	x.rec.FirstByte = x.now()
	x.rec.Stream = uplink.IsEventStream(resp)
}

// nextExchangeID is the id of a record made at now (see
// history.NextExchangeID).
func nextExchangeID(now time.Time) string { return history.NextExchangeID(now) }

// exchangeRecord is the record of x, which ended at end with the client
// given status (err: why it ended early or was not recorded). upstream is
// the time from sending the request upstream to the answer's end.
func (x *exchange) exchangeRecord(status int, err error, end time.Time, upstream time.Duration) history.ExchangeRecord {
	ingress := wire.ChatCompletions
	for _, p := range protocols {
		if p.route == x.route {
			ingress = p.proto
		}
	}
	up, _ := wire.UpstreamFor(x.c.cfg.Upstream.Protocol, ingress)
	r := history.ExchangeRecord{
		ID:         nextExchangeID(x.rec.Start),
		Object:     "conversation.exchange",
		CreatedAt:  x.rec.Start.Unix(),
		Kind:       "chat",
		Ingress:    ingress.String(),
		Upstream:   up.String(),
		Model:      x.model,
		Stream:     x.rec.Stream,
		HTTPStatus: status,
		Committed:  []history.Span{},
	}
	if x.dec != nil && len(x.dec.Fresh) > 0 && x.dec.Fresh[0].Role == wire.RoleTool {
		r.Kind = "tool_round"
	}
	if x.side != "" {
		r.Kind, r.Thread, r.ThreadReason = "side", thread.Side, x.side
	} else {
		r.Thread, r.ThreadReason = threadOfRecord(x.key.Conversation, x.th.Header)
	}
	r.Status = recordStatus(status, err, x.rec.CommitFailed)
	if err != nil {
		r.Error = classify(err).Code
	}
	r.CacheBreakpoint = x.rec.CacheBreakpoint
	total := end.Sub(x.rec.Start)
	r.LatencyMS = history.ExchangeLatency{Upstream: upstream.Milliseconds(), Total: total.Milliseconds(),
		Recall: (total - upstream).Milliseconds()}
	if !x.rec.FirstByte.IsZero() {
		r.LatencyMS.FirstByte = x.rec.FirstByte.Sub(x.rec.Sent).Milliseconds()
	}
	if x.dec != nil {
		inspect.Fill(&r, x.dec.Plan)
		r.Incarnation = x.dec.Meta.Incarnation
	} else { // a side call: nothing planned
		r.Calibration, r.Included, r.Cut, r.Dropped = 1, []history.Span{}, []history.CutResult{}, []history.Dropped{}
	}
	r.Tokens.ReportedInput, r.Tokens.Output, r.Tokens.Cached = x.rec.Usage.InputTokens, x.rec.Usage.OutputTokens, x.rec.Usage.CachedTokens
	r.Tokens.CacheCreation = x.rec.Usage.CacheCreationTokens
	if x.life.committed && x.rec.CommittedTo > 0 {
		r.Committed = append(r.Committed, history.Span{From: x.rec.CommittedFrom, To: x.rec.CommittedTo})
		r.Incarnation = x.rec.CommittedIncarnation
	}
	return r
}

// threadOfRecord is the thread and reason a record of a turn gives (see
// history.ExchangeRecord.Thread): a subagent's thread by its name, named
// by X-Recall-Thread (header, the header's value) or by the agent's own
// header (see threadName); the main thread as "" but when X-Recall-Thread:
// main made the request a turn.
func threadOfRecord(conv, header string) (name, reason string) {
	_, name, ok := history.SplitThread(conv)
	switch {
	case ok && header == name:
		return name, thread.ReasonHeader
	case ok:
		return name, thread.ReasonAgentID
	case header == thread.Main:
		return thread.Main, thread.ReasonHeader
	}
	return "", ""
}

// recordStatus is an exchange record's status: how the exchange ended.
func recordStatus(status int, err error, commitFailed bool) string {
	switch {
	case status == 499 || errors.Is(err, pipeline.ErrClientGone) || errors.Is(err, pipeline.ErrClientLeft):
		return recordClientGone
	case commitFailed:
		return recordCommitFailed
	case err == nil && status < 400:
		return recordAnswered
	case err == nil: // the upstream's own error, relayed
		return recordUpstreamError
	case classify(err).Type == "upstream_error":
		return recordUpstreamError
	}
	return recordFailed
}

// learned is the calibration ratio of the exchange's tenant and model (1:
// none configured) and the model's window the upstream stated (0: none).
func (x *exchange) learned(model string) (ratio float64, window int) {
	if x.s.cfg.Calibration == nil {
		return 1, 0
	}
	return x.s.cfg.Calibration.Learned(x.c.cfg.ID, model)
}

// learnWindow teaches the calibration the model's input window when the
// upstream refused the exchange's prompt as longer than the model takes
// (a 400 or 413 whose body states the window: calibrate.WindowFromError),
// so that the conversation's next requests are planned within it. raw is
// the error body as read, enc its content encoding.
func (x *exchange) learnWindow(status int, enc string, raw []byte) {
	cal := x.s.cfg.Calibration
	if cal == nil || status != 400 && status != 413 || x.model == "" {
		return
	}
	body, err := pipeline.Decode(enc, raw, 1<<20)
	if err != nil {
		return
	}
	if w, ok := calibrate.WindowFromError(body); ok && cal.LearnWindow(x.c.cfg.ID, x.model, w) {
		x.s.log.Info("learned the model's window from the upstream", "tenant", x.c.cfg.ID, "model", x.model, "window", w)
	}
}

// calibrate teaches the calibration what the upstream counted of the
// prompt x planned, if the exchange ended well with its usage from one
// upstream call.
func (x *exchange) calibrate(err error) {
	cal := x.s.cfg.Calibration
	if cal == nil || err != nil || !x.record || x.dec == nil || len(x.rec.rounds) > 1 || x.rec.Usage.InputTokens <= 0 {
		return
	}
	cal.Observe(x.c.cfg.ID, x.model, x.dec.Report.Tokens, x.rec.Usage.InputTokens)
}

// records are x's exchange record and its tool rounds' (roundRecords);
// for an exchange refused before its caller was known, what is known.
func (x *exchange) records(status int, err error, end time.Time, upstream time.Duration) (history.ExchangeRecord, []history.ExchangeRecord) {
	if x.c.tenant == nil {
		r := history.ExchangeRecord{Kind: "chat", HTTPStatus: status, Status: recordStatus(status, err, false)}
		if err != nil {
			r.Error = classify(err).Code
		}
		return r, nil
	}
	r := x.exchangeRecord(status, err, end, upstream)
	fresh := 0 // the client's new messages the turn stored
	if x.dec != nil {
		fresh = len(x.dec.Fresh)
	}
	return r, pipeline.RoundRecords(&r, x.rec.rounds, fresh)
}
