package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
)

// The routes of the state Recall keeps for the Responses API (stored
// responses) and the Conversations API, on its own store. They are
// answered here, never passed through: the upstream keeps no state.

var (
	prefixResponses     = []byte("/v1/responses/")
	pathConversations   = []byte("/v1/conversations")
	prefixConversations = []byte("/v1/conversations/")
)

// stateRoute reports whether Recall serves path (below any /c/{id}
// prefix) with method itself: GET and DELETE /v1/responses/{id}, GET
// /v1/responses/{id}/input_items, and every method on /v1/conversations
// and below (a method a path does not take is 405, not a pass-through).
// POST /v1/responses/compact is Recall's too (compact.go); other POSTs
// below /v1/responses/ (input_tokens, cancel) pass through.
func stateRoute(method, path []byte) bool {
	switch {
	case bytes.Equal(path, pathConversations) || bytes.HasPrefix(path, prefixConversations):
		return true
	case bytes.HasPrefix(path, prefixResponses):
		return string(method) == fasthttp.MethodGet || string(method) == fasthttp.MethodDelete
	}
	return false
}

// stateCall is one request to a state route.
type stateCall struct {
	s     *Server
	rc    *fasthttp.RequestCtx
	c     caller
	ctx   context.Context
	body  []byte
	route string
	start time.Time
}

// serveState serves a state route (see stateRoute). Every answer is in
// OpenAI's shape.
func (s *Server) serveState(rc *fasthttp.RequestCtx, path []byte) {
	sc := &stateCall{s: s, rc: rc, route: "conversations", start: s.cfg.Now()}
	if bytes.HasPrefix(path, prefixResponses) {
		sc.route = "responses"
	}
	tenant := ""
	body, err := s.readBody(rc)
	if err != nil {
		rc.SetConnectionClose()
	} else if sc.c, err = s.authenticate(rc); err == nil {
		tenant = sc.c.cfg.ID
		sc.body = body
		ctx, cancel := context.WithTimeout(context.Background(), sc.c.timeout())
		defer cancel()
		sc.ctx = ctx
		segs := strings.Split(string(path[len("/v1/"):]), "/")
		if sc.route == "responses" {
			err = sc.responses(segs[1:])
		} else {
			err = sc.conversations(segs[1:])
		}
	}
	if err != nil {
		s.fail(rc, sc.route, tenant, err, sc.start)
		if classify(err).Status == fasthttp.StatusMethodNotAllowed {
			rc.Response.Header.Set(fasthttp.HeaderAllow, allowOf(sc.route, path))
		}
		return
	}
	status := rc.Response.StatusCode()
	s.metrics.CountRequest(tenant, sc.route, status)
	s.log.Info("request", "route", sc.route, "tenant", tenant, "status", status,
		"overhead_ms", ms(s.cfg.Now().Sub(sc.start)))
}

// allowOf is the Allow header of a 405 on path.
func allowOf(route string, path []byte) string {
	switch {
	case route == "responses" && bytes.HasSuffix(path, []byte("/input_items")):
		return "GET"
	case route == "responses":
		return "GET, DELETE"
	case bytes.Equal(path, pathConversations):
		return "POST"
	case bytes.HasSuffix(path, []byte("/items")):
		return "GET, POST"
	case bytes.Count(path, []byte("/")) == 5: // /v1/conversations/{id}/items/{item_id}
		return "GET, DELETE"
	}
	return "GET, POST, DELETE"
}

// method returns the request's method.
func (sc *stateCall) method() string { return string(sc.rc.Method()) }

// reply answers v as JSON with status.
func (sc *stateCall) reply(status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return sc.replyRaw(status, b)
}

// replyRaw answers body, JSON already, with status.
func (sc *stateCall) replyRaw(status int, body []byte) error {
	sc.rc.SetStatusCode(status)
	sc.rc.SetContentType("application/json")
	sc.rc.SetBody(body)
	return nil
}

// key is conversation id's key in the caller's namespace; the id comes
// from the path, escaped or not.
func (sc *stateCall) key(id string) (history.Key, error) {
	if dec, err := url.PathUnescape(id); err == nil {
		id = dec
	}
	if !history.ValidID(id) {
		return history.Key{}, apierr.BadConversationID
	}
	return history.Key{Tenant: sc.c.Namespace, Conversation: id}, nil
}

