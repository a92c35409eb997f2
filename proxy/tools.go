package proxy

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/tools"
	"github.com/recallproxy/recall/wire"
)

// History tools (DESIGN.md section 14): Recall offers the tenant's
// history tools to the model and runs them itself. Every round goes
// upstream unstreamed: a round that calls only Recall's tools is run and
// followed by the next, up to history.tool_rounds upstream calls; the
// client gets the final answer only, whole or as a stream rendered from
// it once the turn is committed. The stored turn keeps Recall's calls and
// results, flagged history.Internal (or history.Mixed for an answer that
// also called the client's tools), so every later request is valid and
// merge skips them.

// roundsLimitText is the final answer when the last allowed round still
// called only Recall's tools.
const roundsLimitText = "I could not finish looking through the conversation history within the allowed number of tool rounds."

// offeredTools returns the history tools offered on req: the tenant's,
// less those a client tool of the same name shadows. None when the
// exchange is not recorded (the tools act on the conversation).
func (x *exchange) offeredTools(req *wire.Request) []wire.Tool {
	names := x.c.cfg.History.Tools
	if len(names) == 0 || !x.record {
		return nil
	}
	return tools.Definitions(names, req.Tools)
}

// toolExchange is seamExchange's upstream part for a request with history
// tools offered.
func (s *Server) toolExchange(ctx context.Context, rc *fasthttp.RequestCtx, x *exchange, p, up *protocol,
	req *wire.Request, instr, msgs [][]byte, lastHistory int, offered []wire.Tool) {
	c := x.c
	rounds := c.cfg.History.ToolRounds
	if rounds <= 0 {
		rounds = tools.DefaultRounds
	}
	runner := tools.Runner{Store: s.cfg.Store, Key: x.key}
	upCodec := wire.For(up.proto)
	var internal []wire.Message // Recall's rounds: its calls, then their results
	var post *wire.Message      // the results of Recall's calls in a mixed answer
	mine := map[string]bool{}   // ids of Recall's calls
	var usage wire.Usage
	var a wire.Answer
	round := 0
	limited := false
	for {
		round++
		var err error
		a, err = s.toolRound(ctx, rc, x, p, up, req, instr, msgs, lastHistory, offered)
		if err != nil {
			s.metrics.toolRounds(c.cfg.ID, round)
			x.fail(rc, err)
			return
		}
		usage.InputTokens += a.Usage.InputTokens
		usage.OutputTokens += a.Usage.OutputTokens
		usage.CachedTokens += a.Usage.CachedTokens
		results := wire.Message{Role: wire.RoleTool}
		theirs := 0
		for _, part := range a.Message.Parts {
			if part.Kind != wire.ToolCall {
				continue
			}
			if !tools.Offered(offered, part.Name) {
				theirs++
				continue
			}
			mine[part.CallID] = true
			r := runner.Run(ctx, part.Name, part.Arguments)
			s.metrics.toolCall(c.cfg.ID, part.Name, r.Outcome)
			x.endEpisode = x.endEpisode || r.End
			results.Parts = append(results.Parts, wire.Part{Kind: wire.ToolResult, CallID: part.CallID, Text: r.Text, IsError: r.IsError})
		}
		if len(results.Parts) == 0 {
			break // the final answer
		}
		if theirs > 0 {
			post = &results // the client's calls go to the client
			break
		}
		internal = append(internal, a.Message, results)
		if round == rounds {
			limited = true
			break
		}
		enc, err := upCodec.Encode(nil, []wire.Message{a.Message, results})
		if err != nil {
			s.metrics.toolRounds(c.cfg.ID, round)
			x.fail(rc, fmt.Errorf("%w: %w", apierr.Internal, err))
			return
		}
		msgs = append(msgs[:len(msgs):len(msgs)], enc...)
	}
	s.metrics.toolRounds(c.cfg.ID, round)
	a.Usage = usage
	if err := x.stamp(&a, req, up.proto, p.proto); err != nil {
		x.fail(rc, err)
		return
	}
	codec := wire.For(a.Protocol) // the stored form's protocol
	if limited {
		a.Message = wire.Message{Role: wire.RoleAssistant, Parts: []wire.Part{{Kind: wire.Text, Text: roundsLimitText}}}
		a.Stop = wire.StopEnd
		stored, err := codec.Encode(nil, []wire.Message{a.Message})
		if err != nil {
			x.fail(rc, fmt.Errorf("%w: %w", apierr.Internal, err))
			return
		}
		a.Stored = stored
	}

	// The stored turn: Recall's rounds, the answer, the results of
	// Recall's calls in it; and the answer as the client gets it.
	var turn []history.Message
	add := func(raw []byte, flags history.Flags, hashOf []byte) {
		role := codec.Role(raw)
		if role == "" {
			role = wire.RoleAssistant
		}
		turn = append(turn, history.Message{Role: role, Protocol: a.Protocol, Raw: raw, Hash: codec.Hash(hashOf),
			Flags: flags, Tokens: plan.Count(s.counter, x.enc, a.Protocol, raw)})
	}
	encodeInternal := func(ms []wire.Message) error {
		raws, err := codec.Encode(nil, ms)
		for _, raw := range raws {
			add(raw, history.Internal, raw)
		}
		return err
	}
	if err := encodeInternal(internal); err != nil {
		x.fail(rc, fmt.Errorf("%w: %w", apierr.Internal, err))
		return
	}
	client := a
	client.Stored = nil
	client.Message.Parts = slices.DeleteFunc(slices.Clone(a.Message.Parts), func(p wire.Part) bool {
		return p.Kind == wire.ToolCall && mine[p.CallID]
	})
	notMine := func(id string) bool { return !mine[id] }
	var ids []string
	for _, raw := range a.Stored {
		ids = codec.Calls(ids[:0], raw)
		n := 0
		for _, id := range ids {
			if mine[id] {
				n++
			}
		}
		switch {
		case n == 0:
			add(raw, 0, raw)
			client.Stored = append(client.Stored, raw)
		case n == len(ids) && !hasContent(codec, raw):
			add(raw, history.Internal, raw)
		default:
			seen, _ := codec.KeepCalls(raw, notMine)
			add(raw, history.Mixed, seen)
			client.Stored = append(client.Stored, seen)
		}
	}
	if post != nil {
		if err := encodeInternal([]wire.Message{*post}); err != nil {
			x.fail(rc, fmt.Errorf("%w: %w", apierr.Internal, err))
			return
		}
	}
	if clientGone(rc.Conn()) {
		x.done(499, errClientLeft)
		return
	}
	id := a.ID
	if a.ResponseID != "" {
		id = a.ResponseID
	}
	if err := x.record1(recorded{answer: turn, model: a.Model, id: id, prompt: usage.InputTokens,
		completion: usage.OutputTokens, cached: usage.CachedTokens, upstream: x.upstream}); err != nil {
		x.fail(rc, err)
		return
	}
	x.committed = true
	rc.Response.Header.Del("Content-Encoding")
	rc.Response.Header.Del("Content-Length")
	if req.Stream {
		rc.SetContentType("text/event-stream")
		rc.Response.SetBodyRaw(renderStream(p.ingress.NewRenderer(req), &client))
	} else {
		rc.SetContentType("application/json")
		rc.Response.SetBodyRaw(p.ingress.AppendAnswer(nil, req, &client))
	}
	x.done(fasthttp.StatusOK, nil)
}

