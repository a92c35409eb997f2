package history

import (
	"math/rand/v2"
	"time"

	"github.com/recallproxy/recall/wire"
)

// Apply computes the effect of c on a conversation whose metadata is m:
// the new metadata and every message record to write, in order (the
// appended messages: a supersede is a range in the metadata, not a write
// per message). superseded are the active messages after c.Supersede.Seq,
// as the store read them (nil when c.Supersede is nil), for the counters.
// Apply is the one place the metadata counters change, so every Store
// implementation keeps them the same way.
func Apply(m Meta, c Change, superseded []Message) (Meta, []Message) {
	if c.onlySummary() {
		landSummary(&m, c.Summary)
		return m, nil
	}
	writes := make([]Message, 0, len(c.Append))
	m.begin(c.Now, c.Incarnation)
	if c.Seal {
		m.seal(c.Now)
		if len(c.Append) == 0 {
			m.Status = StatusEnded
		}
	}
	if b := c.Supersede; b != nil {
		m.supersede(b, superseded)
	}
	if f := c.Forget; f != nil && len(f.Ranges) > 0 {
		m.forget(f)
	}
	var last *Exchange
	if c.Exchange != nil && len(c.Append) > 0 {
		last = &Exchange{ExchangeID: *c.Exchange, From: m.NextSeq, Messages: len(c.Append),
			Before: m.head(), Turns: m.Turns, Tokens: m.Tokens}
	}
	m.Last = last
	if !c.Import && len(c.Append) > 0 && c.Append[0].Flags&Opening != 0 {
		m.Session = Session{From: m.NextSeq, Before: m.head(), Messages: m.Messages, Tokens: m.Tokens}
	}
	if c.Import {
		writes = importMessages(&m, c.Append, writes)
	} else {
		writes = m.appendMessages(c.Append, time.Unix(0, c.Now), writes)
	}
	for i := range writes {
		writes[i].learn() // once, for every request that replays it
	}
	m.settle(&c)
	return m, writes
}

// begin starts a new conversation (at now, with incarnation, or a
// random one when 0), and the first episode of one stored before
// episodes.
func (m *Meta) begin(now int64, incarnation uint64) {
	if m.NextSeq == 0 {
		m.NextSeq = 1
		m.CreatedAt = now
		m.Status = StatusActive
		m.Incarnation = incarnation
		for m.Incarnation == 0 { // 0 is the value of records older than it
			m.Incarnation = rand.Uint64()
		}
	}
	if m.Episode == 0 { // a new conversation, or one stored before episodes
		m.Episode, m.EpisodeFrom = 1, 1
	}
}

// supersede removes the active messages after b (superseded, as the
// store read them) from the counters and makes them a gap; the summary
// and the session's start go when they covered any of them.
func (m *Meta) supersede(b *Boundary, superseded []Message) {
	turn := b.Turn
	for _, s := range superseded {
		m.Messages--
		m.Tokens -= s.Tokens
		if s.Turn != turn { // it opened a turn (a user message, or a first message of another role)
			m.Turns--
			turn = s.Turn
		}
	}
	if b.Seq+1 <= m.NextSeq-1 {
		m.addGap(b.Seq+1, m.NextSeq-1, Superseded)
	}
	m.LastTurn = b.Turn
	m.Epoch++
	if m.Cut > b.Seq {
		m.Cut = 0
	}
	if m.Summary != nil && b.Seq < m.Summary.Through {
		// The client rewrote messages the summary covers: what it
		// says of them no longer holds. Rebuilt by the next compaction.
		m.Summary = nil
	}
	if m.Session.Known() && b.Seq < m.Session.Before.Seq {
		// The client rewrote messages from before its context began:
		// where that context began is no longer known.
		m.Session = Session{}
	}
	if m.Messages == 0 {
		m.FirstHash = 0
	}
}