// meta returns k's metadata; a conversation never written (or deleted)
// is apierr.ConversationNotFound.
func (sc *stateCall) meta(k history.Key) (history.Meta, error) {
	snap, err := sc.s.cfg.Store.Load(sc.ctx, k, history.Query{After: ^uint64(0)})
	if err != nil {
		return history.Meta{}, storeReadErr(err)
	}
	if snap.Meta.NextSeq == 0 {
		return history.Meta{}, apierr.ConversationNotFound
	}
	return snap.Meta, nil
}

// lock takes k's lock in this process, as a chat exchange does, so that a
// change through these routes and the exchanges on the conversation wait
// for one another. Across replicas, the commits' version checks order
// them; while the store marks k contended (see exchange.prepare), the
// change also holds k's lease, as the exchanges on it do.
func (sc *stateCall) lock(k history.Key) (release func(), err error) {
	s := sc.s
	unlock, err := s.cfg.Locks.Acquire(sc.ctx, k)
	if err != nil {
		return nil, apierr.Busy
	}
	if s.cfg.Leaser == nil {
		return unlock, nil
	}
	if _, ok := s.cfg.Store.(history.Contention); !ok {
		return unlock, nil
	}
	snap, err := s.cfg.Store.Load(sc.ctx, k, history.Query{After: ^uint64(0)}) // the head alone
	if err != nil {
		unlock()
		return nil, storeReadErr(err)
	}
	if !snap.Contended {
		return unlock, nil
	}
	lease, err := s.cfg.Leaser.Acquire(sc.ctx, history.LeaseName(history.LeaseConversation, k))
	if err != nil {
		unlock()
		if errors.Is(err, history.ErrUnavailable) {
			return nil, apierr.StoreUnavailable
		}
		return nil, apierr.Busy
	}
	return func() { lease(); unlock() }, nil
}

// messages returns k's active messages with from <= Seq <= to, oldest
// first, copied.
func (sc *stateCall) messages(k history.Key, from, to uint64) ([]history.Message, error) {
	var out []history.Message
	err := sc.s.cfg.Store.Messages(sc.ctx, k, from-min(from, 1), false, func(m history.Message) bool {
		if m.Seq > to {
			return false
		}
		m.Raw = bytes.Clone(m.Raw)
		out = append(out, m)
		return true
	})
	if err != nil {
		return nil, storeReadErr(err)
	}
	return out, nil
}

// hardForget erases seqs (ascending) of k, whose metadata is m, with
// every message a tool group ties to them (a call and its results go
// together, as the conversation API's forget closes them), through
// history.PlanForget as that forget does. The caller holds k's lock.
func (sc *stateCall) hardForget(k history.Key, m history.Meta, seqs []uint64) error {
	for attempt := 0; ; attempt++ {
		active, err := sc.messages(k, 1, ^uint64(0))
		if err != nil {
			return err
		}
		pick := closeGroups(active, seqs)
		plan := history.PlanForget(active, pick, true)
		if plan == nil {
			return nil
		}
		_, err = sc.s.cfg.Store.Commit(sc.ctx, k, history.Change{Version: m.Version, Forget: plan, Now: sc.s.cfg.Now().UnixNano()})
		if errors.Is(err, history.ErrConflict) {
			sc.s.markContended(sc.ctx, k)
		}
		if errors.Is(err, history.ErrConflict) && attempt < 2 {
			if m, err = sc.meta(k); err != nil {
				return err
			}
			continue // another process wrote between the read and the commit
		}
		if err != nil {
			return storeWriteErr(err)
		}
		return nil
	}
}

// closeGroups returns seqs, those of them still active, with the
// messages history.Forget ties to each (position:N selects a message and
// closes its tool group), ascending.
func closeGroups(active []history.Message, seqs []uint64) []uint64 {
	pick := map[uint64]bool{}
	for i, m := range active {
		if !slices.Contains(seqs, m.Seq) {
			continue
		}
		group, _ := history.Forget(active, "position:"+strconv.Itoa(i+1))
		for _, s := range group {
			pick[s] = true
		}
	}
	out := make([]uint64, 0, len(pick))
	for _, m := range active {
		if pick[m.Seq] {
			out = append(out, m.Seq)
		}
	}
	return out
}
