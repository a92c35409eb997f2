package respstate

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/protocol/responses"
	"github.com/recallproxy/recall/tokens"
	"github.com/recallproxy/recall/wire"
)

// OpenAI's Conversations API on Recall's store: a conversation is a
// Recall conversation (the same id lists it in /recall/v1/conversations,
// and a Responses or chat request naming it continues it), its items its
// stored messages (see items.go for their ids), its metadata
// history.Meta.Metadata. Deleting a conversation erases its items
// (OpenAI keeps them; Recall keeps nothing of a deleted conversation).

// conversationObject is a conversation as the API answers it.
type conversationObject struct {
	ID        string  `json:"id"`
	Object    string  `json:"object"`
	CreatedAt int64   `json:"created_at"`
	Metadata  rawJSON `json:"metadata"`
}

func conversationOf(id string, m *history.Meta) conversationObject {
	md := rawJSON("{}")
	if m.Metadata != "" {
		md = rawJSON(m.Metadata)
	}
	return conversationObject{ID: id, Object: "conversation", CreatedAt: m.CreatedAt / 1e9, Metadata: md}
}

// conversations routes the Conversations API; segs are the path's
// segments after "conversations" (none for /v1/conversations).
func (sc *call) conversations(segs []string) error {
	method := sc.method()
	switch {
	case len(segs) == 0:
		if method == "POST" {
			return sc.createConversation()
		}
		return apierr.MethodNotAllowed
	case segs[0] == "":
		return apierr.NotFound
	}
	k, err := sc.key(segs[0])
	if err != nil {
		return err
	}
	switch {
	case len(segs) == 1:
		switch method {
		case "GET":
			return sc.getConversation(k)
		case "POST":
			return sc.updateConversation(k)
		case "DELETE":
			return sc.deleteConversation(k)
		}
		return apierr.MethodNotAllowed
	case len(segs) == 2 && segs[1] == "items":
		switch method {
		case "GET":
			return sc.listItems(k)
		case "POST":
			return sc.addItems(k)
		}
		return apierr.MethodNotAllowed
	case len(segs) == 3 && segs[1] == "items" && segs[2] != "":
		switch method {
		case "GET":
			return sc.getItem(k, segs[2])
		case "DELETE":
			return sc.deleteItem(k, segs[2])
		}
		return apierr.MethodNotAllowed
	}
	return apierr.NotFound
}

// object reads the body as a JSON object ({} when empty).
func (sc *call) object() (gjson.Result, error) {
	body := sc.body
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	if chat.CheckDepth(body) != nil || !gjson.ValidBytes(body) {
		return gjson.Result{}, apierr.BadJSON
	}
	r := gjson.ParseBytes(body)
	if !r.IsObject() {
		return gjson.Result{}, apierr.InvalidValue("", "The request body must be a JSON object.")
	}
	return r, nil
}

