package plan

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/thread"
	"github.com/recallproxy/recall/tokens"
	"github.com/recallproxy/recall/wire"
)

// Make plans one request. Errors: ErrStore (wrapped), a
// *history.OrphanResultError whose Index is the position among in.New,
// a *history.ContextLengthError, ErrNothingToSend, or a strategy's error.
//
// Its stages, in order: size the budget, read and merge the stored
// conversation, check the new messages, take the summary's place, store
// the new messages' form, build the window with the preamble and the
// summary, curate it to the budget, and lay out the messages to send.
func Make(ctx context.Context, in Input) (*Plan, error) {
	var m maker
	m.start(in)
	if err := m.read(ctx); err != nil {
		return nil, err
	}
	if in.Loaded != nil {
		in.Loaded()
	}
	if err := m.checkNew(); err != nil {
		return nil, err
	}
	m.commitFacts()
	hist := m.pastSummary()
	sendNew := m.fresh()
	m.buildWindow(hist, sendNew)
	m.injectSummary(len(sendNew) > 0)
	sent, err := m.curate()
	if err != nil {
		return nil, err
	}
	p, err := m.lay(sent)
	m.w.Release() // the plan holds nothing of the window: lay copied what it sends
	return p, err
}

// maker is one Make's state, filled in stage by stage.
type maker struct {
	in                Input
	p                 *Plan
	count, fixedCount Counter
	enc               tokens.Encoding
	// window is the model's input window (0: not known), budget and floor
	// what Make plans to (see size); fixed is what is sent whatever
	// curation drops: the reply's priming, tools, instructions, and the
	// preamble and summary once they are placed.
	window, budget, floor int
	fixed                 int

	// snap is the conversation as read, stored as it stands before this
	// request (without the last exchange when a retry replaces it).
	snap, stored history.Snapshot
	merged       history.Merged
	replaced     bool

	// summaryTurns are the turns the injected summary covers; next is the
	// sequence number of the first new message.
	summaryTurns int
	next         uint64
	w            *history.Window
	// pre is the conversation's preamble the request repeats, nil if none
	// (or the request rewrites it); summary the injected message.
	pre     *history.Message
	summary Message
}

// start sets up the counters, the encoding, the budget and the fixed
// part of the prompt.
func (m *maker) start(in Input) {
	m.in, m.count, m.fixedCount = in, in.Counter, in.Fixed
	if m.count == nil {
		m.count = &tokens.Counter{}
	}
	if m.fixedCount == nil {
		m.fixedCount = m.count
	}
	m.p = &Plan{Encoding: tokens.For(in.Model, string(in.Policy.Encoding))}
	m.enc = m.p.Encoding
	m.size()
	m.p.Tools = m.fixedCount.Tools(m.enc, in.Tools)
	m.fixed = tokens.ReplyPriming + m.p.Tools
	for _, msg := range in.Instructions {
		m.fixed += Count(m.fixedCount, m.enc, msg.Protocol, msg.Raw)
	}
}

// size works out the budget, the floor and the window. The budget bounds
// what Recall adds; the model's window bounds what may be sent at all.
// The floor is the window less the answer's reserve: the summary and the
// newest earlier turn are sent within it when the client's own request
// leaves them no room under the budget.
func (m *maker) size() {
	in := &m.in
	window, known := modelWindow(in.Model, in.Policy.ModelWindows, in.Window)
	assumed := window
	if !known {
		assumed, window = tokens.UnknownWindow, 0
	}
	budget := in.Policy.Budget
	if budget <= 0 {
		budget = assumed / 2
	}
	if known && window-in.MaxTokens < budget {
		budget = max(1, window-in.MaxTokens)
	}
	floor := max(0, assumed-in.MaxTokens)
	m.p.Ratio = 1
	if in.Ratio > 0 {
		m.p.Ratio = in.Ratio
	}
	if m.p.Ratio > 1 {
		budget = max(1, int(float64(budget)/m.p.Ratio))
		floor = int(float64(floor) / m.p.Ratio)
	}
	m.window, m.budget, m.floor = window, budget, floor
	m.p.Budget = budget
}

