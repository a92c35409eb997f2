package proxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/pipeline"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/protocol/responses"
	"github.com/recallproxy/recall/respstate"
	"github.com/recallproxy/recall/wire"
)

// POST /v1/responses/compact, served by Recall on every upstream
// (DESIGN.md sections 11 and 15): the request's items are merged into
// its conversation, Recall's summary is made to cover every turn, theirs
// too (package summary, in the upstream's protocol, with the tenant's
// credential), both land in one commit, and the answer is the compacted
// window: the newest user messages, then a compaction item whose
// encrypted_content names that summary. A later Responses request that carries the item
// gets the summary in place of the window before it (see compacted).

// pathCompact is the compaction's path, below any /c/{id} prefix.
var pathCompact = []byte("/v1" + responses.CompactPath)

// Compactor makes a conversation's summary cover every turn now;
// summary.Manager implements it. The proxy serves POST
// /v1/responses/compact when Config.Summaries implements it.
type Compactor interface {
	// Compact summarises every turn of key that its summary does not
	// cover, turn's too, and returns the metadata afterwards. turn is
	// the request's change, committed with the summary in one change
	// (nothing of it when the compaction fails). model and cred are the
	// request's (cred: the client's key for a pass-through upstream).
	Compact(ctx context.Context, key history.Key, model, cred string, turn history.Change) (history.Meta, error)
}

// keptUserTokens bounds the user messages a compaction keeps verbatim in
// its window, newest first (what Codex keeps of its own compactions).
const keptUserTokens = 20_000

// expansion is what a request's compaction items came to: the last of
// Recall's, and its conversation's summary as it stands.
type expansion struct {
	ref     respstate.CompactionRef
	summary *history.Summary
}

// compacted reads the compaction items of a Responses request's input.
// The window up to and including the last of Recall's is removed from
// req.Messages: the client's copy of turns its conversation holds, which
// the conversation's summary stands in for (plan injects it, and the
// stored turns after it follow). Recall's compaction must name a
// conversation of the caller's namespace, in the incarnation it was made
// in, else apierr.CompactionNotFound (unknown, forged and other tenants'
// alike); another server's (the real OpenAI's) is left in place for a
// Responses upstream, which can read it, and is
// apierr.CompactionUnreadable for any other.
func (x *exchange) compacted(req *wire.Request, up wire.Protocol) (*expansion, error) {
	last := -1
	var ref respstate.CompactionRef
	for i, raw := range req.Messages {
		content, ok := responses.Compaction(raw)
		if !ok {
			continue
		}
		r, mine := respstate.ParseCompaction(content)
		switch {
		case mine:
			last, ref = i, r
		case strings.HasPrefix(content, respstate.CompactionPrefix):
			return nil, apierr.CompactionNotFound
		case up != wire.Responses:
			return nil, apierr.CompactionUnreadable
		}
	}
	if last < 0 {
		return nil, nil
	}
	if !history.ValidID(ref.Conversation) {
		return nil, apierr.CompactionNotFound
	}
	// The deadline only where a compaction is read: a request without
	// one (nearly all) makes no timer.
	ctx, cancel := context.WithTimeout(context.Background(), x.c.timeout())
	defer cancel()
	snap, err := x.s.cfg.Store.Load(ctx, history.Key{Tenant: x.c.Namespace, Conversation: ref.Conversation}, history.Query{After: ^uint64(0)})
	if err != nil {
		return nil, respstate.StoreReadErr(err)
	}
	m := &snap.Meta
	if m.NextSeq == 0 || m.Incarnation != ref.Incarnation || ref.Through >= m.NextSeq {
		return nil, apierr.CompactionNotFound
	}
	req.Messages = req.Messages[last+1:]
	req.InPlace = nil // indices into the window removed; compaction requests carry none
	return &expansion{ref: ref, summary: m.Summary}, nil
}

