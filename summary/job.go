package summary

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/tokens"
)

// mode says how a job was asked for.
type mode struct {
	// force summarises even under the trigger (the budget could not send
	// every unsummarised turn, or an explicit call).
	force bool
	// explicit is a synchronous call (Summarize, End): it waits for a
	// lease another process holds instead of skipping.
	explicit bool
	// all covers every turn, the newest keep_turns too (Compact: the
	// client's compaction replaces its whole window).
	all bool
	// turn, if set, is a change of the conversation not committed yet
	// (Compact's request: its new messages, Seq assigned): its messages
	// are summarised with the stored ones and it is committed with the
	// summary, in one change; nothing is committed when the attempt
	// fails.
	turn *history.Change
	// model and cred are the job's, read under the Manager's lock.
	model, cred string
}

// unknownWindow is the summary model's window assumed when neither the
// built-in table nor history.model_windows knows it.
const unknownWindow = 16000

// run makes one attempt at key's job: fold the newest sealed episode if it
// is not folded yet, else compact every unsummarised turn but the newest
// keep_turns. It returns the metadata after it, the outcome, the number of
// summariser calls and the error of a failed attempt.
func (m *Manager) run(ctx context.Context, j *job, md mode) (history.Meta, Outcome, int, error) {
	start := m.cfg.Now()
	t, ok := m.tenant(j.key)
	if !ok || !t.Summary.Enabled {
		return history.Meta{}, Nothing, 0, nil
	}
	release, held, err := m.lease(ctx, j.key, md.explicit)
	if err != nil {
		m.metrics.failed.WithLabelValues(t.ID).Inc()
		return history.Meta{}, Failed, 0, fmt.Errorf("summary: lease: %w", err)
	}
	if !held {
		return history.Meta{}, Skipped, 0, nil
	}
	defer release()
	snap, err := m.cfg.Store.Load(ctx, j.key, metaOnly)
	if err != nil {
		m.metrics.failed.WithLabelValues(t.ID).Inc()
		return history.Meta{}, Failed, 0, fmt.Errorf("summary: load: %w", err)
	}
	meta := snap.Meta
	if md.turn != nil && md.turn.Version != meta.Version {
		// Another commit since the request was planned: plan it again.
		return meta, Failed, 0, fmt.Errorf("summary: %w", history.ErrConflict)
	}
	if meta.Version == 0 && md.turn == nil {
		if md.explicit {
			return meta, Nothing, 0, ErrNotFound
		}
		return meta, Nothing, 0, nil
	}
	w, err := m.plan(ctx, j.key, t, &meta, md)
	if err != nil {
		m.metrics.failed.WithLabelValues(t.ID).Inc()
		return meta, Failed, 0, err
	}
	if len(w.cover) == 0 {
		if md.turn != nil { // nothing to summarise: the turn alone
			after, err := m.cfg.Store.Commit(ctx, j.key, *md.turn)
			if err != nil {
				return meta, Failed, 0, fmt.Errorf("summary: commit: %w", err)
			}
			return after, Nothing, 0, nil
		}
		return meta, Nothing, 0, nil
	}

	model := summaryModel(t, md, &meta)
	if model == "" { // nothing was ever answered (an import): no model to ask
		if md.explicit {
			return meta, Nothing, 0, ErrNoModel
		}
		return meta, Nothing, 0, nil
	}
	w.key, w.incarnation = j.key, meta.Incarnation
	res, err := m.summarise(ctx, t, md.cred, model, w)
	if err != nil {
		m.metrics.failed.WithLabelValues(t.ID).Inc()
		return meta, Failed, res.calls, err
	}
	if res.covered < len(w.cover) { // the call cap: the episode is not folded yet
		w.cover, w.title = w.cover[:res.covered], false
	}
	m.metrics.promptTokens.WithLabelValues(t.ID).Add(float64(res.promptTokens))
	m.metrics.completionTokens.WithLabelValues(t.ID).Add(float64(res.completionTokens))
	now := m.cfg.Now()
	sc := m.summaryChange(t, model, &meta, &w, &res, now.UnixNano())
	after, outcome, err := m.land(ctx, j.key, t, md, &meta, sc, now.UnixNano())
	if outcome == Landed {
		m.metrics.made.WithLabelValues(t.ID).Inc()
		m.metrics.latency.WithLabelValues(t.ID).Observe(m.cfg.Now().Sub(start).Seconds())
	}
	return after, outcome, res.calls, err
}

