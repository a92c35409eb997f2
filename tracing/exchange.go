package tracing

import (
	"context"
	"encoding/hex"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/recallproxy/recall/history"
)

// Exchange is the span of one exchange (one client request answered by
// the proxy), begun when the exchange begins so that its upstream
// requests can name it, and ended with the exchange's record. One party
// holds an Exchange at a time, as the proxy holds its exchange: its
// methods are not safe for concurrent use.
type Exchange struct {
	ctx         context.Context // carries span
	span        trace.Span
	tracer      trace.Tracer
	traceparent [55]byte
	// PlanStart and PlanEnd bound the exchange's load and curation;
	// CommitStart and CommitEnd its commit (zero: not done). The proxy
	// sets them as they happen.
	PlanStart, PlanEnd     time.Time
	CommitStart, CommitEnd time.Time
	// RequestModel is the request's model as the client sent it, for an
	// exchange whose record names none ("": not known).
	RequestModel string
	// ResponseModel is the model the upstream's answer names, and
	// FinishReason why it ended ("": not known).
	ResponseModel, FinishReason string
}

// Begin starts the span of an exchange begun at start, as a child of the
// client's traceparent and tracestate headers' span if they name one
// (a new trace otherwise). It returns nil for a nil Tracer.
func (t *Tracer) Begin(traceparent, tracestate []byte, start time.Time) *Exchange {
	if t == nil {
		return nil
	}
	ctx := context.Background()
	if len(traceparent) > 0 {
		ctx = t.prop.Extract(ctx, headers{traceparent, tracestate})
	}
	e := &Exchange{tracer: t.tracer}
	e.ctx, e.span = t.tracer.Start(ctx, OperationChat, trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start))
	sc := e.span.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b := append(e.traceparent[:0], "00-"...)
	b = hex.AppendEncode(b, tid[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, sid[:])
	b = append(b, '-')
	hex.AppendEncode(b, []byte{byte(sc.TraceFlags() & trace.FlagsSampled)})
	return e
}

// headers are a request's trace context headers, as the propagator reads
// them.
type headers struct{ traceparent, tracestate []byte }

func (h headers) Get(key string) string {
	switch key {
	case "traceparent":
		return string(h.traceparent)
	case "tracestate":
		return string(h.tracestate)
	}
	return ""
}

func (h headers) Set(string, string) {}
func (h headers) Keys() []string     { return []string{"traceparent", "tracestate"} }

// Traceparent is the W3C traceparent header naming e's span, the
// upstream requests' parent. It points into e.
func (e *Exchange) Traceparent() []byte { return e.traceparent[:] }

// Call is one upstream call of an exchange: sent at Sent, its answer's
// headers read at FirstByte (zero: none came), its answer read at Done.
type Call struct {
	Sent, FirstByte, Done time.Time
	// Model is the model the call asked for ("": the exchange's).
	Model string
}

// Ended is how an exchange ended, as its span tells it.
type Ended struct {
	// Record is the exchange's record (package inspect): its model,
	// status, usage and every curation figure.
	Record *history.ExchangeRecord
	// Conversation is the conversation's id ("": none named); Tenant
	// the caller's tenant ("": not authenticated).
	Conversation, Tenant string
	// Calls are the exchange's upstream calls, in order.
	Calls []Call
	// End is when the exchange ended.
	End time.Time
}