// expand resolves a Responses request's compaction (see compacted) and
// the conversation it continues: the compaction's, when the request
// names none; a request that names another is a 400.
func (x *exchange) expand(req *wire.Request, conv string, up wire.Protocol) (*expansion, string, error) {
	exp, err := x.compacted(req, up)
	if err != nil || exp == nil {
		return exp, conv, err
	}
	if conv == "" && req.Conversation == "" && req.PreviousResponseID == "" {
		conv = exp.ref.Conversation
	}
	return exp, conv, nil
}

// summaryOf is the planned message that stands for exp's summary in a
// request that plans nothing (memory off, a side call): after the
// instructions, in the role of the first.
func summaryOf(exp *expansion, instructions [][]byte, p wire.Protocol) (plan.Message, bool) {
	if exp == nil || exp.summary == nil {
		return plan.Message{}, false
	}
	role := wire.RoleSystem
	if len(instructions) > 0 {
		if r := wire.For(p).Role(instructions[0]); r != "" {
			role = r
		}
	}
	return plan.Message{Kind: plan.SummaryMessage, Role: role, Raw: plan.Inject(role, exp.summary.Text)}, true
}

// compact serves POST /v1/responses/compact (conv: the /c/{id} prefix's).
//
// Every call ends in exactly one x.done or x.fail, and ends x's lifetime:
// the lock and lease a chained compaction's resolve took are let go on
// every end, a refusal before the plan included.
func (s *Server) compact(rc *fasthttp.RequestCtx, conv string) {
	p := protocols[wire.Responses]
	x := &exchange{request: request{s: s, render: p.render, route: p.route}, rec: facts{Record: pipeline.Record{Start: s.startOf(rc)}}}
	x.key.Conversation = conv
	body, ok := s.admit(rc, x)
	if !ok {
		return
	}
	defer x.life.End()
	req, comp, mode, err := x.compactTarget(rc, body, conv)
	if err != nil {
		x.fail(rc, err)
		return
	}
	instructions, in, err := pipeline.TurnOf(wire.Responses, req)
	if err != nil {
		x.fail(rc, err)
		return
	}

	ctx, cancel := context.WithTimeout(context.Background(), x.c.timeout())
	x.life.own.Cancel = cancel
	release, err := x.prepare(ctx, instructions, in, req.Model, 0, nil, mode)
	if errors.Is(err, apierr.NothingToSend) {
		err = apierr.NothingToCompact // no input, and a conversation that holds nothing
	}
	if err != nil {
		x.fail(rc, err)
		return
	}
	x.life.own.Release = release
	before := x.dec.Meta
	if before.NextSeq == 0 && len(x.dec.Fresh) == 0 {
		x.fail(rc, apierr.NothingToCompact)
		return
	}
	if before.NextSeq == 0 {
		x.dec.Incarnation = respstate.NewIncarnation()
	}
	// The request's items and the summary over them land in one change,
	// under the conversation's lock: a failed compaction commits nothing.
	turn := x.dec.Change(nil, s.cfg.Now().UnixNano())
	turn.Model = x.model
	after, err := comp.Compact(ctx, x.key, x.model, x.c.PassedKey(), turn)
	if err != nil {
		s.log.Error("compaction failed", "tenant", x.c.cfg.ID, "conversation", x.key.Conversation, "error", err)
		x.fail(rc, compactErr(err))
		return
	}
	x.life.committed = len(x.dec.Fresh) > 0 || x.dec.Supersede != nil
	x.answerCompacted(rc, req, &before, &after)
}