// hasContent reports whether a stored message carries anything besides
// tool calls (text the client must see).
func hasContent(codec wire.Codec, raw []byte) bool {
	m, err := codec.Decode(raw)
	if err != nil {
		return true
	}
	return slices.ContainsFunc(m.Parts, func(p wire.Part) bool { return p.Kind != wire.ToolCall })
}

// renderStream renders a whole answer as the ingress protocol's stream.
func renderStream(ren wire.Renderer, a *wire.Answer) []byte {
	var out []byte
	calls := 0
	for _, part := range a.Message.Parts {
		switch part.Kind {
		case wire.Text:
			out = ren.Delta(out, wire.Delta{Kind: wire.TextDelta, Text: part.Text})
		case wire.Refusal:
			out = ren.Delta(out, wire.Delta{Kind: wire.RefusalDelta, Text: part.Text})
		case wire.ToolCall:
			out = ren.Delta(out, wire.Delta{Kind: wire.ToolCallStart, Index: calls, CallID: part.CallID, Name: part.Name})
			out = ren.Delta(out, wire.Delta{Kind: wire.ArgumentsDelta, Index: calls, Text: part.Arguments})
			calls++
		}
	}
	out = ren.Delta(out, wire.Delta{Kind: wire.Finish, Text: a.Stop, Usage: a.Usage})
	return ren.End(out, a)
}