// End ends e's span at x.End with x's attributes, and its child spans:
// load (the plan), one per upstream call, and commit, for those that
// happened. It does nothing for a nil Exchange.
func (e *Exchange) End(x Ended) {
	if e == nil {
		return
	}
	r := x.Record
	model := r.Model
	if model == "" {
		model = e.RequestModel
	}
	name := OperationChat
	if model != "" {
		name += " " + model
	}
	e.span.SetName(name)
	if !e.span.IsRecording() { // not sampled: its context went upstream, nothing more
		e.span.End(trace.WithTimestamp(x.End))
		return
	}
	planned := r.Budget > 0 || len(r.Included) > 0 || r.Tokens.EstimatedInput > 0
	n := 20 // the attributes any exchange may have
	if planned {
		n += 12
	}
	attrs := make([]attribute.KeyValue, 0, n)
	attrs = append(attrs,
		attribute.String(AttrOperationName, OperationChat),
		attribute.String(AttrProviderName, provider(r.Upstream)),
		attribute.Int(AttrHTTPStatus, r.HTTPStatus),
		attribute.String(AttrExchangeKind, r.Kind),
		attribute.String(AttrExchangeStatus, r.Status),
		attribute.Bool(AttrStream, r.Stream),
	)
	if model != "" {
		attrs = append(attrs, attribute.String(AttrRequestModel, model))
	}
	if e.ResponseModel != "" {
		attrs = append(attrs, attribute.String(AttrResponseModel, e.ResponseModel))
	}
	if e.FinishReason != "" {
		attrs = append(attrs, attribute.StringSlice(AttrFinishReasons, []string{e.FinishReason}))
	}
	if x.Conversation != "" {
		attrs = append(attrs, attribute.String(AttrConversationID, x.Conversation))
	}
	if x.Tenant != "" {
		attrs = append(attrs, attribute.String(AttrTenant, x.Tenant))
	}
	if r.ID != "" {
		attrs = append(attrs, attribute.String(AttrExchangeID, r.ID))
	}
	if r.Ingress != "" {
		attrs = append(attrs, attribute.String(AttrIngress, r.Ingress))
	}
	if r.Thread != "" {
		attrs = append(attrs, attribute.String(AttrThread, r.Thread))
	}
	if r.ThreadReason != "" {
		attrs = append(attrs, attribute.String(AttrThreadReason, r.ThreadReason))
	}
	if r.Tokens.ReportedInput > 0 || r.Tokens.Output > 0 {
		attrs = append(attrs,
			attribute.Int(AttrInputTokens, r.Tokens.ReportedInput),
			attribute.Int(AttrOutputTokens, r.Tokens.Output),
			attribute.Int(AttrCacheReadTokens, r.Tokens.Cached))
	}
	if planned {
		attrs = append(attrs,
			attribute.Bool(AttrCompacted, r.Summary != nil),
			attribute.Int(AttrBudget, r.Budget),
			attribute.Float64(AttrCalibration, r.Calibration),
			attribute.Int(AttrEstimatedInput, r.Tokens.EstimatedInput),
			attribute.Int(AttrCalibratedInput, r.Tokens.CalibratedInput),
			attribute.Int(AttrIncludedMessages, messages(r.Included)),
			attribute.Int(AttrNewMessages, r.NewMessages),
			attribute.Int(AttrDroppedTurns, droppedTurns(r.Dropped)),
			attribute.Int(AttrCutResults, len(r.Cut)),
			attribute.Int(AttrRepairedCalls, r.RepairedCalls))
		if r.Summary != nil {
			attrs = append(attrs, attribute.Int64(AttrSummaryThrough, int64(r.Summary.Through)),
				attribute.Int(AttrSummaryTokens, r.Summary.Tokens))
		}
	}
	if len(r.Committed) > 0 {
		attrs = append(attrs, attribute.Int(AttrCommittedMessages, messages(r.Committed)))
	}
	if r.Error != "" {
		attrs = append(attrs, attribute.String(AttrErrorType, r.Error))
		e.span.SetStatus(codes.Error, r.Error)
	} else if r.HTTPStatus >= 500 || r.Status != "answered" {
		e.span.SetStatus(codes.Error, r.Status)
	}
	e.span.SetAttributes(attrs...)

	tracer := e.tracer
	child := func(name string, kind trace.SpanKind, start, end time.Time, attrs ...attribute.KeyValue) {
		if start.IsZero() || end.IsZero() {
			return
		}
		_, s := tracer.Start(e.ctx, name, trace.WithSpanKind(kind), trace.WithTimestamp(start), trace.WithAttributes(attrs...))
		s.End(trace.WithTimestamp(end))
	}
	if planned {
		child(SpanLoad, trace.SpanKindInternal, e.PlanStart, e.PlanEnd,
			attribute.Int(AttrBudget, r.Budget),
			attribute.Int(AttrIncludedMessages, messages(r.Included)),
			attribute.Int(AttrDroppedTurns, droppedTurns(r.Dropped)),
			attribute.Int(AttrCutResults, len(r.Cut)),
			attribute.Bool(AttrCompacted, r.Summary != nil))
	}
	for _, c := range x.Calls {
		m := c.Model
		if m == "" {
			m = model
		}
		attrs := []attribute.KeyValue{attribute.String(AttrProviderName, provider(r.Upstream))}
		if m != "" {
			attrs = append(attrs, attribute.String(AttrRequestModel, m))
		}
		if !c.FirstByte.IsZero() {
			attrs = append(attrs, attribute.Int64(AttrFirstByteMS, c.FirstByte.Sub(c.Sent).Milliseconds()))
		}
		child(SpanUpstream, trace.SpanKindClient, c.Sent, c.Done, attrs...)
	}
	child(SpanCommit, trace.SpanKindInternal, e.CommitStart, e.CommitEnd,
		attribute.Int(AttrCommittedMessages, messages(r.Committed)),
		attribute.Bool(AttrCommitFailed, r.Status == "commit_failed"))
	e.span.End(trace.WithTimestamp(x.End))
}

// provider is the gen_ai.provider.name of an upstream speaking the
// protocol named upstream (wire.Protocol's String).
func provider(upstream string) string {
	if upstream == "messages" {
		return "anthropic"
	}
	return "openai"
}

// messages counts the sequence numbers of spans.
func messages(spans []history.Span) int {
	n := 0
	for _, s := range spans {
		if s.To >= s.From {
			n += int(s.To - s.From + 1)
		}
	}
	return n
}

// droppedTurns counts the turns dropped: a range's Turns, or 1 for a
// range whose count the store never read.
func droppedTurns(d []history.Dropped) int {
	n := 0
	for _, r := range d {
		n += max(r.Turns, 1)
	}
	return n
}