// metadataOf validates metadata as OpenAI does (at most 16 keys of up to
// 64 characters, string values of up to 512) and returns it as stored.
func metadataOf(v gjson.Result) (*string, error) {
	if !v.Exists() {
		return nil, nil
	}
	if v.Type == gjson.Null {
		s := ""
		return &s, nil
	}
	bad := apierr.InvalidValue("metadata", "Invalid 'metadata': expected an object of at most 16 string values, keys of at most 64 characters, values of at most 512.")
	if !v.IsObject() {
		return nil, bad
	}
	m := map[string]string{}
	ok := true
	v.ForEach(func(k, val gjson.Result) bool {
		// Characters, not bytes: "é" is one of the 512.
		ok = val.Type == gjson.String && utf8.RuneCountInString(k.Str) <= 64 && utf8.RuneCountInString(val.Str) <= 512
		m[k.Str] = val.Str
		return ok
	})
	if !ok || len(m) > 16 {
		return nil, bad
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	s := string(b)
	return &s, nil
}

// freshItems reads items (param: the body's key for them) into the
// messages to store, as memorize stores a chat client's: validated as
// Responses input items, tool results cut to the tenant's storage limit,
// counted. Instructions (system, developer) are refused: Recall sends
// them with each request and never stores them.
func (sc *call) freshItems(items gjson.Result, param string) ([]history.Message, error) {
	if !items.IsArray() {
		return nil, apierr.InvalidValue(param, "Invalid '"+param+"': expected an array of items.")
	}
	req, err := responses.Ingress{}.ParseRequest([]byte(`{"input":` + items.Raw + `}`))
	if err != nil {
		var ae *apierr.Error
		if errors.As(err, &ae) {
			e := *ae
			e.Param = strings.Replace(e.Param, "input", param, 1)
			e.Message = strings.ReplaceAll(e.Message, "'input", "'"+param)
			return nil, &e
		}
		return nil, err
	}
	codec := responses.Codec{}
	if len(req.Instructions) > 0 {
		return nil, apierr.InvalidValue(param+"[0]", "Invalid '"+param+"[0]': conversations store user, assistant and tool items; instructions (system, developer) are sent with each request and never stored.")
	}
	enc := tokens.For("", sc.c.Encoding)
	fresh := make([]history.Message, len(req.Messages))
	for i, raw := range req.Messages {
		role := codec.Role(raw)
		p := param + "[" + strconv.Itoa(i) + "]"
		if role == wire.RoleSystem || role == wire.RoleDeveloper {
			return nil, apierr.InvalidValue(p, "Invalid '"+p+"': conversations store user, assistant and tool items; instructions (system, developer) are sent with each request and never stored.")
		}
		if err := responses.CheckStorable(p, raw); err != nil {
			return nil, err
		}
		raw = bytes.Clone(raw) // the body does not outlive the handler
		if most := sc.c.StoredToolResultChars; most > 0 && role == wire.RoleTool {
			if cut, ok := codec.CutResults(raw, most, history.StorageMarker); ok {
				raw = cut
			}
		}
		fresh[i] = history.Message{Role: role, Protocol: wire.Responses, Raw: raw, Hash: codec.Hash(raw),
			Tokens: plan.Count(sc.st.cfg.Counter, enc, wire.Responses, raw)}
	}
	return fresh, nil
}

// checkFresh refuses new items that answer no call among themselves or
// the last stored turn (tail).
func checkFresh(tail, fresh []history.Message, param string) error {
	var oe *history.OrphanResultError
	if err := history.CheckNew(tail, fresh); errors.As(err, &oe) {
		p := param + "[" + strconv.Itoa(oe.Index) + "]"
		return apierr.InvalidValue(p, "Invalid '"+p+"': a function_call_output must answer a function_call before it.")
	} else if err != nil {
		return err
	}
	return nil
}

// objectMetadata reads the request body, an object, and its metadata
// (nil where the body has none).
func (sc *call) objectMetadata() (gjson.Result, *string, error) {
	body, err := sc.object()
	if err != nil {
		return gjson.Result{}, nil, err
	}
	md, err := metadataOf(body.Get("metadata"))
	return body, md, err
}

// createConversation serves POST /v1/conversations: a new conversation
// (conv_…) holding items, if any, with metadata.
func (sc *call) createConversation() error {
	body, md, err := sc.objectMetadata()
	if err != nil {
		return err
	}
	var fresh []history.Message
	if items := body.Get("items"); items.Exists() && items.Type != gjson.Null && !(items.IsArray() && len(items.Array()) == 0) {
		if fresh, err = sc.freshItems(items, "items"); err != nil {
			return err
		}
		if err := checkFresh(nil, fresh, "items"); err != nil {
			return err
		}
	}
	if md == nil {
		empty := ""
		md = &empty
	}
	id := NewConversationID()
	m, err := sc.st.cfg.Store.Commit(sc.ctx, history.Key{Tenant: sc.c.Namespace, Conversation: id},
		history.Change{Append: fresh, Metadata: md, Now: sc.st.cfg.Now().UnixNano()})
	if err != nil {
		return StoreWriteErr(err)
	}
	return sc.reply(200, conversationOf(id, &m))
}

// getConversation serves GET /v1/conversations/{id}.
func (sc *call) getConversation(k history.Key) error {
	m, err := sc.meta(k)
	if err != nil {
		return err
	}
	return sc.reply(200, conversationOf(k.Conversation, &m))
}

// updateConversation serves POST /v1/conversations/{id}: its metadata
// replaced.
func (sc *call) updateConversation(k history.Key) error {
	_, md, err := sc.objectMetadata()
	if err != nil {
		return err
	}
	if md == nil {
		return apierr.InvalidValue("metadata", "Missing required parameter: 'metadata'.")
	}
	m, release, err := sc.lockedMeta(k)
	if err != nil {
		return err
	}
	defer release()
	if m, err = sc.st.cfg.Store.Commit(sc.ctx, k, history.Change{Version: m.Version, Metadata: md, Now: sc.st.cfg.Now().UnixNano()}); err != nil {
		return StoreWriteErr(err)
	}
	return sc.reply(200, conversationOf(k.Conversation, &m))
}

// deleteConversation serves DELETE /v1/conversations/{id}: the
// conversation and its items are erased (history.Store.Delete).
func (sc *call) deleteConversation(k history.Key) error {
	_, release, err := sc.lockedMeta(k)
	if err != nil {
		return err
	}
	defer release()
	if err := sc.st.cfg.Store.Delete(sc.ctx, k); err != nil {
		return StoreWriteErr(err)
	}
	return sc.reply(200, struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Deleted bool   `json:"deleted"`
	}{k.Conversation, "conversation.deleted", true})
}