// lease takes the conversation's summary lease when the store has
// leases: waiting for it on an explicit call, else only if it is free
// (held false: another process holds it). release is a no-op without
// leases.
func (m *Manager) lease(ctx context.Context, key history.Key, explicit bool) (release func(), held bool, err error) {
	l, ok := m.cfg.Store.(history.Leaser)
	if !ok {
		return func() {}, true, nil
	}
	name := history.LeaseName(history.LeaseSummary, key)
	if explicit {
		release, err = l.Acquire(ctx, name)
		return release, err == nil, err
	}
	return l.TryAcquire(ctx, name)
}

// summaryModel is the model that summarises: the tenant's summary
// model, else the job's, else the conversation's last ("": none).
func summaryModel(t *config.Tenant, md mode, meta *history.Meta) string {
	if t.Summary.Model != "" {
		return t.Summary.Model
	}
	if md.model != "" {
		return md.model
	}
	return meta.Model
}

// summaryChange is the summary res makes of w, to land on the
// conversation as the job read it (meta): a delete, forget or supersede
// since then makes the result stale (erased text never lands in a
// summary). A folded episode gets res's title, or one made from its
// turns.
func (m *Manager) summaryChange(t *config.Tenant, model string, meta *history.Meta, w *work, res *result, now int64) *history.SummaryChange {
	enc := tokens.For(model, t.History.Encoding)
	sc := &history.SummaryChange{
		Incarnation: meta.Incarnation,
		Epoch:       meta.Epoch,
		Base:        w.base,
		Summary: history.Summary{
			Text:    res.text,
			Through: w.cover[len(w.cover)-1].last(),
			Turns:   w.baseTurns + len(w.cover),
			Tokens:  m.summaries.tokens(enc, res.text),
			Model:   model,
			At:      now,
		},
		PromptTokens:     res.promptTokens,
		CompletionTokens: res.completionTokens,
	}
	if w.title {
		sc.Episode, sc.Title = w.episode, res.title
		if sc.Title == "" {
			sc.Title = fallbackTitle(w.cover)
		}
	}
	return sc
}

// land commits the summary sc: with md's turn, the two land together or
// neither does (a conflict is the caller's to plan again); alone, it is
// tried again on the store's own write conflicts, and a stale one (another
// landed first) is discarded. It returns the metadata after it (meta's
// when nothing landed) and the outcome: Landed, Stale or Failed.
func (m *Manager) land(ctx context.Context, key history.Key, t *config.Tenant, md mode, meta *history.Meta, sc *history.SummaryChange, now int64) (history.Meta, Outcome, error) {
	var after history.Meta
	var err error
	if md.turn != nil {
		ch := *md.turn
		ch.Summary = sc
		if after, err = m.cfg.Store.Commit(ctx, key, ch); err != nil {
			m.metrics.failed.WithLabelValues(t.ID).Inc()
			return *meta, Failed, fmt.Errorf("summary: commit: %w", err)
		}
		return after, Landed, nil
	}
	for range 4 {
		// ErrConflict here is the store's own write conflict with a
		// concurrent commit (the summary's check is ErrStale): try again.
		// Base: a store may land it in one write if the conversation's
		// head is still the one the job read.
		after, err = m.cfg.Store.Commit(ctx, key, history.Change{Summary: sc, Now: now, Version: meta.Version, Base: meta})
		if !errors.Is(err, history.ErrConflict) {
			break
		}
	}
	if errors.Is(err, history.ErrStale) {
		m.metrics.stale.WithLabelValues(t.ID).Inc()
		m.log.Info("summary discarded: another landed first", "tenant", t.ID, "conversation", key.Conversation)
		return *meta, Stale, nil
	}
	if err != nil {
		m.metrics.failed.WithLabelValues(t.ID).Inc()
		return *meta, Failed, fmt.Errorf("summary: commit: %w", err)
	}
	return after, Landed, nil
}