// toolRound makes one unstreamed upstream call of a tool exchange and
// reads its answer. An upstream's error is answered in the client's
// protocol's shape.
func (s *Server) toolRound(ctx context.Context, rc *fasthttp.RequestCtx, x *exchange, p, up *protocol,
	req *wire.Request, instr, msgs [][]byte, lastHistory int, offered []wire.Tool) (wire.Answer, error) {
	c := x.c
	out, err := up.upstream.AppendBody(nil, req, instr, msgs)
	if err != nil {
		return wire.Answer{}, err
	}
	if up.mark != nil && lastHistory >= 0 {
		out = up.mark(out, lastHistory)
	}
	if out, err = up.upstream.WithTools(out, offered, false); err != nil {
		return wire.Answer{}, fmt.Errorf("%w: %w", apierr.Internal, err)
	}
	upReq := fasthttp.AcquireRequest()
	upstreamRequest(upReq, rc, c, []byte("/v1"+up.upstream.Path()), false)
	if up.credential != nil {
		up.credential(upReq, c)
	}
	if up.proto != p.proto {
		upReq.URI().SetQueryStringBytes(nil)
	}
	upReq.SetBodyRaw(out)
	resp := fasthttp.AcquireResponse()
	resp.Header.SetNoDefaultContentType(true)
	if x.sent.IsZero() {
		x.sent = s.cfg.Now()
	}
	deadline, _ := ctx.Deadline()
	err = s.client.DoDeadline(upReq, resp, deadline)
	fasthttp.ReleaseRequest(upReq)
	if err != nil {
		fasthttp.ReleaseResponse(resp)
		return wire.Answer{}, upstreamErr(err)
	}
	x.answered(resp)
	status := resp.StatusCode()
	enc := string(resp.Header.ContentEncoding())
	raw, err := readLimited(responseBody(resp), s.cfg.MaxResponseBytes)
	closeResponse(resp)
	x.upstreamDone = s.cfg.Now()
	switch {
	case errors.Is(err, errTooLarge):
		return wire.Answer{}, fmt.Errorf("%w: read upstream answer: %w", apierr.UpstreamTooLarge, err)
	case err != nil:
		return wire.Answer{}, upstreamErr(fmt.Errorf("proxy: read upstream answer: %w", err))
	case status < 200 || status >= 300:
		return wire.Answer{}, upstreamStatus(status, raw)
	}
	decoded, err := decode(enc, raw, s.cfg.MaxResponseBytes)
	if err == nil && !gjson.ValidBytes(decoded) {
		err = errors.New("proxy: upstream answer is not JSON")
	}
	var a wire.Answer
	if err == nil {
		a, err = up.upstream.ParseAnswer(decoded)
	}
	if errors.Is(err, errTooLarge) {
		return wire.Answer{}, fmt.Errorf("%w: decode upstream answer: %w", apierr.UpstreamTooLarge, err)
	}
	if err != nil {
		return wire.Answer{}, fmt.Errorf("%w: %w", apierr.UpstreamBadResponse, err)
	}
	return a, nil
}