// compactTarget decodes a compaction's body and settles what it
// compacts: the conversation (the one its compaction items name, when the
// request names none), the history mode, and the Compactor that makes the
// summary. It sets x's key, upstream and model, and checks that the
// store can take a commit.
func (x *exchange) compactTarget(rc *fasthttp.RequestCtx, body []byte, conv string) (*wire.Request, Compactor, history.Mode, error) {
	s, c := x.s, x.c
	conv, mode, err := x.target(rc, conv)
	if err != nil {
		return nil, nil, "", err
	}
	req, err := responses.ParseCompact(body)
	if err != nil {
		return nil, nil, "", err
	}
	comp, ok := s.cfg.Summaries.(Compactor)
	if !ok || !c.cfg.Summary.Enabled || mode == history.Off {
		// The compaction is Recall's summary of what it records.
		return nil, nil, "", apierr.SummariesDisabled
	}
	upProto, _ := wire.UpstreamFor(c.cfg.Upstream.Protocol, wire.Responses)
	x.upstream = upProto
	exp, conv, err := x.expand(req, conv, upProto)
	if err != nil {
		return nil, nil, "", err
	}
	req.Store = true // a compaction is made of what is stored: a conversation of Recall's when none is named
	if conv, err = resolveResponses(x, req, conv); err != nil {
		return nil, nil, "", err
	}
	if exp != nil && conv != exp.ref.Conversation {
		return nil, nil, "", apierr.ConversationConflict("input")
	}
	x.key = history.Key{Tenant: c.Namespace, Conversation: conv}
	x.record, x.model = true, req.Model
	if s.cfg.CanCommit != nil {
		if err := s.cfg.CanCommit(); err != nil {
			return nil, nil, "", fmt.Errorf("%w: %w", apierr.NoSpace, err)
		}
	}
	return req, comp, mode, nil
}

// answerCompacted answers a committed compaction: the compacted window
// (the user messages kept, then the compaction item naming the summary
// as it stands after), and the summariser's usage in it.
func (x *exchange) answerCompacted(rc *fasthttp.RequestCtx, req *wire.Request, before, after *history.Meta) {
	ref := respstate.CompactionRef{Conversation: x.key.Conversation, Incarnation: after.Incarnation}
	if after.Summary != nil {
		ref.Through = after.Summary.Through
	}
	out := keptUsers(x, req.Messages)
	out = append(out, responses.AppendCompactionItem(nil, "cmp_"+randomHex(), ref.Content()))
	u := wire.Usage{
		InputTokens:  int(after.SummaryPromptTokens - before.SummaryPromptTokens),
		OutputTokens: int(after.SummaryCompletionTokens - before.SummaryCompletionTokens),
	}
	rc.SetStatusCode(fasthttp.StatusOK)
	rc.SetContentType("application/json")
	rc.Response.SetBodyRaw(responses.AppendCompacted(nil, "resp_"+randomHex(), x.rec.Start.Unix(), out, u))
	x.done(fasthttp.StatusOK, nil)
}

// compactErr is a failed compaction's error as the client is answered:
// the store's and the summariser's failures as they are for a turn.
func compactErr(err error) error {
	switch {
	case errors.Is(err, history.ErrConflict):
		return apierr.Busy
	case errors.Is(err, history.ErrNoSpace):
		return fmt.Errorf("%w: %w", apierr.NoSpace, err)
	case errors.Is(err, history.ErrUnavailable):
		return fmt.Errorf("%w: %w", apierr.StoreUnavailable, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: %w", apierr.UpstreamTimeout, err)
	}
	return fmt.Errorf("%w: compact: %w", apierr.UpstreamUnavailable, err)
}

// keptUsers are the user messages of a compacted window that its answer
// keeps verbatim, as OpenAI's compaction keeps them: the newest, within
// keptUserTokens, in their order, as output items.
func keptUsers(x *exchange, msgs [][]byte) [][]byte {
	var out [][]byte
	left := keptUserTokens
	for i := len(msgs) - 1; i >= 0; i-- {
		if !responses.UserText(msgs[i]) {
			continue
		}
		n := plan.Count(x.s.counter, x.dec.Encoding, wire.Responses, msgs[i])
		if n > left {
			break
		}
		left -= n
		out = append(out, responses.AppendUserItem(nil, "msg_"+randomHex(), msgs[i]))
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// randomHex is 24 random hex digits, the tail of an id Recall makes.
func randomHex() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
