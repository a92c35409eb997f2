package tracing

import (
	"encoding/hex"
	"time"

	"github.com/recallproxy/recall/history"
)

// Exchange is the span of one exchange (one client request answered by
// the proxy), begun when the exchange begins so that its upstream
// requests can name it, and ended with the exchange's record. One party
// holds an Exchange at a time, as the proxy holds its exchange: its
// methods are not safe for concurrent use, and it must not be used after
// End.
type Exchange struct {
	t            *Tracer
	trace        [16]byte
	id, parent   [8]byte // parent zero: a root span
	parentRemote bool
	sampled      bool
	state        string // the client's tracestate, carried
	start        time.Time
	traceparent  [55]byte
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
// (a new trace otherwise), sampled as the Tracer's sampler decides. It
// returns nil for a nil Tracer.
func (t *Tracer) Begin(traceparent, tracestate []byte, start time.Time) *Exchange {
	if t == nil {
		return nil
	}
	e := &Exchange{t: t, start: start, id: newSpanID()}
	parentSampled := false
	if p, ok := parseTraceparent(traceparent); ok {
		e.trace, e.parent, e.parentRemote, parentSampled = p.trace, p.span, true, p.sampled
		if validTracestate(tracestate) {
			e.state = string(tracestate)
		}
	} else {
		e.trace = newTraceID()
	}
	e.sampled = t.sample.sampled(e.parentRemote, parentSampled, &e.trace)
	b := append(e.traceparent[:0], "00-"...)
	b = hex.AppendEncode(b, e.trace[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, e.id[:])
	if e.sampled {
		b = append(b, "-01"...)
	} else {
		b = append(b, "-00"...)
	}
	return e
}

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
// for those that happened. The spans are written and sent off the
// caller's goroutine, soon after (Tracer.Flush waits for them); x and
// what it points to must not change after. It does nothing for a nil
// Exchange, and for an unsampled one (its context went upstream, that is
// all).
func (e *Exchange) End(x Ended) {
	if e == nil || !e.sampled {
		return
	}
	e.ended = x
	e.t.q.put(e)
}

// finish writes e's spans with enc.
func (e *Exchange) finish(enc *encoder) {
	x := e.ended
	r := x.Record
	model := r.Model
	if model == "" {
		model = e.RequestModel
	}
	planned := r.Budget > 0 || len(r.Included) > 0 || r.Tokens.EstimatedInput > 0
	conversation, threadName, subagent := history.SplitThread(x.Conversation)
	if !subagent {
		conversation = x.Conversation
	}
	e.exchangeSpan(enc, model, conversation, threadName, subagent, planned)
	if planned {
		e.planSpans(enc)
	}
	for i, c := range x.Calls {
		e.callSpans(enc, i, c, model, conversation)
	}
	if e.child(enc, e.id, SpanCommit, kindInternal, e.CommitStart, e.CommitEnd) {
		enc.int(AttrCommittedMessages, messages(r.Committed))
		enc.bool(AttrCommitFailed, r.Status == "commit_failed")
		enc.end()
	}
}

// exchangeSpan writes e's own span: the exchange, from its start to its
// end, with the record's attributes. conversation is the conversation's
// id, threadName a subagent thread's name; planned says the plan's
// figures are known.
func (e *Exchange) exchangeSpan(enc *encoder, model, conversation, threadName string, subagent, planned bool) {
	x := e.ended
	r := x.Record
	h := spanHead{trace: &e.trace, id: e.id, parent: e.parent, parentRemote: e.parentRemote, state: e.state,
		name: OperationChat, kind: kindClient, start: e.start, end: x.End}
	if model != "" {
		h.name, h.name2 = OperationChat+" ", model
	}
	if r.Error != "" {
		h.status, h.statusIsError = r.Error, true
	} else if r.HTTPStatus >= 500 || r.Status != "answered" {
		h.status, h.statusIsError = r.Status, true
	}
	enc.begin(&h)
	enc.str(AttrOperationName, OperationChat)
	enc.str(AttrProviderName, provider(r.Upstream))
	enc.int(AttrHTTPStatus, r.HTTPStatus)
	enc.str(AttrExchangeKind, r.Kind)
	enc.str(AttrExchangeStatus, r.Status)
	enc.bool(AttrStream, r.Stream)
	enc.optStr(AttrRequestModel, model)
	enc.optStr(AttrResponseModel, e.ResponseModel)
	if e.FinishReason != "" {
		enc.strs1(AttrFinishReasons, e.FinishReason)
	}
	enc.optStr(AttrConversationID, conversation)
	enc.optStr(AttrTenant, x.Tenant)
	enc.optStr(AttrExchangeID, r.ID)
	enc.optStr(AttrIngress, r.Ingress)
	switch {
	case r.Thread == ThreadSide:
		enc.str(AttrThread, ThreadSide)
		enc.str(AttrThreadReason, r.ThreadReason)
	case subagent:
		enc.str(AttrThread, ThreadSubagent)
		enc.str(AttrThreadName, threadName)
	case x.Conversation != "":
		enc.str(AttrThread, ThreadMain)
	}
	e.usageAttrs(enc, planned)
	enc.optStr(AttrErrorType, r.Error)
	enc.end()
}

// usageAttrs writes the exchange span's token, curation and message
// attributes.
func (e *Exchange) usageAttrs(enc *encoder, planned bool) {
	r := e.ended.Record
	if r.Tokens.ReportedInput > 0 || r.Tokens.Output > 0 {
		enc.int(AttrInputTokens, r.Tokens.ReportedInput)
		enc.int(AttrOutputTokens, r.Tokens.Output)
		enc.int(AttrCacheReadTokens, r.Tokens.Cached)
		if r.Upstream == "messages" || r.Tokens.CacheCreation > 0 { // the only protocol that reports it
			enc.int(AttrCacheCreationTokens, r.Tokens.CacheCreation)
		}
	}
	if planned { // curation's own figures are the curate span's
		enc.bool(AttrCompacted, r.Summary != nil)
		enc.int(AttrEstimatedInput, r.Tokens.EstimatedInput)
		enc.int(AttrNewMessages, r.NewMessages)
		if r.Summary != nil {
			enc.int64(AttrSummaryThrough, int64(r.Summary.Through))
			enc.int(AttrSummaryTokens, r.Summary.Tokens)
		}
	}
	if len(r.Committed) > 0 {
		enc.int(AttrCommittedMessages, messages(r.Committed))
	}
	enc.optStr(AttrInputMessages, e.Input)
	enc.optStr(AttrOutputMessages, e.Output)
}

// child begins a child span of parent's from start to end, with a new
// id, or reports false when either time is not known.
func (e *Exchange) child(enc *encoder, parent [8]byte, name string, kind int, start, end time.Time) bool {
	_, ok := e.childID(enc, parent, name, kind, start, end)
	return ok
}

// childID is child that returns the new span's id too.
func (e *Exchange) childID(enc *encoder, parent [8]byte, name string, kind int, start, end time.Time) (id [8]byte, ok bool) {
	if start.IsZero() || end.IsZero() {
		return id, false
	}
	id = newSpanID()
	enc.begin(&spanHead{trace: &e.trace, id: id, parent: parent, state: e.state, name: name, kind: kind, start: start, end: end})
	return id, true
}

// planSpans writes the plan's spans: load (from the plan's start until
// the history was loaded, or the plan's end) and curate (from then to
// the plan's end).
func (e *Exchange) planSpans(enc *encoder) {
	r := e.ended.Record
	loaded := e.Loaded
	if loaded.IsZero() {
		loaded = e.PlanEnd
	}
	if e.child(enc, e.id, SpanLoad, kindInternal, e.PlanStart, loaded) {
		enc.bool(AttrCompacted, r.Summary != nil)
		enc.end()
	}
	if e.Loaded.IsZero() || !e.child(enc, e.id, SpanCurate, kindInternal, e.Loaded, e.PlanEnd) {
		return
	}
	enc.int(AttrBudget, r.Budget)
	enc.float(AttrCalibration, r.Calibration)
	enc.int(AttrCalibratedInput, r.Tokens.CalibratedInput)
	enc.int(AttrKeptTurns, e.KeptTurns)
	enc.int(AttrIncludedMessages, messages(r.Included))
	enc.int(AttrDroppedTurns, droppedTurns(r.Dropped))
	enc.int(AttrCutResults, len(r.Cut))
	enc.int(AttrRepairedCalls, r.RepairedCalls)
	enc.bool(AttrCompacted, r.Summary != nil)
	enc.end()
}

// callSpans writes the spans of the exchange's i-th upstream call c: a
// tool round's span when c is one (left out, with all under it, when
// its times are not known), the upstream call's under it, and the
// round's tool runs'. model is the exchange's.
func (e *Exchange) callSpans(enc *encoder, i int, c Call, model, conversation string) {
	m := c.Model
	if m == "" {
		m = model
	}
	parent := e.id
	if c.Round {
		end := c.Done
		for _, run := range c.Tools {
			if run.End.After(end) {
				end = run.End
			}
		}
		round, ok := e.childID(enc, e.id, SpanToolRound, kindInternal, c.Sent, end)
		if !ok {
			return
		}
		enc.int(AttrToolRound, i+1)
		enc.int(AttrToolRuns, len(c.Tools))
		enc.end()
		parent = round
	}
	if e.child(enc, parent, SpanUpstream, kindClient, c.Sent, c.Done) {
		enc.str(AttrProviderName, provider(e.ended.Record.Upstream))
		enc.optStr(AttrRequestModel, m)
		if !c.FirstByte.IsZero() {
			enc.int64(AttrFirstByteMS, c.FirstByte.Sub(c.Sent).Milliseconds())
		}
		enc.end()
	}
	for _, run := range c.Tools {
		e.toolSpans(enc, parent, run, conversation, e.ended.Tenant)
	}
}

// toolSpans writes run's execute_tool span under parent (a round's), and
// for a search its search_memory span under that.
func (e *Exchange) toolSpans(enc *encoder, parent [8]byte, run ToolRun, conversation, tenant string) {
	if run.Start.IsZero() || run.End.IsZero() {
		return
	}
	h := spanHead{trace: &e.trace, id: newSpanID(), parent: parent, state: e.state,
		name: OperationExecuteTool + " ", name2: run.Name, kind: kindInternal, start: run.Start, end: run.End}
	if run.Failed {
		h.status, h.statusIsError = run.Outcome, true
	}
	enc.begin(&h)
	enc.str(AttrOperationName, OperationExecuteTool)
	enc.str(AttrToolName, run.Name)
	enc.str(AttrToolType, "datastore")
	enc.str(AttrToolOutcome, run.Outcome)
	enc.optStr(AttrToolCallID, run.CallID)
	if run.Failed {
		enc.str(AttrErrorType, run.Outcome)
	}
	enc.end()
	if run.Name == "search_conversations" {
		h.parent, h.id = h.id, newSpanID()
		h.name, h.kind = OperationSearchMemory+" ", kindClient
		enc.begin(&h)
		enc.int(AttrMemorySearchResults, run.Found)
		enc.str(AttrMemoryKind, run.Name)
		searchAttrs(enc, tenant, conversation)
		if run.Failed {
			enc.str(AttrErrorType, run.Outcome)
		}
		enc.end()
	}
}

// searchAttrs writes a search_memory span's attributes besides its
// results: the conventions' required ones and the searcher's
// conversation (a search reads every conversation of the tenant).
func searchAttrs(enc *encoder, tenant, conversation string) {
	enc.str(AttrOperationName, OperationSearchMemory)
	enc.str(AttrProviderName, MemoryProvider)
	enc.optStr(AttrMemoryNamespace, tenant)
	enc.optStr(AttrConversationID, conversation)
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
