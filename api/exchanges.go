package api

import (
	"strconv"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
)

// Page sizes of the exchanges call (a conversation keeps
// history.MaxExchangeRecords).
const (
	defaultExchanges = 20
	maxExchanges     = history.MaxExchangeRecords
)

// Exchange is an exchange record as the API answers it: the stored record
// and, with ?render=messages, the messages it sent rebuilt from the store
// (see renderExchange).
type Exchange struct {
	history.ExchangeRecord
	Messages []ExchangeMessage `json:"messages,omitempty"`
	Sent     *Sent             `json:"sent,omitempty"`
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
		if x.Messages, x.Sent, err = c.renderExchange(&x.ExchangeRecord, &meta); err != nil {
			return err
		}
	}
	return c.reply(200, x)
}
