package proxy

import (
	"context"
	"errors"
	"strconv"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/pipeline"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/tokens"
	"github.com/recallproxy/recall/wire"
)

var pathCountTokens = []byte("/v1/messages/count_tokens")

// countTokens serves POST /v1/messages/count_tokens: with a conversation,
// what the request would send (instructions, summary, the curated history
// and its messages merged with it), counted as the budget counts it;
// without one, the request alone. It reads, writes nothing and calls no
// upstream. Claude models have no public tokenizer: the count is Recall's
// estimate, the one its budget uses.
func (s *Server) countTokens(rc *fasthttp.RequestCtx, conv string) {
	p := protocols[wire.Messages]
	x := &exchange{request: request{s: s, render: p.render, route: "count_tokens"}, rec: facts{Record: pipeline.Record{Start: s.cfg.Now()}}}
	body, ok := s.admit(rc, x)
	if !ok {
		return
	}
	c := x.c
	conv, err := x.conversation(rc, conv)
	if err != nil {
		x.fail(rc, err)
		return
	}
	x.key.Conversation = conv
	// count_tokens takes no max_tokens; the parser of a Messages request
	// requires one.
	if gjson.ValidBytes(body) && !gjson.GetBytes(body, "max_tokens").Exists() {
		if b, err := sjson.SetBytes(body, "max_tokens", 1); err == nil {
			body = b
		}
	}
	req, err := p.ingress.ParseRequest(body)
	if err != nil {
		x.fail(rc, err)
		return
	}
	instructions, in, err := pipeline.TurnOf(wire.Messages, req)
	if err != nil {
		x.fail(rc, err)
		return
	}
	mode, err := x.historyMode(rc)
	if err != nil {
		x.fail(rc, err)
		return
	}
	// alone counts the request as it is, without history.
	alone := func() int {
		n := 0
		enc := tokens.For(req.Model, string(c.plan.Encoding))
		for _, m := range append(instructions, in...) {
			n += plan.Count(s.counter, enc, m.Protocol, m.Raw)
		}
		return n + s.counter.Tools(enc, req.ToolsRaw)
	}
	total := 0
	if conv == "" || mode == history.Off {
		total = alone()
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout())
		defer cancel()
		ratio, window := x.learned(req.Model)
		pl, err := plan.Make(ctx, plan.Input{Store: s.cfg.Store, Key: history.Key{Tenant: c.Namespace, Conversation: conv},
			Policy: c.policy(mode), Model: req.Model, Instructions: instructions, Tools: req.ToolsRaw, New: in,
			Counter: s.counter, Fixed: s.fixed, Now: x.rec.Start, Ratio: ratio, Window: window})
		var oe *history.OrphanResultError
		switch {
		case errors.Is(err, plan.ErrStore):
			if errors.Is(err, history.ErrUnavailable) {
				x.fail(rc, apierr.StoreUnavailable)
				return
			}
			x.fail(rc, apierr.StoreReadFailed)
			return
		case errors.As(err, &oe):
			x.fail(rc, apierr.OrphanToolResult(len(instructions)+oe.Index))
			return
		case errors.Is(err, history.ErrContextLength):
			// Counting is not sending: a request over the model's window
			// is counted as it is, as Anthropic's count_tokens counts it.
			total = alone()
		case err != nil:
			x.fail(rc, err)
			return
		default:
			total = pl.Report.Tokens
		}
		rc.Response.Header.Set("X-Recall-Conversation", conv)
	}
	rc.SetContentType("application/json")
	rc.SetBodyString(`{"input_tokens":` + strconv.Itoa(total) + `}`)
	x.done(fasthttp.StatusOK, nil)
}