// listItems serves GET /v1/conversations/{id}/items: its active messages
// as items, newest first unless order=asc, paged by limit and after. A
// page reads about its own size from the store (pageItems), not the
// conversation, and runs under the heavy-call limiter (Config.Heavy).
func (sc *call) listItems(k history.Key) error {
	order, limit, after, err := sc.paging()
	if err != nil {
		return err
	}
	if heavy := sc.st.cfg.Heavy; heavy != nil {
		leave, err := heavy(sc.ctx, k.Tenant)
		if err != nil {
			return err
		}
		defer leave()
	}
	if _, err := sc.meta(k); err != nil {
		return err
	}
	items, err := sc.pageItems(k, order, limit, after)
	if err != nil {
		return err
	}
	return sc.reply(200, page(items, order, limit, after))
}

// pageItems returns, oldest first, the items page needs for a page of
// limit items in order after the item after ("" for the first page),
// reading no more of the conversation than that page and the item after
// it, give or take a message's items and the rounds of Recall's history
// tools (read with the answer they belong to, see visible):
//
//   - ascending, the messages from the cursor's on, oldest first;
//   - newest first without a cursor, the conversation's tail (Load,
//     growing until it holds limit+1 items or the whole conversation);
//   - newest first after a cursor, the messages just before the
//     cursor's, read forwards from a window that grows until it holds
//     the page.
func (sc *call) pageItems(k history.Key, order string, limit int, after string) ([][]byte, error) {
	var msgs []history.Message
	items := 0
	switch {
	case order == "asc":
		var from uint64
		if seq, ok := itemSeq(after); ok && after != "" {
			from = seq - 1 // the cursor's message: its later items follow the cursor
		}
		err := sc.st.cfg.Store.Messages(sc.ctx, k, from, false, func(m history.Message) bool {
			if items > limit+1 && m.Flags&history.Internal == 0 {
				return false
			}
			if m.Flags&history.Internal == 0 {
				items++
			}
			m.Raw = bytes.Clone(m.Raw)
			msgs = append(msgs, m)
			return true
		})
		if err != nil {
			return nil, StoreReadErr(err)
		}
	case after == "":
		for n := limit + 2; ; n *= 2 {
			snap, err := sc.st.cfg.Store.Load(sc.ctx, k, history.Query{MinMessages: n, MaxTurns: 1})
			if err != nil {
				return nil, StoreReadErr(err)
			}
			msgs = msgs[:0]
			for _, m := range snap.Tail {
				m.Raw = bytes.Clone(m.Raw)
				msgs = append(msgs, m)
			}
			if snap.Complete || len(visible(msgs)) > limit+1 {
				break
			}
		}
	default:
		seq, ok := itemSeq(after)
		if !ok {
			seq = ^uint64(0)
		}
		// The messages before the cursor's, and the cursor's with the
		// results of Recall's after it: read from a window before the
		// cursor that doubles until it holds the page (sequence numbers
		// only grow, so the window holds at most its width of messages).
		for n := uint64(limit) + 2; ; n *= 2 {
			var from uint64
			if ok && seq > n {
				from = seq - n
			}
			var err error
			if msgs, err = sc.messagesThrough(k, from, seq); err != nil {
				return nil, err
			}
			if from == 0 || len(visible(msgs)) > limit+1 {
				break
			}
		}
	}
	var out [][]byte
	for _, m := range visible(msgs) {
		out = append(out, itemsOf(&m)...)
	}
	return out, nil
}