// work is what one job summarises.
type work struct {
	base      uint64 // the stored summary's Through (0: none)
	baseText  string
	baseTurns int
	cover     []turn
	title     bool // a sealed episode is folded: title it
	episode   uint32
	// key and incarnation are the conversation's, for the calls' records.
	key         history.Key
	incarnation uint64
}

// plan reads what key's job summarises: the turns after the stored summary
// through the newest sealed episode not folded yet, or, failing that, every
// turn but the newest keep_turns when more than trigger_turns wait (or
// md.force).
func (m *Manager) plan(ctx context.Context, key history.Key, t *config.Tenant, meta *history.Meta, md mode) (work, error) {
	var w work
	turn := md.turn
	if s := meta.Summary; s != nil && (turn == nil || turn.Supersede == nil || turn.Supersede.Seq >= s.Through) {
		// (A turn that rewrites messages the summary covers drops it:
		// history.Apply. The new one is made from the messages.)
		w.base, w.baseText, w.baseTurns = s.Through, s.Text, s.Turns
	}
	limit := ^uint64(0)
	if n := len(meta.Episodes); n > 0 && turn == nil {
		if ep := meta.Episodes[n-1]; ep.Title == "" && ep.To > w.base {
			w.title, w.episode, limit = true, ep.N, ep.To
		}
	}
	var msgs []history.Message
	err := m.cfg.Store.Messages(ctx, key, w.base, false, func(msg history.Message) bool {
		if msg.Seq > limit {
			return false
		}
		msgs = append(msgs, msg)
		return true
	})
	if err != nil {
		return w, fmt.Errorf("summary: read messages: %w", err)
	}
	if turn != nil {
		if b := turn.Supersede; b != nil {
			for len(msgs) > 0 && msgs[len(msgs)-1].Seq > b.Seq {
				msgs = msgs[:len(msgs)-1]
			}
		}
		for _, msg := range turn.Append {
			if msg.Active() {
				msgs = append(msgs, msg)
			}
		}
	}
	ts := turns(msgs)
	if w.title {
		w.cover = ts
	} else {
		pending, keep := len(ts), t.Summary.KeepTurns
		if md.all {
			keep = 0
		}
		if pending <= keep || (!md.force && pending <= t.Summary.TriggerTurns) {
			return w, nil
		}
		w.cover = ts[:pending-keep]
	}
	// A summary never ends on tool calls still waiting for their results:
	// the results would follow it with their call summarised away.
	for len(w.cover) > 0 && w.cover[len(w.cover)-1].open() {
		w.cover = w.cover[:len(w.cover)-1]
	}
	return w, nil
}

// result is a summarisation's outcome.
type result struct {
	text, title                    string
	promptTokens, completionTokens int
	calls                          int
	// covered is how many of the work's turns text covers: all of them,
	// unless the job reached summary.max_calls_per_job first.
	covered int
}

// minChunk is the least transcript a chunk carries, whatever the window
// and summary.max_tokens: progress per call stays bounded below.
const minChunk = 256

