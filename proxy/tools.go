package proxy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/pipeline"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/tools"
	"github.com/recallproxy/recall/tracing"
	"github.com/recallproxy/recall/uplink"
	"github.com/recallproxy/recall/wire"
)

// History tools (DESIGN.md section 14): Recall offers the tenant's
// history tools to the model and runs them itself. A round that calls
// only Recall's tools is run and followed by the next, up to
// history.tool_rounds upstream calls. Unstreamed, every round goes
// upstream unstreamed and the client gets the final answer only.
// Streamed (tools_stream.go), every round is streamed upstream and
// rendered into the one stream the client reads: text is relayed as it
// comes, Recall's tool calls never are, and the closing events are the
// last round's, written once the turn is committed. The stored turn keeps
// Recall's calls and results, flagged history.Internal (or history.Mixed
// for an answer that also called the client's tools), so every later
// request is valid and merge skips them.

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

// toolLoop is a tool exchange's state across its upstream calls: the
// rounds' (pipeline.Rounds), and what a round's request is built from.
type toolLoop struct {
	s           *Server
	x           *exchange
	p, up       *protocol
	req         *wire.Request
	instr       [][]byte
	lastHistory int
	lastSeq     uint64 // the stored seq of the message at lastHistory

	pipeline.Rounds
}

func (s *Server) newToolLoop(x *exchange, p, up *protocol, req *wire.Request, instr, msgs [][]byte, lastHistory int, lastSeq uint64, offered []wire.Tool) *toolLoop {
	limit := x.c.cfg.History.ToolRounds
	if limit <= 0 {
		limit = tools.DefaultRounds
	}
	l := &toolLoop{s: s, x: x, p: p, up: up, req: req, instr: instr, lastHistory: lastHistory, lastSeq: lastSeq,
		Rounds: pipeline.Rounds{Up: up.proto, Msgs: msgs, Offered: offered, Limit: limit, Runner: tools.Runner{Store: s.cfg.Store, Key: x.key},
			Now: x.now, ToolTurn: pipeline.ToolTurn{Mine: map[string]bool{}}}}
	l.Ran = l.ran
	return l
}

// ran counts a history tool's run, and notes it for the span of the
// round that called it when the exchange is traced.
func (l *toolLoop) ran(part wire.Part, start time.Time, r tools.Result) {
	x := l.x
	l.s.metrics.ToolCall(x.c.cfg.ID, part.Name, r.Outcome)
	if x.rec.span != nil && len(x.rec.rounds) > 0 {
		rd := &x.rec.rounds[len(x.rec.rounds)-1]
		// The span is made after the exchange, from copies: a codec
		// may point a part's strings into the answer's bytes.
		rd.Runs = append(rd.Runs, tracing.ToolRun{Name: strings.Clone(part.Name), CallID: strings.Clone(part.CallID), Start: start, End: x.now(),
			Outcome: r.Outcome, Failed: r.IsError, Found: r.Found})
	}
	x.life.endEpisode = x.life.endEpisode || r.End
}

// body returns the next round's request body, streamed or not.
func (l *toolLoop) body(stream bool) ([]byte, error) {
	out, err := l.x.appendBody(l.up, nil, l.req, l.instr, l.Msgs, l.lastHistory, l.lastSeq)
	if err != nil {
		return nil, err
	}
	if out, err = l.up.upstream.WithTools(out, l.Offered, stream); err != nil {
		return nil, fmt.Errorf("%w: %w", apierr.Internal, err)
	}
	return out, nil
}

// step takes a round's answer (pipeline.Rounds.Step).
func (l *toolLoop) step(ctx context.Context, a *wire.Answer) (more bool, err error) {
	return l.Step(ctx, a, len(l.x.rec.rounds))
}

// finish stamps the final answer a and returns the stored turn and the
// answer as the client gets it (pipeline.ToolTurn.Finish), each round's
// part of the turn noted in its record.
func (l *toolLoop) finish(a wire.Answer, relayed string) ([]history.Message, wire.Answer, error) {
	x, s := l.x, l.s
	a.Usage = l.Usage
	if err := x.stamp(&a, l.req, l.up.proto, l.p.proto); err != nil {
		return nil, wire.Answer{}, err
	}
	count := func(p wire.Protocol, raw []byte) int { return plan.Count(s.counter, x.dec.Encoding, p, raw) }
	stored := func(i int, msgs []history.Message) {
		if i < len(x.rec.rounds) {
			x.rec.rounds[i].Stored += len(msgs)
			for _, m := range msgs {
				x.rec.rounds[i].Tokens += m.Tokens
			}
		}
	}
	return l.Finish(a, relayed, count, stored, len(x.rec.rounds)-1)
}

