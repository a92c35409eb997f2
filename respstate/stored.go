package respstate

import (
	"strconv"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/protocol/responses"
	"github.com/recallproxy/recall/wire"
)

// responses serves the stored responses: GET /v1/responses/{id}, GET
// /v1/responses/{id}/input_items and DELETE /v1/responses/{id}. segs are
// the path's segments after "responses".
func (sc *call) responses(segs []string) error {
	switch {
	case len(segs) == 1 && segs[0] != "" && sc.method() == "GET":
		return sc.getResponse(segs[0])
	case len(segs) == 1 && segs[0] != "" && sc.method() == "DELETE":
		return sc.deleteResponse(segs[0])
	case len(segs) == 2 && segs[0] != "" && segs[1] == "input_items" && sc.method() == "GET":
		return sc.inputItems(segs[0])
	case len(segs) == 2 && segs[1] == "input_items":
		return apierr.MethodNotAllowed
	}
	return apierr.NotFound
}

// getResponse renders a stored response as POST /v1/responses returned
// it: the Response object its turn keeps (history.Message.Response:
// model, usage, previous_response_id, instructions, tools and settings,
// times, status), its output the stored answer items rendered under the
// same id (responses.AppendResponse), so the output items' ids are the
// same too. A turn stored without it (before Recall kept it) is
// rendered from what is stored: model the conversation's latest
// answer's, usage 0, created_at and completed_at the commit's time,
// status completed, the request's settings OpenAI's defaults.
func (sc *call) getResponse(id string) error {
	r, err := sc.st.Load(sc.ctx, sc.c.Namespace, id)
	if err != nil {
		return err
	}
	if r == nil {
		return apierr.ResponseNotFound
	}
	a := answerOf(r.answer)
	a.Model, a.ResponseID, a.Created = r.meta.Model, id, r.answer[0].CreatedAt.Unix()
	a.Completed = a.Created
	req := &wire.Request{Protocol: wire.Responses, Model: a.Model, Store: true, Conversation: r.Ref.Conversation}
	body := responses.AppendResponse(nil, req, &a)
	if r.response != nil {
		out, err := sjson.SetRawBytes(r.response, "output", []byte(gjson.GetBytes(body, "output").Raw))
		if err == nil {
			body = out
		}
	}
	return sc.replyRaw(200, body)
}

// answerOf rebuilds the answer stored as msgs: its items as stored when
// they are Responses items, else the canonical message they make.
func answerOf(msgs []history.Message) wire.Answer {
	a := wire.Answer{Protocol: msgs[0].Protocol, Stop: wire.StopEnd, Message: wire.Message{Role: wire.RoleAssistant}}
	for _, m := range msgs {
		if m.Protocol != wire.Responses {
			a.Protocol = m.Protocol
		}
		a.Stored = append(a.Stored, m.Raw)
		if cm, err := m.Codec().Decode(m.Raw); err == nil {
			a.Message.Parts = append(a.Message.Parts, cm.Parts...)
		}
	}
	return a
}

// inputItems serves GET /v1/responses/{id}/input_items: the items the
// request added to the conversation (its new messages, stored right
// before the answer), as a list, newest first unless order=asc, paged
// by limit (1-100, default 20) and after (an item id). Items the client
// resent and Recall already held, and instructions (never stored), are
// not among them.
func (sc *call) inputItems(id string) error {
	order, limit, after, err := sc.paging()
	if err != nil {
		return err
	}
	r, err := sc.st.Load(sc.ctx, sc.c.Namespace, id)
	if err != nil {
		return err
	}
	if r == nil {
		return apierr.ResponseNotFound
	}
	var items [][]byte
	if r.Ref.Input > 0 {
		msgs, err := sc.messages(r.key, r.Ref.Seq-uint64(r.Ref.Input), r.Ref.Seq-1)
		if err != nil {
			return err
		}
		for i := range msgs {
			items = append(items, itemsOf(&msgs[i])...)
		}
	}
	return sc.reply(200, page(items, order, limit, after))
}

// paging reads the list parameters order, limit and after.
func (sc *call) paging() (order string, limit int, after string, err error) {
	args := sc.rc.QueryArgs()
	order, limit, after = string(args.Peek("order")), 20, string(args.Peek("after"))
	switch order {
	case "", "desc", "asc":
	default:
		return "", 0, "", apierr.InvalidValue("order", "Invalid 'order': expected 'asc' or 'desc'.")
	}
	if v := args.Peek("limit"); len(v) > 0 {
		n, perr := strconv.Atoi(string(v))
		if perr != nil || n < 1 || n > 100 {
			return "", 0, "", apierr.InvalidValue("limit", "Invalid 'limit': expected an integer from 1 to 100.")
		}
		limit = n
	}
	return order, limit, after, nil
}

// deleteResponse serves DELETE /v1/responses/{id}: it hard-forgets the
// response's turn, its input items and its answer (with Recall's history
// tool rounds, and any tool call or result tied to them), as the conversation API's hard forget does: the
// records and their search entries are erased, a summary covering them
// is dropped until rebuilt. The response is then not found, and its
// conversation continues from what is left.
func (sc *call) deleteResponse(id string) error {
	ref, ok := ParseID(id)
	if !ok {
		return apierr.ResponseNotFound
	}
	k := history.Key{Tenant: sc.c.Namespace, Conversation: ref.Conversation}
	release, err := sc.lock(k)
	if err != nil {
		return err
	}
	defer release()
	r, err := sc.st.Load(sc.ctx, sc.c.Namespace, id)
	if err != nil {
		return err
	}
	if r == nil {
		return apierr.ResponseNotFound
	}
	var seqs []uint64
	for s := ref.Seq - uint64(ref.Input); s <= r.end; s++ {
		seqs = append(seqs, s)
	}
	if err := sc.hardForget(k, r.meta, seqs); err != nil {
		return err
	}
	return sc.reply(200, struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Deleted bool   `json:"deleted"`
	}{id, "response", true})
}
