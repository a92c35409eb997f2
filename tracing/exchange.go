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
// methods are not safe for concurrent use, and it must not be used after
// End.
type Exchange struct {
	ctx         context.Context // carries span
	span        trace.Span
	t           *Tracer
	traceparent [55]byte
	// PlanStart and PlanEnd bound the exchange's plan, Loaded splits it
	// into the conversation's load and its curation (zero: the plan
	// failed before it read the conversation); CommitStart and CommitEnd
	// bound its commit (zero: not done). The proxy sets them as they
	// happen.
	PlanStart, Loaded, PlanEnd time.Time
	CommitStart, CommitEnd     time.Time
	// KeptTurns is how many stored turns curation sent.
	KeptTurns int
	// RequestModel is the request's model as the client sent it, for an
	// exchange whose record names none ("": not known).
	RequestModel string
	// ResponseModel is the model the upstream's answer names, and
	// FinishReason why it ended ("": not known).
	ResponseModel, FinishReason string
	// Input and Output are the messages sent upstream and the answer, as
	// the GenAI conventions' gen_ai.input.messages and
	// gen_ai.output.messages JSON (see Messages): set only when the
	// Tracer captures content (CaptureContent), "" otherwise.
	Input, Output string

	ended Ended
}

// Begin starts the span of an exchange begun at start, as a child of the
// client's traceparent and tracestate headers' span if they name one
// (a new trace otherwise). It returns nil for a nil Tracer.
func (t *Tracer) Begin(traceparent, tracestate []byte, start time.Time) *Exchange {
	if t == nil {
		return nil
	}
	ctx := context.Background()
	if sc, ok := parseTraceparent(traceparent, tracestate); ok {
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	e := &Exchange{t: t}
	e.ctx, e.span = t.tracer.Start(ctx, OperationChat, kindClient, trace.WithTimestamp(start))
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

// The span kinds' start options, made once.
var (
	kindClient   = trace.WithSpanKind(trace.SpanKindClient)
	kindInternal = trace.WithSpanKind(trace.SpanKindInternal)
)

// Traceparent is the W3C traceparent header naming e's span, the
// upstream requests' parent. It points into e.
func (e *Exchange) Traceparent() []byte { return e.traceparent[:] }

// Call is one upstream call of an exchange: sent at Sent, its answer's
// headers read at FirstByte (zero: none came), its answer read at Done.
type Call struct {
	Sent, FirstByte, Done time.Time
	// Model is the model the call asked for ("": the exchange's).
	Model string
	// Tools are the history tools Recall ran on the call's answer: a
	// call of an exchange with history tools offered is a round
	// (SpanToolRound), its upstream call and its tools' runs the round's
	// children.
	Tools []ToolRun
	// Round is set for a round of an exchange with history tools
	// offered, even one whose answer called none.
	Round bool
}

// ToolRun is one history tool Recall ran (package tools).
type ToolRun struct {
	// Name is the tool's name, CallID the model's id for the call.
	Name, CallID string
	// Start and End bound the run.
	Start, End time.Time
	// Outcome is how it ended (tools.Outcome*); Failed is set when the
	// model got an error result.
	Outcome string
	Failed  bool
	// Found is how many hits a search returned.
	Found int
}

// Ended is how an exchange ended, as its span tells it.
type Ended struct {
	// Record is the exchange's record (package inspect): its model,
	// status, usage and every curation figure.
	Record *history.ExchangeRecord
	// Conversation is the conversation's id ("": none named; a
	// subagent's thread's id names the thread too: history.ThreadID);
	// Tenant the caller's tenant ("": not authenticated).
	Conversation, Tenant string
	// Calls are the exchange's upstream calls, in order.
	Calls []Call
	// End is when the exchange ended.
	End time.Time
}

// End ends e's span at x.End with x's attributes, and its child spans:
// load and curate (the plan), one per upstream call (a round per call
// with its tools' runs, when history tools were offered), and commit,
// for those that happened. The spans are made off the caller's
// goroutine, soon after (Tracer.Flush waits for them); x and what it
// points to must not change after. It does nothing for a nil Exchange.
func (e *Exchange) End(x Ended) {
	if e == nil {
		return
	}
	e.ended = x
	e.t.q.put(e)
}

// finish makes e's spans, building their attributes in attrs (returned
// for the next exchange's).
func (e *Exchange) finish(attrs []attribute.KeyValue) []attribute.KeyValue {
	x := e.ended
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
		return attrs
	}
	planned := r.Budget > 0 || len(r.Included) > 0 || r.Tokens.EstimatedInput > 0
	conversation, threadName, subagent := history.SplitThread(x.Conversation)
	if !subagent {
		conversation = x.Conversation
	}
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
	if conversation != "" {
		attrs = append(attrs, attribute.String(AttrConversationID, conversation))
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
	switch {
	case r.Thread == ThreadSide:
		attrs = append(attrs, attribute.String(AttrThread, ThreadSide), attribute.String(AttrThreadReason, r.ThreadReason))
	case subagent:
		attrs = append(attrs, attribute.String(AttrThread, ThreadSubagent), attribute.String(AttrThreadName, threadName))
	case x.Conversation != "":
		attrs = append(attrs, attribute.String(AttrThread, ThreadMain))
	}
	if r.Tokens.ReportedInput > 0 || r.Tokens.Output > 0 {
		attrs = append(attrs,
			attribute.Int(AttrInputTokens, r.Tokens.ReportedInput),
			attribute.Int(AttrOutputTokens, r.Tokens.Output),
			attribute.Int(AttrCacheReadTokens, r.Tokens.Cached))
	}
	if planned { // curation's own figures are the curate span's
		attrs = append(attrs,
			attribute.Bool(AttrCompacted, r.Summary != nil),
			attribute.Int(AttrEstimatedInput, r.Tokens.EstimatedInput),
			attribute.Int(AttrNewMessages, r.NewMessages))
		if r.Summary != nil {
			attrs = append(attrs, attribute.Int64(AttrSummaryThrough, int64(r.Summary.Through)),
				attribute.Int(AttrSummaryTokens, r.Summary.Tokens))
		}
	}
	if len(r.Committed) > 0 {
		attrs = append(attrs, attribute.Int(AttrCommittedMessages, messages(r.Committed)))
	}
	if e.Input != "" {
		attrs = append(attrs, attribute.String(AttrInputMessages, e.Input))
	}
	if e.Output != "" {
		attrs = append(attrs, attribute.String(AttrOutputMessages, e.Output))
	}
	if r.Error != "" {
		attrs = append(attrs, attribute.String(AttrErrorType, r.Error))
		e.span.SetStatus(codes.Error, r.Error)
	} else if r.HTTPStatus >= 500 || r.Status != "answered" {
		e.span.SetStatus(codes.Error, r.Status)
	}
	e.span.SetAttributes(attrs...)

	tracer := e.t.tracer
	child := func(ctx context.Context, name string, kind trace.SpanStartOption, start, end time.Time, attrs []attribute.KeyValue) context.Context {
		if start.IsZero() || end.IsZero() {
			return nil
		}
		ctx, s := tracer.Start(ctx, name, kind, trace.WithTimestamp(start))
		s.SetAttributes(attrs...)
		s.End(trace.WithTimestamp(end))
		return ctx
	}
	if planned {
		loaded := e.Loaded
		if loaded.IsZero() {
			loaded = e.PlanEnd
		}
		attrs = append(attrs[:0], attribute.Bool(AttrCompacted, r.Summary != nil))
		child(e.ctx, SpanLoad, kindInternal, e.PlanStart, loaded, attrs)
		if !e.Loaded.IsZero() {
			attrs = append(attrs[:0],
				attribute.Int(AttrBudget, r.Budget),
				attribute.Float64(AttrCalibration, r.Calibration),
				attribute.Int(AttrCalibratedInput, r.Tokens.CalibratedInput),
				attribute.Int(AttrKeptTurns, e.KeptTurns),
				attribute.Int(AttrIncludedMessages, messages(r.Included)),
				attribute.Int(AttrDroppedTurns, droppedTurns(r.Dropped)),
				attribute.Int(AttrCutResults, len(r.Cut)),
				attribute.Int(AttrRepairedCalls, r.RepairedCalls),
				attribute.Bool(AttrCompacted, r.Summary != nil))
			child(e.ctx, SpanCurate, kindInternal, e.Loaded, e.PlanEnd, attrs)
		}
	}
	for i, c := range x.Calls {
		m := c.Model
		if m == "" {
			m = model
		}
		parent := e.ctx
		if c.Round {
			end := c.Done
			for _, run := range c.Tools {
				if run.End.After(end) {
					end = run.End
				}
			}
			attrs = append(attrs[:0], attribute.Int(AttrToolRound, i+1), attribute.Int(AttrToolRuns, len(c.Tools)))
			if parent = child(e.ctx, SpanToolRound, kindInternal, c.Sent, end, attrs); parent == nil {
				continue
			}
		}
		attrs = append(attrs[:0], attribute.String(AttrProviderName, provider(r.Upstream)))
		if m != "" {
			attrs = append(attrs, attribute.String(AttrRequestModel, m))
		}
		if !c.FirstByte.IsZero() {
			attrs = append(attrs, attribute.Int64(AttrFirstByteMS, c.FirstByte.Sub(c.Sent).Milliseconds()))
		}
		child(parent, SpanUpstream, kindClient, c.Sent, c.Done, attrs)
		for _, run := range c.Tools {
			attrs = e.toolSpans(parent, run, conversation, x.Tenant, attrs[:0])
		}
	}
	attrs = append(attrs[:0],
		attribute.Int(AttrCommittedMessages, messages(r.Committed)),
		attribute.Bool(AttrCommitFailed, r.Status == "commit_failed"))
	child(e.ctx, SpanCommit, kindInternal, e.CommitStart, e.CommitEnd, attrs)
	e.span.End(trace.WithTimestamp(x.End))
	return attrs
}

// toolSpans makes run's execute_tool span under parent (a round's), and
// for a search its search_memory span under that.
func (e *Exchange) toolSpans(parent context.Context, run ToolRun, conversation, tenant string, attrs []attribute.KeyValue) []attribute.KeyValue {
	if run.Start.IsZero() || run.End.IsZero() {
		return attrs
	}
	ctx, s := e.t.tracer.Start(parent, OperationExecuteTool+" "+run.Name, kindInternal, trace.WithTimestamp(run.Start))
	attrs = append(attrs,
		attribute.String(AttrOperationName, OperationExecuteTool),
		attribute.String(AttrToolName, run.Name),
		attribute.String(AttrToolType, "datastore"),
		attribute.String(AttrToolOutcome, run.Outcome))
	if run.CallID != "" {
		attrs = append(attrs, attribute.String(AttrToolCallID, run.CallID))
	}
	if run.Failed {
		attrs = append(attrs, attribute.String(AttrErrorType, run.Outcome))
		s.SetStatus(codes.Error, run.Outcome)
	}
	s.SetAttributes(attrs...)
	if run.Name == "search_conversations" {
		_, ss := e.t.tracer.Start(ctx, OperationSearchMemory+" "+run.Name, kindClient, trace.WithTimestamp(run.Start))
		attrs = searchAttrs(append(attrs[:0], attribute.Int(AttrMemorySearchResults, run.Found),
			attribute.String(AttrMemoryKind, run.Name)), tenant, conversation)
		if run.Failed {
			attrs = append(attrs, attribute.String(AttrErrorType, run.Outcome))
			ss.SetStatus(codes.Error, run.Outcome)
		}
		ss.SetAttributes(attrs...)
		ss.End(trace.WithTimestamp(run.End))
	}
	s.End(trace.WithTimestamp(run.End))
	return attrs
}

// searchAttrs appends a search_memory span's attributes besides its
// results: the conventions' required ones and the searcher's
// conversation (a search reads every conversation of the tenant).
func searchAttrs(attrs []attribute.KeyValue, tenant, conversation string) []attribute.KeyValue {
	attrs = append(attrs,
		attribute.String(AttrOperationName, OperationSearchMemory),
		attribute.String(AttrProviderName, MemoryProvider))
	if tenant != "" {
		attrs = append(attrs, attribute.String(AttrMemoryNamespace, tenant))
	}
	if conversation != "" {
		attrs = append(attrs, attribute.String(AttrConversationID, conversation))
	}
	return attrs
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