// read loads the conversation and merges the new messages with it.
// Summarised turns are never read again: the store stops at the
// summary's covered-through, which it reads with the metadata, in the
// same load. When the request rewrites turns the summary covers (an
// edit, a retry of a summarised exchange), the summary no longer holds,
// and the context is built from the stored turns, read again without it.
func (m *maker) read(ctx context.Context) error {
	in := &m.in
	// An agent restarted its context from its own summary
	// (thread.Restarted): merged by restart.
	restarted := in.Thread != nil && in.Policy.Mode == history.Auto && len(in.New) > 0 && thread.Restarted(in.New[0].Raw)
	head := headFunc(ctx, in.Store, in.Key, 0)
	q := history.Query{MinMessages: len(in.New), Tokens: m.budget, MaxTurns: in.Policy.MaxTurns, FromCut: true,
		Summarized: !in.Policy.NoSummary, Lease: in.Lease}
	for {
		snap, err := m.load(ctx, q, restarted)
		if err != nil {
			return err
		}
		q = q.Resolve(&snap.Meta)
		if restarted {
			m.merged, m.replaced, err = restart(ctx, *in, in.New, snap, q.After, head)
		} else {
			m.merged, m.replaced, err = merge(in.Policy.Mode, in.New, snap, q.After, head, in.Retry)
		}
		if err != nil {
			return fmt.Errorf("%w: %w", ErrStore, err)
		}
		m.snap = snap
		if sup := m.merged.Supersede; q.After == 0 || sup == nil || sup.Seq >= q.After {
			return nil
		}
		q.After, q.Summarized = 0, false
	}
}

// load reads the conversation as q asks, further back when a retry or a
// restarted context needs it, and fails with a *SideError when the
// conversation makes the request a side call.
func (m *maker) load(ctx context.Context, q history.Query, restarted bool) (history.Snapshot, error) {
	in := &m.in
	snap, err := in.Store.Load(ctx, in.Key, q)
	if err == nil && snap.Meta.Last != nil && in.Retry.Possible() && len(snap.Tail) < len(in.New)+snap.Meta.Last.Messages && !snap.Complete {
		// A retry is merged against the history before the last
		// exchange: read far enough back to have it.
		q.MinMessages = len(in.New) + snap.Meta.Last.Messages
		snap, err = in.Store.Load(ctx, in.Key, q)
	}
	if err == nil && restarted {
		snap, err = readPastSession(ctx, in.Store, in.Key, q, snap)
	}
	if err != nil {
		return snap, fmt.Errorf("%w: %w", ErrStore, err)
	}
	if in.Thread != nil {
		if why := thread.After(in.Thread, snap.Meta.Tools); why != "" {
			return snap, &SideError{Reason: why}
		}
	}
	return snap, nil
}

// checkNew checks the merged new messages against the history (a tool
// result must answer a call), an orphan's Index counted among in.New.
func (m *maker) checkNew() error {
	err := history.CheckNew(m.merged.History, m.merged.New)
	if err == nil {
		return nil
	}
	var oe *history.OrphanResultError
	if errors.As(err, &oe) {
		return &history.OrphanResultError{Index: len(m.in.New) - len(m.merged.New) + oe.Index}
	}
	return err
}

// commitFacts sets what the commit needs of the read: the version it
// read, what the request supersedes or replaces, and whether it seals
// an idle episode.
func (m *maker) commitFacts() {
	p, snap := m.p, m.snap
	p.Meta, p.Version, p.Supersede, p.Replaced = snap.Meta, snap.Meta.Version, m.merged.Supersede, m.replaced
	p.ExchangeHash = history.HashMessages(m.merged.New)
	m.stored = snap
	if m.replaced {
		m.stored, _ = snap.WithoutLast()
	}
	pol := &m.in.Policy
	p.Seal = pol.IdleTimeout > 0 && len(m.merged.New) > 0 && idle(&m.stored.Meta, pol.IdleTimeout, m.in.Now)
}

