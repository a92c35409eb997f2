package proxy

import (
	"time"

	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/tracing"
	"github.com/recallproxy/recall/wire"
)

// The W3C trace context headers (as fasthttp normalizes them).
const (
	headerTraceparent = "Traceparent"
	headerTracestate  = "Tracestate"
)

// beginSpan starts x's span (Config.Tracer is set) under the client's
// traceparent, and makes the request's traceparent name it: every
// upstream request of the exchange forwards the client's headers, and
// so names the exchange's span as its parent. The body's model names
// the span of an exchange that plans nothing.
func (x *exchange) beginSpan(rc *fasthttp.RequestCtx, body []byte) {
	h := &rc.Request.Header
	x.rec.span = x.s.cfg.Tracer.Begin(h.Peek(headerTraceparent), h.Peek(headerTracestate), x.rec.Start)
	h.SetCanonical([]byte(headerTraceparent), x.rec.span.Traceparent())
	x.rec.span.RequestModel = gjson.GetBytes(body, "model").String()
}

// endSpan ends x's span with its record r, at end.
func (x *exchange) endSpan(r *history.ExchangeRecord, tenant string, end time.Time) {
	var calls []tracing.Call
	switch {
	case len(x.rec.rounds) > 0:
		calls = make([]tracing.Call, len(x.rec.rounds))
		for i, rd := range x.rec.rounds {
			calls[i] = tracing.Call{Sent: rd.Sent, FirstByte: rd.FirstByte, Done: rd.Done, Model: rd.Model, Tools: rd.Runs, Round: true}
		}
	case !x.rec.Sent.IsZero():
		calls = []tracing.Call{{Sent: x.rec.Sent, FirstByte: x.rec.FirstByte, Done: x.rec.UpstreamDone}}
	}
	x.rec.span.End(tracing.Ended{Record: r, Conversation: x.key.Conversation, Tenant: tenant, Calls: calls, End: end})
}

// spanContent puts on x's span, for an operator who opted in
// (tracing.ContentVariable), the messages x sent upstream and its
// answer as the GenAI conventions write them. It runs at the commit,
// while the request's bytes are still the exchange's.
func (x *exchange) spanContent(answer []history.Message, stop string) {
	if x.dec != nil {
		in := make([]wire.Message, 0, len(x.dec.Messages))
		for _, m := range x.dec.Messages {
			if d, err := wire.For(m.Protocol).Decode(m.Raw); err == nil {
				in = append(in, d)
			}
		}
		x.rec.span.Input = tracing.Messages(in, "")
	}
	out := make([]wire.Message, 0, len(answer))
	for _, m := range answer {
		if d, err := wire.For(m.Protocol).Decode(m.Raw); err == nil {
			out = append(out, d)
		}
	}
	x.rec.span.Output = tracing.Messages(out, stop)
}
