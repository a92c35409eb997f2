package proxy

import (
	"time"

	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/tracing"
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
	x.span = x.s.cfg.Tracer.Begin(h.Peek(headerTraceparent), h.Peek(headerTracestate), x.start)
	h.SetCanonical([]byte(headerTraceparent), x.span.Traceparent())
	x.span.RequestModel = gjson.GetBytes(body, "model").String()
}

// endSpan ends x's span with its record r, at end.
func (x *exchange) endSpan(r *history.ExchangeRecord, tenant string, end time.Time) {
	var calls []tracing.Call
	switch {
	case len(x.rounds) > 0:
		calls = make([]tracing.Call, len(x.rounds))
		for i, rd := range x.rounds {
			calls[i] = tracing.Call{Sent: rd.sent, FirstByte: rd.firstByte, Done: rd.done, Model: rd.model, Tools: rd.runs, Round: true}
		}
	case !x.sent.IsZero():
		calls = []tracing.Call{{Sent: x.sent, FirstByte: x.firstByte, Done: x.upstreamDone}}
	}
	x.span.End(tracing.Ended{Record: r, Conversation: x.key.Conversation, Tenant: tenant, Calls: calls, End: end})
}
