package api

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/plan"
)

// Page sizes of the list calls.
const (
	defaultLimit = 20
	maxLimit     = 100
)

// statuses are the values of the list's status filter.
var statuses = []history.Status{history.StatusActive, history.StatusAwaiting, history.StatusIdle, history.StatusEnded}

// reply answers v as JSON with status.
func (c *call) reply(status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.rc.SetStatusCode(status)
	c.rc.SetContentType("application/json")
	c.rc.SetBody(b)
	return nil
}

// limit parses the limit argument: def when absent, else 1..most.
func (c *call) limit(def, most int) (int, error) {
	v := c.rc.QueryArgs().Peek("limit")
	if v == nil {
		return def, nil
	}
	n, err := strconv.Atoi(string(v))
	if err != nil || n < 1 || n > most {
		return 0, apierr.InvalidValue("limit", "Invalid 'limit': expected an integer from 1 to "+strconv.Itoa(most)+".")
	}
	return n, nil
}

// list serves GET /conversations?limit=&after=&status=.
func (c *call) list() error {
	limit, err := c.limit(defaultLimit, maxLimit)
	if err != nil {
		return err
	}
	args := c.rc.QueryArgs()
	q := history.ListQuery{Limit: limit, After: string(args.Peek("after"))}
	if q.After != "" && !history.ValidID(q.After) {
		return apierr.InvalidValue("after", "Invalid 'after': expected the id of the last conversation of the previous page.")
	}
	if s := string(args.Peek("status")); s != "" {
		want := history.Status(s)
		known := false
		for _, st := range statuses {
			known = known || st == want
		}
		if !known {
			return apierr.InvalidValue("status", "Invalid 'status': expected one of active, awaiting_tool_results, idle, ended.")
		}
		q.Keep = func(m *history.Meta) bool { return m.Status == want || m.Status == "" && want == history.StatusActive }
	}
	page, more, err := c.h.cfg.Store.List(c.ctx, c.key.Tenant, q)
	if err != nil {
		return err
	}
	data := make([]Conversation, len(page))
	for i := range page {
		data[i] = conversationOf(page[i].Conversation, &page[i].Meta)
	}
	return c.reply(200, listOf(data, more, func(v *Conversation) string { return v.ID }))
}

// show serves GET /conversations/{id}.
func (c *call) show() error {
	m, err := c.meta()
	if err != nil {
		return err
	}
	return c.reply(200, c.detail(&m))
}

func (c *call) detail(m *history.Meta) Detail {
	h := &c.caller.Tenant.History
	budget := h.BudgetTokens
	if budget <= 0 {
		learned := 0
		if cal := c.h.cfg.Calibration; cal != nil && m.Model != "" {
			_, learned = cal.Learned(c.caller.Tenant.ID, m.Model)
		}
		budget = plan.DefaultBudget(m.Model, h.ModelWindows, learned)
	}
	d := detailOf(c.key.Conversation, m, budget)
	if cal := c.h.cfg.Calibration; cal != nil && m.Model != "" {
		got, _ := cal.Get(c.caller.Tenant.ID, m.Model)
		d.Calibration = &Calibrated{Model: got.Model, Ratio: got.Ratio, Samples: got.Samples}
	}
	return d
}

// Deleted is the answer to a DELETE.
type Deleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

// delete serves DELETE /conversations/{id}: every trace of it, in the
// store's one atomic erase, under the conversation's lock so that no chat
// exchange commits into it halfway.
//
// A conversation's threads (its agents' subagents, see package thread)
// go with it, each under its own lock, before it: a delete cut short
// leaves the conversation, and repeating it finishes the work.
func (c *call) delete() error {
	release, err := c.lock()
	if err != nil {
		return err
	}
	defer release()
	_, err = c.meta()
	stored := err == nil
	if err != nil && !errors.Is(err, apierr.ConversationNotFound) {
		return err
	}
	threads, err := c.threadIDs()
	if err != nil {
		return err
	}
	if !stored && len(threads) == 0 {
		return apierr.ConversationNotFound
	}
	for _, id := range threads {
		k := history.Key{Tenant: c.key.Tenant, Conversation: id}
		release, err := c.h.cfg.Lock(c.ctx, k)
		if err != nil {
			return apierr.Busy
		}
		err = c.h.cfg.Store.Delete(c.ctx, k)
		release()
		if err != nil {
			return err
		}
	}
	if stored {
		if err := c.h.cfg.Store.Delete(c.ctx, c.key); err != nil {
			return err
		}
	}
	return c.reply(200, Deleted{ID: c.key.Conversation, Object: "conversation.deleted", Deleted: true})
}

// threadIDs returns the ids of the conversation's threads (none for a
// thread's own id, or a store that keeps none apart).
func (c *call) threadIDs() ([]string, error) {
	tl, ok := c.h.cfg.Store.(history.ThreadLister)
	if _, _, thread := history.SplitThread(c.key.Conversation); !ok || thread {
		return nil, nil
	}
	ids, err := tl.Threads(c.ctx, c.key)
	if errors.Is(err, errors.ErrUnsupported) {
		return nil, nil
	}
	return ids, err
}

// threads serves GET /conversations/{id}/threads: the conversation's
// threads, each as a conversation (its id is the thread's), oldest name
// first, in one page.
func (c *call) threads() error {
	ids, err := c.threadIDs()
	if err != nil {
		return err
	}
	data := make([]Conversation, 0, len(ids))
	for _, id := range ids {
		snap, err := c.h.cfg.Store.Load(c.ctx, history.Key{Tenant: c.key.Tenant, Conversation: id}, history.Query{MinMessages: 1, MaxTurns: 1})
		if err != nil {
			return err
		}
		if snap.Meta.Version == 0 {
			continue // deleted since it was listed
		}
		data = append(data, conversationOf(id, &snap.Meta))
	}
	return c.reply(200, listOf(data, false, func(v *Conversation) string { return v.ID }))
}
