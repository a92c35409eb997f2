package api

import (
	"bytes"
	"encoding/json"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/tokens"
	"github.com/recallproxy/recall/wire"
)

// ExchangeMessage is one message an exchange sent, rebuilt from the
// store as curation sent it: Content is the stored JSON with the tool
// results cut as they were cut (Cut), the calls repair left out left out
// (Repaired) and the client's old cache hints left out, in the protocol
// it is stored in. Content is null where the message is not stored (the
// instructions, never stored; new messages of an exchange that stored
// nothing), no longer shown (Forgotten: forgotten or erased since),
// replaced (Replaced: a summary a later one replaced, or one dropped
// since, to be made again) or left out whole by repair.
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
	Replaced  bool            `json:"replaced,omitempty"`
	Cut       bool            `json:"cut,omitempty"`
	Repaired  bool            `json:"repaired,omitempty"`
	// Tokens is the instructions' token count (the only thing kept of
	// them); 0 for the others.
	Tokens int `json:"tokens,omitempty"`
}

// Sent is the context an exchange sent, rebuilt as its upstream's
// protocol carried it: Instructions are what that protocol sends apart
// from the conversation (the summary: chat completions' leading system
// message, Anthropic's system, ...), Messages the conversation, each as
// the upstream's codec wrote it (the stored JSON where every message was
// in the upstream's protocol, else every one through the canonical
// model) and its body carries it (wire.Signer: a Gemini call that lost
// its signature signed with Google's stand-in), exactly as the proxy
// encodes a planned context, with Recall's cache breakpoint where the
// request carried it (the record's cache_breakpoint, wire.EndMarker).
// The client's instructions are never stored: they are not among
// Instructions (the record's tokens.instructions counts them); an
// Anthropic turn's two result messages are not joined (where Recall's
// history tools answered some of its calls, the client the others).
// Complete reports that nothing else is missing: no message sent was
// forgotten, erased or replaced since, or never stored.
type Sent struct {
	Protocol     string            `json:"protocol"`
	Instructions []json.RawMessage `json:"instructions"`
	Messages     []json.RawMessage `json:"messages"`
	Complete     bool              `json:"complete"`
}

// renderExchange rebuilds what r sent from the store and from what r
// kept of curation's decisions: the instructions as one entry with their
// tokens (never stored), the summary if the stored one is still the one
// sent (cut again as it was cut), the stored messages of r.Included,
// each cut (r.Cut) and repaired (r.RepairedCalls) as curation did, then
// the new messages (the first of r.Committed); and the same context as
// the upstream's codec encoded it (Sent, nil for a summariser's call or a
// side call, whose messages are not the conversation's).
func (c *call) renderExchange(r *history.ExchangeRecord, meta *history.Meta) ([]ExchangeMessage, *Sent, error) {
	rb := rebuild{out: []ExchangeMessage{}, complete: true}
	if r.Tokens.Instructions > 0 {
		rb.out = append(rb.out, ExchangeMessage{Kind: "instruction", Tokens: r.Tokens.Instructions})
	}
	var summary []byte // as sent, in chat completions' JSON
	if r.Summary != nil {
		var m ExchangeMessage
		m, summary = c.summaryEntry(r, meta)
		if m.Replaced {
			rb.complete = false
		}
		rb.out = append(rb.out, m)
	}
	newSeqs := newSeqsOf(r)
	spans := append([]history.Span(nil), r.Included...)
	if len(newSeqs) > 0 {
		spans = append(spans, history.Span{From: newSeqs[0], To: newSeqs[len(newSeqs)-1]})
	}
	var err error
	if rb.stored, err = c.storedIn(spans); err != nil {
		return nil, nil, err
	}
	rb.cuts = make(map[uint64]history.CutResult, len(r.Cut))
	for _, cr := range r.Cut {
		rb.cuts[cr.Seq] = cr
	}
	for _, sp := range r.Included {
		for s := sp.From; s <= sp.To; s++ {
			rb.add("history", s)
		}
	}
	for _, s := range newSeqs {
		rb.add("new", s)
	}
	for range r.NewMessages - len(newSeqs) { // sent, never stored
		rb.complete = false
		rb.out = append(rb.out, ExchangeMessage{Kind: "new"})
	}
	if r.RepairedCalls > 0 {
		rb.repair()
	}
	for i, m := range rb.conv {
		e := &rb.out[rb.at[i]]
		e.Content, e.Text = json.RawMessage(m.Raw), string(m.Text())
	}
	if r.Kind == "summary" || r.Kind == "side" {
		return rb.out, nil, nil
	}
	return rb.out, c.sentAs(r, summary, rb.conv, rb.complete), nil
}

