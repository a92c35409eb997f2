package api

import (
	"context"
	"strconv"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
)

// settleWait bounds how long the exchanges calls wait for the records of
// the exchanges that answered before them (settle): past it they answer
// what is stored.
const settleWait = time.Second

// settle waits, within settleWait, until the records of c's
// conversation's exchanges that have answered are stored. An exchange
// hands its record to the writer before it lets go of the
// conversation's lock, and a streamed one lets its client read the last
// event a moment before that: taking the lock (and letting go at once)
// waits for it. Then the writer's queue, which gathers records for a
// batch, is flushed.
func (c *call) settle() {
	if c.h.cfg.FlushExchanges == nil {
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, settleWait)
	defer cancel()
	if release, err := c.h.cfg.Lock(ctx, c.key); err == nil {
		release()
	}
	if err := c.h.cfg.FlushExchanges(ctx); err != nil {
		c.h.log.Warn("exchange records not flushed before a read", "component", "api", "error", err.Error())
	}
}

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
	c.settle()
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
		threadOfRecord(&data[i].ExchangeRecord, c.key.Conversation)
	}
	return c.reply(200, listOf(data, more, func(v *Exchange) string { return v.ID }))
}

// threadOfRecord names the thread of r, a record of conversation conv,
// where r names none: a record of a subagent's thread (conv is its id)
// written before records named their thread, or a summariser's, belongs
// to that thread. Its reason stays unknown.
func threadOfRecord(r *history.ExchangeRecord, conv string) {
	if _, name, ok := history.SplitThread(conv); ok && r.Thread == "" {
		r.Thread = name
	}
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
	c.settle()
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
	threadOfRecord(&x.ExchangeRecord, c.key.Conversation)
	if render {
		if x.Messages, x.Sent, err = c.renderExchange(&x.ExchangeRecord, &meta); err != nil {
			return err
		}
	}
	return c.reply(200, x)
}
