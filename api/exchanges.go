package api

import (
	"encoding/json"
	"strconv"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/wire"
)

// Page sizes of the exchanges call (a conversation keeps
// history.MaxExchangeRecords).
const (
	defaultExchanges = 20
	maxExchanges     = history.MaxExchangeRecords
)

// Exchange is an exchange record as the API answers it: the stored record
// and, with ?render=messages, the messages it sent rebuilt from the store.
type Exchange struct {
	history.ExchangeRecord
	Messages []ExchangeMessage `json:"messages,omitempty"`
}

// ExchangeMessage is one message an exchange sent, as the store holds it
// now: Content is its stored JSON, null where it is not stored (the
// instructions, never stored; new messages of an exchange that stored
// nothing) or no longer shown (Forgotten: forgotten or erased since).
type ExchangeMessage struct {
	Seq      *uint64 `json:"seq"`
	Kind     string  `json:"kind"`
	Role     *string `json:"role"`
	Protocol *string `json:"protocol"`
	// Text is what Protocol's codec reads of Content, "" where Content
	// is null.
	Text      string          `json:"text"`
	Content   json.RawMessage `json:"content"`
	Forgotten bool            `json:"forgotten"`
	// Tokens is the instructions' token count (the only thing kept of
	// them); 0 for the others.
	Tokens int `json:"tokens,omitempty"`
}

// exchanges serves GET /conversations/{id}/exchanges?limit=&after=:
// the conversation's exchange records, newest first.
func (c *call) exchanges() error {
	limit, err := c.limit(defaultExchanges, maxExchanges)
	if err != nil {
		return err
	}
	after := string(c.rc.QueryArgs().Peek("after"))
	if after != "" && !history.ValidExchangeID(after) {
		return apierr.InvalidValue("after", "Invalid 'after': expected the id of the last exchange of the previous page.")
	}
	if _, err := c.meta(); err != nil {
		return err
	}
	recs, err := c.h.cfg.Store.Exchanges(c.ctx, c.key, after, limit+1)
	if err != nil {
		return err
	}
	more := len(recs) > limit
	recs = recs[:min(len(recs), limit)]
	data := make([]Exchange, len(recs))
	for i := range recs {
		data[i] = Exchange{ExchangeRecord: recs[i]}
		data[i].Object = "conversation.exchange"
	}
	return c.reply(200, listOf(data, more, func(v *Exchange) string { return v.ID }))
}

// exchange serves GET /conversations/{id}/exchanges/{xid}?render=messages.
func (c *call) exchange() error {
	render := false
	switch string(c.rc.QueryArgs().Peek("render")) {
	case "":
	case "messages":
		render = true
	default:
		return apierr.InvalidValue("render", "Invalid 'render': expected messages.")
	}
	if !history.ValidExchangeID(c.xid) {
		return apierr.ExchangeNotFound
	}
	meta, err := c.meta()
	if err != nil {
		return err
	}
	// Records are kept by id: the newest before the next id is this one,
	// if the conversation keeps it.
	n, _ := strconv.ParseUint(c.xid[4:], 16, 64)
	recs, err := c.h.cfg.Store.Exchanges(c.ctx, c.key, history.NewExchangeID(n+1), 1)
	if err != nil {
		return err
	}
	if len(recs) == 0 || recs[0].ID != c.xid {
		return apierr.ExchangeNotFound
	}
	x := Exchange{ExchangeRecord: recs[0]}
	x.Object = "conversation.exchange"
	if render {
		if x.Messages, err = c.renderExchange(&x.ExchangeRecord, &meta); err != nil {
			return err
		}
	}
	return c.reply(200, x)
}

// renderExchange rebuilds the messages r sent from the store: the
// instructions as one entry with their tokens (never stored), the
// summary if the stored one is still the one sent, the stored messages
// of r.Included, then the new messages (the first of r.Committed).
func (c *call) renderExchange(r *history.ExchangeRecord, meta *history.Meta) ([]ExchangeMessage, error) {
	out := []ExchangeMessage{}
	if r.Tokens.Instructions > 0 {
		out = append(out, ExchangeMessage{Kind: "instruction", Tokens: r.Tokens.Instructions})
	}
	if r.Summary != nil {
		m := ExchangeMessage{Kind: "summary", Role: ptr(wire.RoleSystem), Protocol: ptr(wire.ChatCompletions.String()), Forgotten: true}
		if s := meta.Summary; s != nil && s.Through == r.Summary.Through {
			m.Content, m.Forgotten = plan.Inject(wire.RoleSystem, s.Text), false
			m.Text = string(wire.For(wire.ChatCompletions).Text(nil, m.Content))
		}
		out = append(out, m)
	}
	var newSeqs []uint64
	if len(r.Committed) > 0 {
		for s := r.Committed[0].From; s <= r.Committed[0].To && len(newSeqs) < r.NewMessages; s++ {
			newSeqs = append(newSeqs, s)
		}
	}
	spans := append([]history.Span(nil), r.Included...)
	if len(newSeqs) > 0 {
		spans = append(spans, history.Span{From: newSeqs[0], To: newSeqs[len(newSeqs)-1]})
	}
	stored, err := c.storedIn(spans)
	if err != nil {
		return nil, err
	}
	add := func(kind string, seq uint64) {
		seq2 := seq
		m := ExchangeMessage{Seq: &seq2, Kind: kind, Forgotten: true}
		if msg, ok := stored[seq]; ok {
			m.Role, m.Protocol = ptr(msg.Role), ptr(msg.Protocol.String())
			if msg.Flags&(history.Forgotten|history.Erased) == 0 {
				m.Content, m.Text, m.Forgotten = json.RawMessage(msg.Raw), string(msg.Text()), false
			}
		}
		out = append(out, m)
	}
	for _, sp := range r.Included {
		for s := sp.From; s <= sp.To; s++ {
			add("history", s)
		}
	}
	for _, s := range newSeqs {
		add("new", s)
	}
	for range r.NewMessages - len(newSeqs) { // sent, never stored
		out = append(out, ExchangeMessage{Kind: "new"})
	}
	return out, nil
}

// storedIn reads the stored messages (inactive ones too) whose seqs fall
// in spans (ascending), by seq. Erased messages are not stored.
func (c *call) storedIn(spans []history.Span) (map[uint64]history.Message, error) {
	out := map[uint64]history.Message{}
	if len(spans) == 0 {
		return out, nil
	}
	i := 0
	err := c.h.cfg.Store.Messages(c.ctx, c.key, spans[0].From-1, true, func(m history.Message) bool {
		for i < len(spans) && m.Seq > spans[i].To {
			i++
		}
		if i == len(spans) {
			return false
		}
		if m.Seq >= spans[i].From {
			out[m.Seq] = copyMessage(m)
		}
		return true
	})
	return out, err
}

func ptr[T any](v T) *T { return &v }