// pastSummary returns the merged history the summary does not cover.
// The summary stands in for every message up to its Through, unless the
// request rewrites one of them (the summary is then dropped by the
// commit, see history.Apply).
func (m *maker) pastSummary() []history.Message {
	hist := m.merged.History
	s := m.stored.Meta.Summary
	if s == nil || m.in.Policy.NoSummary || (m.p.Supersede != nil && m.p.Supersede.Seq < s.Through) {
		return hist
	}
	m.p.Summary = s
	m.summaryTurns = s.Turns
	i := 0
	for i < len(hist) && hist[i].Seq <= s.Through {
		i++
	}
	return hist[i:]
}

// fresh numbers and counts the new messages, once: it returns them as
// sent (the current turn goes whole) and sets Plan.Fresh to their stored
// form (long tool results cut). None of them stored before: the client
// began a context of its own (a new process or session of an agent's, or
// its context restarted from its summary), which the commit remembers
// (Meta.Session). The conversation's preamble the request repeats (kept
// once, see history.Merged.Preamble) does not make it a resend.
func (m *maker) fresh() []history.Message {
	news, merged := m.in.New, m.merged.New
	opens := len(news) > 0 && len(merged) == len(news)
	if m.merged.Preamble != nil && len(merged) == len(news)-1 {
		opens = true
	}
	m.next = max(m.snap.Meta.NextSeq, 1)
	sendNew := make([]history.Message, len(merged))
	m.p.Fresh = make([]history.Message, len(merged))
	for i, msg := range merged {
		msg.Seq = m.next + uint64(i)
		if i == 0 && opens {
			msg.Flags |= history.Opening
		}
		msg.Tokens = Count(m.count, m.enc, msg.Protocol, msg.Raw)
		sendNew[i] = msg
		m.p.Fresh[i] = m.stored1(msg)
	}
	return sendNew
}

// stored1 returns a new message in its stored form: a long tool result
// cut, and Raw copied (a request body does not outlive its handler).
func (m *maker) stored1(msg history.Message) history.Message {
	if lim := m.in.Policy.StoredToolResultChars; lim > 0 && msg.Role == wire.RoleTool {
		if cut, ok := msg.Codec().CutResults(msg.Raw, lim, history.StorageMarker); ok {
			msg.Raw = cut
			msg.Tokens = Count(m.count, m.enc, msg.Protocol, cut)
		}
	}
	msg.Raw = bytes.Clone(msg.Raw)
	return msg
}

// buildWindow builds the window of turns to curate, and places the
// conversation's preamble. The preamble, which the request repeats and
// which is stored once, goes first in every context (after the summary),
// as the agent sends it with every request: it is counted with the fixed
// part when the summary covers it or the cut passed it, and put back if
// curation drops it (the budget bounds what Recall adds, never what the
// client sends).
func (m *maker) buildWindow(hist, sendNew []history.Message) {
	cut := m.stored.Meta.Cut
	if m.p.Supersede != nil && cut > m.p.Supersede.Seq {
		cut = 0
	}
	m.w = history.NewWindow(hist, sendNew, cut, m.stored.Meta.Turns)
	m.pre = m.merged.Preamble
	if m.pre != nil && m.p.Supersede != nil && m.p.Supersede.Seq < m.pre.Seq {
		m.pre = nil // the request rewrites it
	}
	if m.pre != nil && !opensWith(m.w, m.pre.Seq) {
		m.fixed += m.pre.Tokens
	}
}