// summaryEntry is the entry of the summary r sent: its text as sent
// (in chat completions' JSON, cut again as it was cut) when the stored
// summary (meta's) is still the one sent, else marked replaced.
func (c *call) summaryEntry(r *history.ExchangeRecord, meta *history.Meta) (ExchangeMessage, []byte) {
	role := r.Summary.Role
	if role == "" {
		role = wire.RoleSystem
	}
	m := ExchangeMessage{Kind: "summary", Role: ptr(role), Protocol: ptr(wire.ChatCompletions.String())}
	s := meta.Summary
	if s == nil || s.Through != r.Summary.Through {
		m.Replaced = true
		return m, nil
	}
	text := s.Text
	if r.Summary.Cut {
		text = c.fitSummary(r, role, text)
	}
	summary := plan.Inject(role, text)
	m.Content, m.Text = summary, string(wire.For(wire.ChatCompletions).Text(nil, summary))
	return m, summary
}

// newSeqsOf returns the seqs of r's new messages that were stored: the
// first of r.Committed, at most r.NewMessages.
func newSeqsOf(r *history.ExchangeRecord) []uint64 {
	var newSeqs []uint64
	if len(r.Committed) > 0 {
		for s := r.Committed[0].From; s <= r.Committed[0].To && len(newSeqs) < r.NewMessages; s++ {
			newSeqs = append(newSeqs, s)
		}
	}
	return newSeqs
}

// rebuild is renderExchange's work in progress.
type rebuild struct {
	out      []ExchangeMessage
	complete bool // every message sent is rebuilt as sent
	stored   map[uint64]history.Message
	cuts     map[uint64]history.CutResult // by seq
	// conv are the conversation's messages as sent, at[i] the entry of
	// conv[i] in out.
	conv []history.Message
	at   []int
}

// add adds the entry of the message at seq, of kind "history" or "new":
// forgotten when it is not stored or no longer active; a history message
// as plan.Make sends it, cut by the strategy, then without the client's
// old cache hints.
func (rb *rebuild) add(kind string, seq uint64) {
	m := ExchangeMessage{Seq: ptr(seq), Kind: kind, Forgotten: true}
	msg, ok := rb.stored[seq]
	if ok {
		m.Role, m.Protocol = ptr(msg.Role), ptr(msg.Protocol.String())
	}
	if !ok || msg.Flags&(history.Forgotten|history.Erased) != 0 {
		rb.complete = false
		rb.out = append(rb.out, m)
		return
	}
	m.Forgotten = false
	if kind == "history" {
		codec := msg.Codec()
		if cr, ok := rb.cuts[seq]; ok {
			limit := cr.MaxChars
			if limit == 0 {
				limit = cr.CharsAfter // a record made before the limit was kept: exact for one result
			}
			if raw, ok := codec.CutResults(msg.Raw, limit, history.ContextMarker); ok {
				msg.Raw, m.Cut = raw, true
			}
		}
		msg.Raw = codec.WithoutCacheHints(msg.Raw)
	}
	rb.conv, rb.at = append(rb.conv, msg), append(rb.at, len(rb.out))
	rb.out = append(rb.out, m)
}

