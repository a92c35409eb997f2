package api

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/tokens"
	"github.com/recallproxy/recall/wire"
)

// Page sizes of the messages call.
const (
	defaultMessages = 100
	maxMessages     = 1000
)

// messages serves GET /conversations/{id}/messages?after=&limit=&order=&include=.
// after is a sequence number: in ascending order the page starts after
// it, in descending order before it.
func (c *call) messages() error {
	limit, err := c.limit(defaultMessages, maxMessages)
	if err != nil {
		return err
	}
	args := c.rc.QueryArgs()
	var after uint64
	if v := args.Peek("after"); v != nil {
		if after, err = strconv.ParseUint(string(v), 10, 64); err != nil {
			return apierr.InvalidValue("after", "Invalid 'after': expected the seq of the last message of the previous page.")
		}
	}
	desc := false
	switch string(args.Peek("order")) {
	case "", "asc":
	case "desc":
		desc = true
	default:
		return apierr.InvalidValue("order", "Invalid 'order': expected asc or desc.")
	}
	var show history.Flags // inactive flags shown
	if v := string(args.Peek("include")); v != "" {
		for _, f := range strings.Split(v, ",") {
			switch f {
			case flagSuperseded:
				show |= history.Superseded
			case flagForgotten:
				show |= history.Forgotten
			default:
				return apierr.InvalidValue("include", "Invalid 'include': expected a comma-separated list of superseded, forgotten.")
			}
		}
	}
	if _, err := c.meta(); err != nil {
		return err
	}
	keep := func(m *history.Message) bool { return m.Active() || m.Flags&show != 0 }
	var page []history.Message
	more := false
	if !desc {
		err = c.h.cfg.Store.Messages(c.ctx, c.key, after, show != 0, func(m history.Message) bool {
			if !keep(&m) {
				return true
			}
			if len(page) == limit {
				more = true
				return false
			}
			page = append(page, copyMessage(m))
			return true
		})
	} else {
		// Newest first: the store walks oldest first, so keep the last
		// limit+1 before after in a ring.
		ring := make([]history.Message, 0, limit+1)
		n := 0
		err = c.h.cfg.Store.Messages(c.ctx, c.key, 0, show != 0, func(m history.Message) bool {
			if after > 0 && m.Seq >= after {
				return false
			}
			if !keep(&m) {
				return true
			}
			if len(ring) < limit+1 {
				ring = append(ring, copyMessage(m))
			} else {
				ring[n%(limit+1)] = copyMessage(m)
			}
			n++
			return true
		})
		more = n > limit
		for i := 0; i < min(n, limit); i++ { // newest first
			page = append(page, ring[(n-1-i)%(limit+1)])
		}
	}
	if err != nil {
		return err
	}
	data := make([]Message, len(page))
	for i := range page {
		data[i] = messageOf(&page[i])
	}
	return c.reply(200, listOf(data, more, func(v *Message) uint64 { return v.Seq }))
}

// copyMessage copies m's Raw, which a store may reuse after its callback.
func copyMessage(m history.Message) history.Message {
	m.Raw = bytes.Clone(m.Raw)
	return m
}

// memorize serves POST /conversations/{id}/messages: {"messages":[…]}
// appended as turns without calling the model. The messages are
// validated as a chat request's are (chat.ParseRequest), tool pairing
// included against the stored history; instructions (system, developer)
// are refused, as the chat path never stores them. It creates the
// conversation if it does not exist.
func (c *call) memorize() error {
	body, err := c.body()
	if err != nil {
		return err
	}
	req, err := chat.ParseRequest(body)
	if err != nil {
		return err
	}
	for i, m := range req.Messages {
		if m.Role == chat.RoleSystem || m.Role == chat.RoleDeveloper {
			return apierr.InvalidValue("messages["+strconv.Itoa(i)+"].role",
				"Invalid 'messages["+strconv.Itoa(i)+"].role': memorize stores user, assistant and tool messages; instructions (system, developer) are sent with each chat request and never stored.")
		}
	}
	t := c.caller.Tenant.History
	enc := tokens.For(req.Model, t.Encoding)
	fresh := make([]history.Message, len(req.Messages))
	for i, m := range req.Messages {
		raw := bytes.Clone(m.Raw) // the body does not outlive the handler
		if most := t.StoredToolResultChars; most > 0 && m.Role == wire.RoleTool {
			if cut, ok := chat.CutContent(raw, most, history.StorageMarker); ok {
				raw = cut
			}
		}
		fresh[i] = history.Message{Role: m.Role, Raw: raw, Hash: chat.Hash(raw), Tokens: c.h.cfg.Counter.Message(enc, raw)}
	}

	release, err := c.lock()
	if err != nil {
		return err
	}
	defer release()
	// The last stored turn, whole: the tool results among the new
	// messages may answer its calls.
	snap, err := c.h.cfg.Store.Load(c.ctx, c.key, history.Query{MinMessages: 1, MaxTurns: 1})
	if err != nil {
		return err
	}
	if err := history.CheckNew(snap.Tail, fresh); err != nil {
		return err
	}
	m, err := c.h.cfg.Store.Commit(c.ctx, c.key, history.Change{Version: snap.Meta.Version, Append: fresh, Now: c.now()})
	if err != nil {
		return err
	}
	status := 200
	if snap.Meta.Version == 0 {
		status = 201
	}
	return c.reply(status, c.detail(&m))
}