// injectSummary makes the summary's message, with the role of the
// client's first instruction ("system" when there is none). The summary
// must fit beside the instructions and the current turn (which is never
// dropped; the context call, current false, has none), under the budget
// or, when they fill it, the floor: one that does not (stored before
// summaries were bounded, imported, or a budget lowered since) is sent
// cut, or left out, never allowed to make the conversation unusable.
func (m *maker) injectSummary(current bool) {
	p := m.p
	if p.Summary == nil {
		return
	}
	role := chat.RoleSystem
	if len(m.in.Instructions) > 0 {
		role = m.in.Instructions[0].Role
	}
	raw := injected(m.in.Key, &m.stored.Meta, role)
	m.summary = Message{Kind: SummaryMessage, Role: role, Raw: raw, Tokens: m.fixedCount.Message(m.enc, raw)}
	turn := 0
	if n := len(m.w.Turns); n > 0 && current {
		turn = m.w.Turns[n-1].Tokens
	}
	if room := max(m.budget, m.floor) - m.fixed - turn; m.budget > 0 && m.summary.Tokens > room {
		m.cutSummary(role, room)
	}
	if p.Summary != nil {
		m.fixed += m.summary.Tokens
	}
}

// cutSummary cuts the summary's message to room (and
// Policy.SummaryMaxTokens), or leaves the summary out when less than
// minSummaryTokens of it would fit.
func (m *maker) cutSummary(role string, room int) {
	p := m.p
	limit := room
	if most := m.in.Policy.SummaryMaxTokens; most > 0 {
		limit = min(limit, most)
	}
	text, n := "", 0
	if limit >= minSummaryTokens {
		text, n = FitSummary(m.count, m.enc, role, p.Summary.Text, limit)
	}
	if text == "" {
		p.Summary, p.SummaryOmitted = nil, true
		return
	}
	m.summary.Raw, m.summary.Tokens, p.SummaryCut = Inject(role, text), n, true
}

// curate curates the window to the budget, puts the preamble back where
// curation dropped it, and reports what it did.
func (m *maker) curate() ([]history.Message, error) {
	w, p, count, enc := m.w, m.p, m.count, m.enc
	w.Budget, w.Fixed, w.Floor = m.budget, m.fixed, m.floor
	w.Window, w.Completion = m.window, m.in.MaxTokens
	w.Count = func(msg *history.Message) int { return Count(count, enc, msg.Protocol, msg.Raw) }
	pre := m.pre
	inWindow := pre != nil && opensWith(w, pre.Seq)
	sent, err := history.Curate(w, m.in.Policy.Strategy)
	if err != nil {
		return nil, err
	}
	if pre != nil && (len(sent) == 0 || sent[0].Seq != pre.Seq) {
		sent = slices.Insert(sent, 0, *pre)
		if inWindow {
			w.Report.Tokens += pre.Tokens
		}
	}
	p.Report = w.Report
	if w.Cut != m.stored.Meta.Cut {
		p.Cut = w.Cut
	}
	p.Pending = max(0, w.Report.StoredTurns-m.summaryTurns)
	p.Fits = w.Report.IncludedTurns >= p.Pending
	return sent, nil
}

// lay lays out the messages to send: the instructions, the summary, the
// curated history and the new messages.
func (m *maker) lay(sent []history.Message) (*Plan, error) {
	p, instr := m.p, m.in.Instructions
	if len(instr)+len(sent) == 0 {
		return nil, ErrNothingToSend
	}
	p.box = messageArrays.Get(len(instr) + 1 + len(sent))
	p.Messages = *p.box
	for _, msg := range instr {
		p.Messages = append(p.Messages, Message{Kind: Instruction, Role: msg.Role, Protocol: msg.Protocol, Raw: msg.Raw,
			Tokens: Count(m.fixedCount, m.enc, msg.Protocol, msg.Raw)})
	}
	if p.Summary != nil {
		p.Messages = append(p.Messages, m.summary)
	}
	for i := range sent {
		msg := &sent[i] // not a copy: the stored messages are cold, and large
		k, raw := History, msg.Raw
		if msg.Seq >= m.next {
			k = New
		} else {
			// The client's old cache hints are left out of replayed
			// history: they marked its request then, and agents move them
			// to their newest message on every call.
			raw = msg.WithoutCacheHints()
		}
		p.Messages = append(p.Messages, Message{Kind: k, Role: msg.Role, Protocol: msg.Protocol, Raw: raw, Tokens: msg.Tokens, Seq: msg.Seq})
	}
	return p, nil
}