// repair repairs the conversation as curation did. Repair is a function
// of the messages: run on them as sent, it leaves out what it left out
// then; each entry it changed or left out is marked repaired.
func (rb *rebuild) repair() {
	repaired, _ := history.Repair(rb.conv, nil)
	bySeq := make(map[uint64][]byte, len(repaired))
	for _, m := range repaired {
		bySeq[m.Seq] = m.Raw
	}
	kept := rb.conv[:0:0]
	keptAt := rb.at[:0:0]
	for i, m := range rb.conv {
		raw, ok := bySeq[m.Seq]
		if !ok {
			rb.out[rb.at[i]].Repaired = true // left out whole
			continue
		}
		if !bytes.Equal(raw, m.Raw) {
			m.Raw, rb.out[rb.at[i]].Repaired = raw, true
		}
		kept, keptAt = append(kept, m), append(keptAt, rb.at[i])
	}
	rb.conv, rb.at = kept, keptAt
}

// sentAs encodes the rebuilt context for r's upstream as the proxy's
// encodePlan does: the instructions (the ingress's, and the summary in
// chat completions') and the conversation each as stored when every
// message of it is in the upstream's protocol, else through the canonical
// model and the upstream's codec. nil if the protocols are unknown or the
// messages no longer encode.
func (c *call) sentAs(r *history.ExchangeRecord, summary []byte, conv []history.Message, complete bool) *Sent {
	up, ok := wire.Named(r.Upstream)
	in, ok2 := wire.Named(r.Ingress)
	if !ok || !ok2 {
		return nil
	}
	s := &Sent{Protocol: r.Upstream, Instructions: []json.RawMessage{}, Messages: []json.RawMessage{}, Complete: complete}
	instrSame := (r.Tokens.Instructions == 0 || in == up) && (summary == nil || up == wire.ChatCompletions)
	convSame := true
	for _, m := range conv {
		convSame = convSame && m.Protocol == up
	}
	codec := wire.For(up)
	signer, _ := codec.(wire.Signer)
	switch {
	case summary == nil:
	case instrSame:
		s.Instructions = append(s.Instructions, summary)
	default:
		cm, err := wire.For(wire.ChatCompletions).Decode(summary)
		if err != nil {
			return nil
		}
		enc, err := codec.Encode(nil, []wire.Message{cm})
		if err != nil {
			return nil
		}
		for _, e := range enc {
			s.Instructions = append(s.Instructions, e)
		}
	}
	if convSame {
		marker, _ := codec.(wire.EndMarker)
		for _, m := range conv {
			raw := m.Raw
			if marker != nil && r.CacheBreakpoint != 0 && m.Seq == r.CacheBreakpoint {
				raw = marker.MarkedEnd(raw) // the breakpoint the request carried
			}
			s.Messages = append(s.Messages, signed(signer, raw))
		}
		return s
	}
	canon := make([]wire.Message, 0, len(conv))
	for _, m := range conv {
		cm, err := m.Codec().Decode(m.Raw)
		if err != nil {
			return nil
		}
		canon = append(canon, cm)
	}
	enc, err := codec.Encode(nil, canon)
	if err != nil {
		return nil
	}
	for _, e := range enc {
		s.Messages = append(s.Messages, signed(signer, e))
	}
	return s
}

// signed is raw as the upstream's body carries it (wire.Signer), raw
// itself for a protocol that sends its messages as encoded.
func signed(s wire.Signer, raw []byte) json.RawMessage {
	if s == nil {
		return raw
	}
	return s.Signed(raw)
}

// fitSummary cuts text as plan.Make cut the summary r sent: to the
// tokens it was sent in, counted as the chat path counts it.
func (c *call) fitSummary(r *history.ExchangeRecord, role, text string) string {
	override := ""
	if c.caller.Tenant != nil {
		override = c.caller.Tenant.History.Encoding
	}
	cut, _ := plan.FitSummary(c.h.cfg.Counter, tokens.For(r.Model, override), role, text, r.Summary.Tokens)
	return cut
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