// summarise asks the summariser for the summary of w: one call when the
// previous summary and the transcript fit the summary model's window, else
// one per chunk of turns, each folding its chunk into the summary so far.
//
// Its cost is linear in the transcript: every answer is cut to
// summary.max_tokens (the summariser is asked for no more, and one that
// runs on is cut at a sentence), so the summary so far never takes more
// than that share of the window, and every chunk gets the same room, the
// window less the instructions, the summary's share and the answer. A
// previous summary over its share (stored before summaries were bounded,
// or imported) is first compacted on its own, in one call, rather than
// squeezing the chunks. After summary.max_calls_per_job calls it stops
// with the chunks folded so far (covered).
func (m *Manager) summarise(ctx context.Context, t *config.Tenant, cred, model string, w work) (res result, err error) {
	defer func() {
		m.metrics.jobCalls.WithLabelValues(t.ID).Observe(float64(res.calls))
		m.metrics.jobPromptTokens.WithLabelValues(t.ID).Observe(float64(res.promptTokens))
	}()
	enc := tokens.For(model, t.History.Encoding)
	window, known := tokens.Window(model, t.History.ModelWindows)
	if !known {
		window = unknownWindow
	}
	maxOut := t.Summary.MaxTokens
	system := systemPrompt(t.Summary.Prompt, w.title)
	fixed := m.instr.tokens(enc, system) + 64 // instructions and a margin
	room := max(window-fixed-2*maxOut, minChunk)

	// ask makes one call, bounds its answer and records it: c says what
	// the call extends and folds in.
	ask := func(system, user string, titled bool, c call) (title, text string, err error) {
		c.system, c.start = system, m.cfg.Now()
		defer func() {
			c.err = err
			m.record(&w, model, enc, window-maxOut, c)
		}()
		a, err := m.call(ctx, t, cred, model, system, user, maxOut)
		c.answer = a
		res.calls++
		res.promptTokens += a.promptTokens
		res.completionTokens += a.complTok
		if err != nil {
			return "", "", err
		}
		title, text = parseAnswer(a.text, titled)
		if text == "" {
			return "", "", fmt.Errorf("%w: empty summary", errUpstream)
		}
		if m.summaries.tokens(enc, text) > maxOut { // FitSummary cuts it
			cut, _ := plan.FitSummary(m.cfg.Counter, enc, chat.RoleSystem, text, maxOut)
			m.log.Info("summary answer over summary.max_tokens, cut", "tenant", t.ID, "max_tokens", maxOut)
			text = cut
		}
		if text == "" {
			return "", "", fmt.Errorf("summary: summary.max_tokens %d leaves no room for a summary", maxOut)
		}
		return title, text, nil
	}

	prev := w.baseText
	if prev != "" && m.summaries.tokens(enc, prev) > maxOut {
		// What of it fits the window beside the instructions and the answer.
		in, _ := plan.FitSummary(m.cfg.Counter, enc, chat.RoleSystem, prev, window-fixed-maxOut)
		_, prev, err = ask(systemPrompt(t.Summary.Prompt, false)+compactInstruction, userContent(in, nil), false,
			call{prev: in, prevThrough: w.base})
		if err != nil {
			return res, err
		}
	}
	for i, next := 0, -1; i < len(w.cover); {
		if c := t.Summary.MaxCallsPerJob; i > 0 && c > 0 && res.calls >= c {
			break // land what is folded; the rest waits for the next job
		}
		size, k := 0, i
		if i == 0 && fitsByBytes(w.cover, room) {
			k = len(w.cover) // one call: no need to count the transcript
		}
		for k < len(w.cover) {
			n := next // the turn that did not fit the previous chunk
			if n < 0 || k > i {
				n = m.turnTokens(enc, w.cover[k])
			}
			if k > i && size+n > room {
				next = n
				break
			}
			size += n
			k++
		}
		last := k == len(w.cover)
		sys := system
		if !last && w.title {
			sys = systemPrompt(t.Summary.Prompt, false)
		}
		through := w.base // what the summary so far covers
		if i > 0 {
			through = w.cover[i-1].last()
		}
		title, text, err := ask(sys, userContent(prev, w.cover[i:k]), w.title && last,
			call{prev: prev, prevThrough: through, covers: w.cover[i:k]})
		if err != nil {
			return res, err
		}
		prev = text
		if last {
			res.title = title
		}
		i, res.covered = k, k
	}
	res.text = prev
	return res, nil
}

// fitsByBytes reports whether the transcript of turns surely fits in
// room tokens: a token is at least a byte, and a message's line in the
// transcript (writeLine) is never longer than its JSON plus a margin, so
// those bytes bound its count. Counting a long transcript was most of a
// compaction's CPU; near the window, turnTokens counts it.
func fitsByBytes(turns []turn, room int) bool {
	size := 0
	for _, t := range turns {
		for _, msg := range t.msgs {
			size += len(msg.Raw) + 16
		}
	}
	return size <= room
}

// turnTokens counts a turn's tokens in the transcript.
func (m *Manager) turnTokens(enc tokens.Encoding, t turn) int {
	var b strings.Builder
	for i := range t.msgs {
		writeMessage(&b, &t.msgs[i])
	}
	return m.cfg.Counter.Text(enc, b.String())
}