// messagesThrough returns k's active messages after from up to seq and
// the results of Recall's history tools right after it, oldest first,
// copied.
func (sc *call) messagesThrough(k history.Key, from, seq uint64) ([]history.Message, error) {
	return sc.collect(k, from, func(m *history.Message) bool { return m.Seq <= seq || m.Flags&history.Internal != 0 })
}

// addItems serves POST /v1/conversations/{id}/items: the items appended
// as turns without calling the model (as the conversation API's
// memorize), answered with the items added, oldest first.
func (sc *call) addItems(k history.Key) error {
	body, err := sc.object()
	if err != nil {
		return err
	}
	items := body.Get("items")
	if !items.Exists() {
		return apierr.InvalidValue("items", "Missing required parameter: 'items'.")
	}
	fresh, err := sc.freshItems(items, "items")
	if err != nil {
		return err
	}
	release, err := sc.lock(k)
	if err != nil {
		return err
	}
	defer release()
	// The last stored turn, whole: the function_call_output items among
	// the new ones may answer its calls.
	snap, err := sc.st.cfg.Store.Load(sc.ctx, k, history.Query{MinMessages: 1, MaxTurns: 1})
	if err != nil {
		return StoreReadErr(err)
	}
	if snap.Meta.NextSeq == 0 {
		return apierr.ConversationNotFound
	}
	if err := checkFresh(snap.Tail, fresh, "items"); err != nil {
		return err
	}
	m, err := sc.st.cfg.Store.Commit(sc.ctx, k, history.Change{Version: snap.Meta.Version, Append: fresh, Now: sc.st.cfg.Now().UnixNano()})
	if err != nil {
		return StoreWriteErr(err)
	}
	var added [][]byte
	for i := range fresh {
		fresh[i].Seq = m.NextSeq - uint64(len(fresh)-i)
		added = append(added, itemsOf(&fresh[i])...)
	}
	return sc.reply(200, page(added, "asc", len(added), ""))
}

// findItem returns the item id names in k and its message's sequence
// number.
func (sc *call) findItem(k history.Key, id string) ([]byte, uint64, error) {
	seq, ok := itemSeq(id)
	if !ok {
		return nil, 0, apierr.ItemNotFound
	}
	// The message, and the results of Recall's history tools after it:
	// they say which of its calls were Recall's (see visible).
	var msgs []history.Message
	err := sc.st.cfg.Store.Messages(sc.ctx, k, seq-1, false, func(m history.Message) bool {
		if len(msgs) > 0 && m.Flags&history.Internal == 0 || len(msgs) == 0 && m.Seq != seq {
			return false
		}
		m.Raw = bytes.Clone(m.Raw)
		msgs = append(msgs, m)
		return true
	})
	if err != nil {
		return nil, 0, StoreReadErr(err)
	}
	if msgs = visible(msgs); len(msgs) == 1 && msgs[0].Seq == seq {
		for _, it := range itemsOf(&msgs[0]) {
			if gjson.GetBytes(it, "id").Str == id {
				return it, seq, nil
			}
		}
	}
	return nil, 0, apierr.ItemNotFound
}

// getItem serves GET /v1/conversations/{id}/items/{item_id}.
func (sc *call) getItem(k history.Key, id string) error {
	if _, err := sc.meta(k); err != nil {
		return err
	}
	item, _, err := sc.findItem(k, id)
	if err != nil {
		return err
	}
	return sc.replyRaw(200, item)
}

// deleteItem serves DELETE /v1/conversations/{id}/items/{item_id}: the
// item's stored message is hard-forgotten, with the calls or results its
// tool group ties to it (so what is left stays a valid context), and
// the conversation is answered.
func (sc *call) deleteItem(k history.Key, id string) error {
	m, release, err := sc.lockedMeta(k)
	if err != nil {
		return err
	}
	defer release()
	_, seq, err := sc.findItem(k, id)
	if err != nil {
		return err
	}
	if err := sc.hardForget(k, m, []uint64{seq}); err != nil {
		return err
	}
	if m, err = sc.meta(k); err != nil {
		return err
	}
	return sc.reply(200, conversationOf(k.Conversation, &m))
}