// commit records the turn.
func (l *toolLoop) commit(turn []history.Message, a *wire.Answer) error {
	id := a.ID
	if a.ResponseID != "" {
		id = a.ResponseID
	}
	return l.x.record1(recorded{answer: turn, model: a.Model, id: id, stop: a.Stop, response: l.x.responseOf(a), prompt: l.Usage.InputTokens,
		completion: l.Usage.OutputTokens, cached: l.Usage.CachedTokens, created: l.Usage.CacheCreationTokens, upstream: l.x.upstream})
}

// toolExchange is serveExchange's upstream part for a request with history
// tools offered. It reports whether it handed the exchange to a stream's
// relay (see relay).
func (s *Server) toolExchange(ctx context.Context, rc *fasthttp.RequestCtx, x *exchange, p, up *protocol,
	req *wire.Request, instr, msgs [][]byte, lastHistory int, lastSeq uint64, offered []wire.Tool) (relayed bool) {
	l := s.newToolLoop(x, p, up, req, instr, msgs, lastHistory, lastSeq, offered)
	if req.Stream {
		return s.toolStream(ctx, rc, l)
	}
	var a wire.Answer
	for {
		var err error
		a, err = s.toolCall(ctx, rc, l)
		if err == nil {
			var more bool
			if more, err = l.step(ctx, &a); err == nil && !more {
				break
			}
		}
		if err != nil {
			s.metrics.ToolRounds(x.c.cfg.ID, len(x.rec.rounds))
			x.fail(rc, err)
			return false
		}
	}
	s.metrics.ToolRounds(x.c.cfg.ID, len(x.rec.rounds))
	turn, final, err := l.finish(a, "")
	if err != nil {
		x.fail(rc, err)
		return false
	}
	switch err := pipeline.CommitWhole(client{rc}, toolCommit{l: l, turn: turn}, &final); {
	case errors.Is(err, pipeline.ErrClientLeft):
		x.done(499, err)
		return false
	case err != nil:
		x.fail(rc, err)
		return false
	}
	client{rc}.Rendered(p.ingress.AppendAnswer(nil, req, &final))
	x.done(fasthttp.StatusOK, nil)
	return false
}

// toolCommit is the turn a tool exchange's rounds built, committed with
// the final answer as the client gets it (pipeline.Committer).
type toolCommit struct {
	l    *toolLoop
	turn []history.Message
	// streamed: the closing events of a stream do not show reasoning,
	// which was not relayed; it is dropped from the answer once stored.
	streamed bool
}

// Commit records the turn.
func (c toolCommit) Commit(a *wire.Answer) error {
	if err := c.l.commit(c.turn, a); err != nil {
		return err
	}
	c.l.x.life.committed = true
	if c.streamed {
		a.Message.Parts = slices.DeleteFunc(a.Message.Parts, func(p wire.Part) bool { return p.Kind == wire.Opaque })
	}
	return nil
}

// toolCall makes one unstreamed upstream call of a tool exchange and
// reads its answer. An upstream's error is answered in the client's
// protocol's shape.
func (s *Server) toolCall(ctx context.Context, rc *fasthttp.RequestCtx, l *toolLoop) (wire.Answer, error) {
	x, up := l.x, l.up
	out, err := l.body(false)
	if err != nil {
		return wire.Answer{}, err
	}
	upReq := fasthttp.AcquireRequest()
	l.request(upReq, rc)
	upReq.SetBodyRaw(out)
	var round pipeline.Round
	resp, err := x.call(ctx, upReq, &round)
	if err != nil {
		return wire.Answer{}, err
	}
	status := resp.StatusCode()
	enc := string(resp.Header.ContentEncoding())
	raw, err := pipeline.ReadLimited(uplink.Body(resp), s.cfg.MaxResponseBytes)
	uplink.Release(resp)
	x.rec.UpstreamDone = s.cfg.Now()
	round.Done = x.rec.UpstreamDone
	switch {
	case errors.Is(err, pipeline.ErrTooLarge):
		return wire.Answer{}, fmt.Errorf("%w: read upstream answer: %w", apierr.UpstreamTooLarge, err)
	case err != nil:
		return wire.Answer{}, upstreamErr(fmt.Errorf("proxy: read upstream answer: %w", err))
	case status < 200 || status >= 300:
		x.learnWindow(status, enc, raw)
		return wire.Answer{}, pipeline.UpstreamStatus(status, raw)
	}
	a, err := pipeline.ParseAnswer(up.upstream, enc, raw, s.cfg.MaxResponseBytes, false)
	if err != nil {
		return wire.Answer{}, err
	}
	round.Model, round.Usage = a.Model, a.Usage
	x.rec.rounds = append(x.rec.rounds, round)
	return a, nil
}

// request sets req's method, URI and headers for a round (its body is
// the caller's).
func (l *toolLoop) request(req *fasthttp.Request, rc *fasthttp.RequestCtx) {
	l.up.request(req, rc, l.x.c, l.req, l.p.proto)
}