// forget makes f's ranges gaps (erased for a hard forget) and takes
// their messages from the counters; the summary goes when it covered
// any of them.
func (m *Meta) forget(f *Forgetting) {
	flag := Forgotten
	if f.Hard {
		flag = Erased
	}
	for _, r := range f.Ranges {
		m.addGap(r.From, r.To, flag)
	}
	m.Messages -= f.Messages
	m.Tokens -= f.Tokens
	m.Turns -= f.Turns
	m.FirstHash, m.LastTurn = f.FirstHash, f.LastTurn
	m.Epoch++
	if m.Summary != nil && f.Ranges[0].From <= m.Summary.Through {
		m.Summary = nil // rebuilt from what remains by the next compaction
	}
}

// appendMessages numbers msgs after m's newest (seq, turn: a user
// message opens one, as does a first message; the current episode),
// keeps only their recorded flags, dates them now, counts them, and
// appends them to writes.
func (m *Meta) appendMessages(msgs []Message, now time.Time, writes []Message) []Message {
	for _, a := range msgs {
		a.Seq = m.NextSeq
		m.NextSeq++
		if a.Role == wire.RoleUser || m.LastTurn == 0 {
			m.LastTurn++
			m.Turns++
		}
		a.Turn = m.LastTurn
		a.Episode = m.Episode
		a.Flags &= Recorded
		a.CreatedAt = now
		if m.Messages == 0 {
			m.FirstHash = a.Hash
		}
		m.Messages++
		m.Tokens += a.Tokens
		writes = append(writes, a)
	}
	return writes
}

// settle sets what c carries besides its messages (cut, status, model,
// tools, response id, summary, metadata, usage) and moves m's version.
func (m *Meta) settle(c *Change) {
	if c.Cut > 0 {
		m.Cut = c.Cut
	}
	if n := len(c.Append); n > 0 {
		m.Status = StatusActive
		if last := c.Append[n-1]; last.Active() && hasCalls(&last) {
			m.Status = StatusAwaiting
		}
	}
	if c.Model != "" {
		m.Model = c.Model
	}
	if c.Tools {
		m.Tools = true
	}
	if c.ResponseID != "" {
		m.ResponseID = c.ResponseID
	}
	if c.Summary != nil {
		landSummary(m, c.Summary)
	}
	if c.Metadata != nil {
		m.Metadata = *c.Metadata
	}
	m.PromptTokens += int64(c.PromptTokens)
	m.CompletionTokens += int64(c.CompletionTokens)
	m.UpdatedAt = c.Now
	m.Version++
}

// head returns the newest active message's position (Seq 0: none).
func (m *Meta) head() Boundary {
	if m.Messages == 0 {
		return Boundary{}
	}
	seq := m.NextSeq - 1
	if g, ok := m.InGap(seq); ok {
		seq = g.From - 1
	}
	return Boundary{Seq: seq, Turn: m.LastTurn}
}

// importMessages appends msgs to an empty conversation's m as they were
// exported: each keeps its Seq, Turn, Episode, Flags and CreatedAt, and
// inactive ones become gaps.
func importMessages(m *Meta, msgs []Message, writes []Message) []Message {
	turns := map[uint32]bool{}
	for i, a := range msgs {
		if i == 0 {
			m.CreatedAt = a.CreatedAt.UnixNano()
		}
		m.NextSeq = a.Seq + 1
		if a.Episode > m.Episode {
			m.Episode, m.EpisodeFrom = a.Episode, a.Seq
		}
		if flags := a.Flags & Inactive; flags != 0 {
			m.addGap(a.Seq, a.Seq, flags)
		} else {
			if m.Messages == 0 {
				m.FirstHash = a.Hash
			}
			m.Messages++
			m.Tokens += a.Tokens
			turns[a.Turn] = true
			m.LastTurn = a.Turn
		}
		a.Flags &= Recorded // the gaps say the rest
		writes = append(writes, a)
	}
	m.Turns = len(turns)
	return writes
}
