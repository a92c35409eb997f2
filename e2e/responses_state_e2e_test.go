package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/e2etest"
	recallresponses "github.com/recallproxy/recall/protocol/responses"
)

// ask sends input as a Responses request through the SDK, chained on
// previous (if not ""), and returns the response.
func ask(t *testing.T, client openai.Client, input, previous string, opts ...func(*responses.ResponseNewParams)) *responses.Response {
	t.Helper()
	p := responses.ResponseNewParams{Model: "gpt-4.1", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(input)}}
	if previous != "" {
		p.PreviousResponseID = openai.String(previous)
	}
	for _, o := range opts {
		o(&p)
	}
	r, err := client.Responses.New(context.Background(), p)
	if err != nil {
		t.Fatalf("ask %q: %v", input, err)
	}
	if want := "echo: " + input; r.OutputText() != want {
		t.Errorf("answer to %q: got %q, want %q", input, r.OutputText(), want)
	}
	return r
}

// apiError returns err's OpenAI error (failing the test if it is not
// one).
func apiError(t *testing.T, err error) *openai.Error {
	t.Helper()
	var e *openai.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want an API error", err)
	}
	return e
}

// Chaining by previous_response_id alone, no conversation header: Recall
// records the first exchange in a conversation of its own and each
// response id continues it. The upstream keeps no state (store false, no
// previous_response_id): its third request carries every turn.
func TestResponsesChainWithoutHeader(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	client := h.Client("rk-oa", "")
	r1 := ask(t, client, "one", "")
	if r1.Conversation.ID == "" || !strings.HasPrefix(r1.Conversation.ID, "conv_") {
		t.Fatalf("first response's conversation: got %q, want a conv_ id of Recall's", r1.Conversation.ID)
	}
	r2 := ask(t, client, "two", r1.ID)
	r3 := ask(t, client, "three", r2.ID)
	if r2.Conversation.ID != r1.Conversation.ID || r3.Conversation.ID != r1.Conversation.ID {
		t.Errorf("conversations: got %q, %q, %q; want one", r1.Conversation.ID, r2.Conversation.ID, r3.Conversation.ID)
	}
	if r1.ID == r2.ID || r2.ID == r3.ID {
		t.Errorf("response ids repeat: %q, %q, %q", r1.ID, r2.ID, r3.ID)
	}
	last := h.Up.Last()
	want := []string{"user: one", "assistant: echo: one", "user: two", "assistant: echo: two", "user: three"}
	wantTexts(t, "third upstream input", last.Messages, want)
	body := gjson.ParseBytes(last.Body)
	if body.Get("store").Type != gjson.False || body.Get("previous_response_id").Exists() || body.Get("conversation").Exists() {
		t.Errorf("upstream body keeps state: %s", last.Body)
	}
	if n := len(h.Stored("oa", r1.Conversation.ID)); n != 6 {
		t.Errorf("stored %d messages, want 6", n)
	}
}

// call sends a raw request to Recall as key and returns its status and
// body.
func call(t *testing.T, h *e2etest.Harness, key, method, path, body string) (int, gjson.Result) {
	t.Helper()
	r := h.Send(method, path, key, body)
	return r.Status, gjson.Parse(r.Body)
}

// conversationIDs lists a tenant's conversation ids from the store.
func conversationIDs(t *testing.T, h *e2etest.Harness, tenant string) []string {
	t.Helper()
	page, _, err := h.History.List(context.Background(), tenant, history.ListQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range page {
		ids = append(ids, e.Conversation)
	}
	return ids
}

// store false and nothing named: a plain call, nothing stored; its id
// continues nothing.
func TestResponsesStoreFalseUnnamedIsNotRecorded(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	client := h.Client("rk-oa", "")
	r := ask(t, client, "one", "", func(p *responses.ResponseNewParams) { p.Store = openai.Bool(false) })
	if r.Conversation.ID != "" {
		t.Errorf("conversation: got %q, want none", r.Conversation.ID)
	}
	if ids := conversationIDs(t, h, "oa"); len(ids) != 0 {
		t.Errorf("stored conversations: got %q, want none", ids)
	}
	_, err := client.Responses.New(context.Background(), responses.ResponseNewParams{Model: "gpt-4.1",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("two")}, PreviousResponseID: openai.String(r.ID)})
	if e := apiError(t, err); e.StatusCode != 400 || e.Code != "previous_response_not_found" {
		t.Errorf("chained on an unstored response: got %d %s, want 400 previous_response_not_found", e.StatusCode, e.Code)
	}
}

// The body's conversation, as a string or as {"id"}, names the
// conversation as the header does; with store false it is still
// recorded.
func TestResponsesConversationParam(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	client := h.Client("rk-oa", "")
	r1 := ask(t, client, "one", "", func(p *responses.ResponseNewParams) {
		p.Conversation = responses.ResponseNewParamsConversationUnion{OfString: openai.String("cp1")}
		p.Store = openai.Bool(false)
	})
	if r1.Conversation.ID != "cp1" {
		t.Errorf("conversation: got %q, want cp1", r1.Conversation.ID)
	}
	ask(t, client, "two", "", func(p *responses.ResponseNewParams) {
		p.Conversation = responses.ResponseNewParamsConversationUnion{OfConversationObject: &responses.ResponseConversationParam{ID: "cp1"}}
	})
	want := []string{"user: one", "assistant: echo: one", "user: two"}
	wantTexts(t, "second upstream input", h.Up.Last().Messages, want)
	if n := len(h.Stored("oa", "cp1")); n != 4 {
		t.Errorf("stored %d messages in cp1, want 4", n)
	}
}

// Two names of different conversations are refused, naming the later
// parameter, before anything is sent or stored.
func TestResponsesConflictingConversations(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	r := ask(t, h.Client("rk-oa", ""), "one", "")
	sent := h.Up.Count()
	tests := []struct {
		name, header, conversation, previous, param string
	}{
		{"header and conversation", "h1", "b1", "", "conversation"},
		{"header and previous response", "h1", "", r.ID, "previous_response_id"},
		{"conversation and previous response", "", "b1", r.ID, "previous_response_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := responses.ResponseNewParams{Model: "gpt-4.1", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("two")}}
			if tt.conversation != "" {
				p.Conversation = responses.ResponseNewParamsConversationUnion{OfString: openai.String(tt.conversation)}
			}
			if tt.previous != "" {
				p.PreviousResponseID = openai.String(tt.previous)
			}
			client := h.Client("rk-oa", tt.header)
			_, err := client.Responses.New(context.Background(), p)
			e := apiError(t, err)
			if e.StatusCode != 400 || e.Param != tt.param {
				t.Errorf("got %d with param %q, want 400 with param %q", e.StatusCode, e.Param, tt.param)
			}
		})
	}
	if n := h.Up.Count(); n != sent {
		t.Errorf("upstream calls: got %d, want %d (none for refused requests)", n, sent)
	}
	if ids := conversationIDs(t, h, "oa"); len(ids) != 1 || ids[0] != r.Conversation.ID {
		t.Errorf("stored conversations: got %q, want only %q", ids, r.Conversation.ID)
	}
}

// A previous_response_id that names no stored response of the caller's
// gets one answer, whatever the reason: unknown, malformed, another
// tenant's, or of a conversation deleted and created again under the
// same id.
func TestPreviousResponseNotFoundIsOneAnswer(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	ctx := context.Background()
	oa := h.Client("rk-oa", "")
	theirs := ask(t, oa, "one", "")
	recreated := ask(t, h.Client("rk-oa", "dr"), "one", "")
	if st, _ := call(t, h, "rk-oa", "DELETE", "/v1/conversations/dr", ""); st != 200 {
		t.Fatalf("delete dr: got %d, want 200", st)
	}
	ask(t, h.Client("rk-oa", "dr"), "again", "")
	sent := h.Up.Count()

	tests := []struct {
		name, key, id string
	}{
		{"unknown", "rk-oa", "resp_0123456789abcdef0123456789abcdef"},
		{"malformed", "rk-oa", "resp_%%%"},
		{"another tenant's", "rk-ch", theirs.ID},
		{"deleted and recreated", "rk-oa", recreated.ID},
	}
	var first string
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := h.Client(tt.key, "")
			_, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-4.1",
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("two")}, PreviousResponseID: openai.String(tt.id)})
			e := apiError(t, err)
			if e.StatusCode != 400 || e.Code != "previous_response_not_found" || e.Param != "previous_response_id" {
				t.Errorf("got %d %q param %q, want 400 previous_response_not_found param previous_response_id", e.StatusCode, e.Code, e.Param)
			}
			body := e.RawJSON()
			if first == "" {
				first = body
			} else if body != first {
				t.Errorf("error body: got %s, want the same as the first case's %s", body, first)
			}
		})
	}
	if n := h.Up.Count(); n != sent {
		t.Errorf("upstream calls: got %d, want %d", n, sent)
	}
}

// A previous_response_id older than its conversation's latest response
// continues a fork holding the history up to it; the original is
// untouched and its latest response still continues it.
func TestResponsesForkFromFirstResponse(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	client := h.Client("rk-oa", "")
	r1 := ask(t, client, "one", "")
	r2 := ask(t, client, "two", r1.ID)
	orig := r1.Conversation.ID

	f := ask(t, client, "fork", r1.ID)
	if f.Conversation.ID == orig || !strings.HasPrefix(f.Conversation.ID, "conv_") {
		t.Fatalf("fork's conversation: got %q, want a new conv_ id (original %q)", f.Conversation.ID, orig)
	}
	want := []string{"user: one", "assistant: echo: one", "user: fork"}
	wantTexts(t, "fork's upstream input", h.Up.Last().Messages, want)
	ask(t, client, "three", r2.ID)
	want = []string{"user: one", "assistant: echo: one", "user: two", "assistant: echo: two", "user: three"}
	wantTexts(t, "original's upstream input", h.Up.Last().Messages, want)
	ask(t, client, "fork two", f.ID)
	want = []string{"user: one", "assistant: echo: one", "user: fork", "assistant: echo: fork", "user: fork two"}
	wantTexts(t, "fork's second upstream input", h.Up.Last().Messages, want)
	if n := len(h.Stored("oa", orig)); n != 6 {
		t.Errorf("original holds %d messages, want 6", n)
	}
	if n := len(h.Stored("oa", f.Conversation.ID)); n != 6 {
		t.Errorf("fork holds %d messages, want 6", n)
	}
}

// GET /v1/responses/{id} renders a stored response as POST returned it:
// id, output items (with their ids), text; streamed or not. Its turn
// keeps the Response packed.
func TestStoredResponseIsAsReturned(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	ctx := context.Background()
	for _, key := range []string{"rk-oa", "rk-ch", "rk-an"} {
		t.Run(key, func(t *testing.T) {
			client := h.Client(key, "")
			posted := ask(t, client, "one", "")
			streamed := streamResponse(t, client, responses.ResponseNewParams{Model: "gpt-4.1",
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("two")}, PreviousResponseID: openai.String(posted.ID)})
			h.WaitDone(posted.Conversation.ID)
			for _, want := range []*responses.Response{posted, &streamed} {
				got, err := client.Responses.Get(ctx, want.ID, responses.ResponseGetParams{})
				if err != nil {
					t.Fatal(err)
				}
				if got.ID != want.ID || got.OutputText() != want.OutputText() || got.Conversation.ID != want.Conversation.ID {
					t.Errorf("got %q %q in %q, want %q %q in %q", got.ID, got.OutputText(), got.Conversation.ID,
						want.ID, want.OutputText(), want.Conversation.ID)
				}
				if g, w := gjson.Get(got.RawJSON(), "output").Raw, gjson.Get(want.RawJSON(), "output").Raw; g != w {
					t.Errorf("output items:\n got %s\nwant %s", g, w)
				}
			}
			// Their turns keep the Response objects packed, in under half
			// their bytes.
			kept := 0
			for _, m := range h.Stored(strings.TrimPrefix(key, "rk-"), posted.Conversation.ID) {
				if m.Response == nil {
					continue
				}
				kept++
				obj, err := recallresponses.UnpackStored(m.Response)
				if err != nil || 2*len(m.Response) > len(obj) {
					t.Errorf("a turn keeps %d bytes of a %d-byte Response (%v), want it packed in under half", len(m.Response), len(obj), err)
				}
			}
			if kept != 2 {
				t.Errorf("%d turns keep a Response, want 2", kept)
			}
		})
	}
	client := h.Client("rk-oa", "")
	_, err := client.Responses.Get(ctx, "resp_0123", responses.ResponseGetParams{})
	if e := apiError(t, err); e.StatusCode != 404 {
		t.Errorf("unknown response: got %d, want 404", e.StatusCode)
	}
}

// GET /v1/responses/{id}/input_items lists the items the request added,
// newest first by default, in OpenAI's list shape, paged.
func TestResponseInputItems(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	ctx := context.Background()
	client := h.Client("rk-oa", "")
	r1 := ask(t, client, "one", "")
	r2, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-4.1", PreviousResponseID: openai.String(r1.ID),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("a", responses.EasyInputMessageRoleUser),
			responses.ResponseInputItemParamOfMessage("b", responses.EasyInputMessageRoleUser),
		}}})
	if err != nil {
		t.Fatal(err)
	}
	textsOf := func(page string) []string {
		var out []string
		gjson.Get(page, "data").ForEach(func(_, it gjson.Result) bool {
			out = append(out, it.Get("content.0.text").String())
			return true
		})
		return out
	}
	tests := []struct {
		name    string
		params  responses.InputItemListParams
		want    []string
		hasMore bool
	}{
		{"default: newest first", responses.InputItemListParams{}, []string{"b", "a"}, false},
		{"asc", responses.InputItemListParams{Order: responses.InputItemListParamsOrderAsc}, []string{"a", "b"}, false},
		{"limit", responses.InputItemListParams{Limit: openai.Int(1)}, []string{"b"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page, err := client.Responses.InputItems.List(ctx, r2.ID, tt.params)
			if err != nil {
				t.Fatal(err)
			}
			raw := page.RawJSON()
			if got := textsOf(raw); strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("items: got %q, want %q", got, tt.want)
			}
			r := gjson.Parse(raw)
			if r.Get("object").Str != "list" || r.Get("has_more").Bool() != tt.hasMore ||
				r.Get("first_id").Str != r.Get("data.0.id").Str || r.Get("last_id").Str != r.Get("data.@reverse.0.id").Str {
				t.Errorf("list shape: got %s", raw)
			}
			if tt.hasMore {
				next, err := client.Responses.InputItems.List(ctx, r2.ID, responses.InputItemListParams{Limit: openai.Int(1), After: openai.String(r.Get("last_id").Str)})
				if err != nil {
					t.Fatal(err)
				}
				if got := textsOf(next.RawJSON()); strings.Join(got, "|") != "a" {
					t.Errorf("next page: got %q, want [a]", got)
				}
			}
		})
	}
}

// DELETE /v1/responses/{id} hard-forgets the response's turn: its records
// are erased, search finds nothing, the next request's upstream input
// lacks it, and the response is not found.
func TestDeleteResponseErasesItsTurn(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	ctx := context.Background()
	client := h.Client("rk-oa", "")
	r1 := ask(t, client, "the password is zebra", "")
	r2 := ask(t, client, "two", r1.ID)
	conv := r1.Conversation.ID
	other := h.Client("rk-ch", "")
	if _, err := other.Responses.Get(ctx, r1.ID, responses.ResponseGetParams{}); apiError(t, err).StatusCode != 404 {
		t.Errorf("another tenant's GET: got %v, want 404", err)
	}
	if err := other.Responses.Delete(ctx, r1.ID); apiError(t, err).StatusCode != 404 {
		t.Errorf("another tenant's DELETE: got %v, want 404", err)
	}
	if n := len(h.Stored("oa", conv)); n != 4 {
		t.Fatalf("stored after another tenant's DELETE: %d messages, want 4", n)
	}
	if err := client.Responses.Delete(ctx, r1.ID); err != nil {
		t.Fatal(err)
	}
	for _, m := range h.Stored("oa", conv) {
		if strings.Contains(string(m.Raw), "zebra") {
			t.Errorf("stored after the delete: %s", m.Raw)
		}
	}
	if a := h.API("rk-oa", "", "GET", "/recall/v1/search?q=zebra", ""); a.Status != 200 || gjson.GetBytes(a.Body, "data.#").Int() != 0 {
		t.Errorf("search for the deleted turn: got %d %s, want no hits", a.Status, a.Body)
	}
	if _, err := client.Responses.Get(ctx, r1.ID, responses.ResponseGetParams{}); apiError(t, err).StatusCode != 404 {
		t.Errorf("deleted response: got %v, want 404", err)
	}
	if err := client.Responses.Delete(ctx, r1.ID); apiError(t, err).StatusCode != 404 {
		t.Errorf("deleted again: got %v, want 404", err)
	}
	ask(t, client, "three", r2.ID)
	want := []string{"user: two", "assistant: echo: two", "user: three"}
	wantTexts(t, "next upstream input", h.Up.Last().Messages, want)
}

// background: true is refused with a clear 400, before anything is sent.
func TestResponsesBackgroundRefused(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	client := h.Client("rk-oa", "")
	_, err := client.Responses.New(context.Background(), responses.ResponseNewParams{Model: "gpt-4.1",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("one")}, Background: openai.Bool(true)})
	if e := apiError(t, err); e.StatusCode != 400 || e.Param != "background" {
		t.Errorf("got %d param %q, want 400 param background", e.StatusCode, e.Param)
	}
	if n := h.Up.Count(); n != 0 {
		t.Errorf("upstream calls: got %d, want 0", n)
	}
}

// OpenAI's Conversations API on Recall's store, through the SDK: create
// with items and metadata, read, update, add and list items, continue it
// with the Responses API, delete an item, and delete the conversation
// with its items. /recall/v1/conversations lists it under the same id.
func TestConversationsAPIRoundTrip(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	ctx := context.Background()
	client := h.Client("rk-oa", "")
	conv, err := client.Conversations.New(ctx, conversations.ConversationNewParams{
		Items: []responses.ResponseInputItemUnionParam{
			responses.ResponseInputItemParamOfMessage("my name is Ada", responses.EasyInputMessageRoleUser),
			responses.ResponseInputItemParamOfMessage("hello Ada", responses.EasyInputMessageRoleAssistant),
		},
		Metadata: shared.Metadata{"topic": "names"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(conv.ID, "conv_") || conv.CreatedAt == 0 || gjson.Get(conv.RawJSON(), "metadata.topic").Str != "names" {
		t.Errorf("created: got %s, want a conv_ id, a time and the metadata", conv.RawJSON())
	}
	if a := h.API("rk-oa", "", "GET", "/recall/v1/conversations/"+conv.ID, ""); a.Status != 200 || gjson.GetBytes(a.Body, "messages").Int() != 2 {
		t.Errorf("the conversation API's view: got %d %s, want 200 with 2 messages", a.Status, a.Body)
	}

	if a := h.API("rk-oa", "", "GET", "/recall/v1/conversations", ""); !strings.Contains(string(a.Body), `"id":"`+conv.ID+`"`) {
		t.Errorf("the conversation API's list: got %s, want %s in it", a.Body, conv.ID)
	}

	got, err := client.Conversations.Get(ctx, conv.ID)
	if err != nil || got.ID != conv.ID || gjson.Get(got.RawJSON(), "metadata.topic").Str != "names" {
		t.Errorf("get: got %v, %v", got, err)
	}
	upd, err := client.Conversations.Update(ctx, conv.ID, conversations.ConversationUpdateParams{Metadata: shared.Metadata{"topic": "greetings"}})
	if err != nil || gjson.Get(upd.RawJSON(), "metadata.topic").Str != "greetings" {
		t.Errorf("update: got %v, %v; want topic greetings", upd, err)
	}

	added, err := client.Conversations.Items.New(ctx, conv.ID, conversations.ItemNewParams{Items: []responses.ResponseInputItemUnionParam{
		responses.ResponseInputItemParamOfMessage("I live in London", responses.EasyInputMessageRoleUser),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(added.Data) != 1 || added.Data[0].ID != "msg_3" {
		t.Errorf("added: got %s, want one item msg_3", added.RawJSON())
	}
	items, err := client.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{Order: conversations.ItemListParamsOrderAsc})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, it := range items.Data {
		ids = append(ids, it.ID+" "+it.Role)
	}
	if want := []string{"msg_1 user", "msg_2 assistant", "msg_3 user"}; strings.Join(ids, "|") != strings.Join(want, "|") {
		t.Errorf("items: got %q, want %q", ids, want)
	}
	one, err := client.Conversations.Items.Get(ctx, conv.ID, "msg_2", conversations.ItemGetParams{})
	if err != nil || one.ID != "msg_2" || gjson.Get(one.RawJSON(), "content.0.text").Str != "hello Ada" {
		t.Errorf("item msg_2: got %v, %v", one, err)
	}

	r := ask(t, client, "what is my name?", "", func(p *responses.ResponseNewParams) {
		p.Conversation = responses.ResponseNewParamsConversationUnion{OfString: openai.String(conv.ID)}
	})
	if r.Conversation.ID != conv.ID {
		t.Errorf("response's conversation: got %q, want %q", r.Conversation.ID, conv.ID)
	}
	want := []string{"user: my name is Ada", "assistant: hello Ada", "user: I live in London", "user: what is my name?"}
	wantTexts(t, "upstream input", h.Up.Last().Messages, want)

	if _, err := client.Conversations.Items.Delete(ctx, conv.ID, "msg_3"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Conversations.Items.Get(ctx, conv.ID, "msg_3", conversations.ItemGetParams{}); apiError(t, err).StatusCode != 404 {
		t.Errorf("deleted item: got %v, want 404", err)
	}
	for _, m := range h.Stored("oa", conv.ID) {
		if strings.Contains(string(m.Raw), "London") {
			t.Errorf("stored after the item's delete: %s", m.Raw)
		}
	}

	del, err := client.Conversations.Delete(ctx, conv.ID)
	if err != nil || !del.Deleted || del.ID != conv.ID || string(del.Object) != "conversation.deleted" {
		t.Errorf("delete: got %v, %v", del, err)
	}
	if _, err := client.Conversations.Get(ctx, conv.ID); apiError(t, err).StatusCode != 404 {
		t.Errorf("deleted conversation: got %v, want 404", err)
	}
	if n := len(h.Stored("oa", conv.ID)); n != 0 {
		t.Errorf("stored after the delete: %d messages, want none", n)
	}
}

// The state routes are Recall's: no method on them, known or not, is
// passed through to the upstream.
func TestStateRoutesNeverPassThrough(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	tests := []struct {
		method, path string
		status       int
	}{
		{"GET", "/v1/conversations", 405},
		{"PUT", "/v1/conversations/c1", 405},
		{"GET", "/v1/conversations/c1", 404},
		{"GET", "/v1/conversations/c1/items", 404},
		{"PATCH", "/v1/conversations/c1/items", 405},
		{"GET", "/v1/conversations/c1/other", 404},
		{"GET", "/c/c1/v1/conversations/c1", 404},
		{"GET", "/v1/responses/resp_1", 404},
		{"DELETE", "/v1/responses/resp_1", 404},
		{"GET", "/v1/responses/resp_1/input_items", 404},
		{"GET", "/v1/responses/resp_1/other", 404},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			st, body := call(t, h, "rk-oa", tt.method, tt.path, "")
			if st != tt.status || !body.Get("error.message").Exists() {
				t.Errorf("got %d %s, want %d with an OpenAI error", st, body.Raw, tt.status)
			}
		})
	}
	if n := h.Up.Count(); n != 0 {
		t.Errorf("upstream calls: got %d, want none", n)
	}
}

// TestConversationMetadataLimitsCountCharacters: the Conversations API's
// metadata limits (keys of 64 characters, values of 512) count
// characters as OpenAI does, not bytes: 512 two-byte characters are a
// valid value, 513 are not.
func TestConversationMetadataLimitsCountCharacters(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	value := strings.Repeat("é", 512)
	if st, body := call(t, h, "rk-oa", "POST", "/v1/conversations", `{"metadata":{"`+strings.Repeat("ü", 64)+`":"`+value+`"}}`); st != 200 {
		t.Errorf("512 two-byte characters: got %d %s, want 200", st, body.Raw)
	}
	if st, _ := call(t, h, "rk-oa", "POST", "/v1/conversations", `{"metadata":{"k":"`+value+`é"}}`); st != 400 {
		t.Errorf("513 characters: got %d, want 400", st)
	}
}

// TestStoreIsToldTruthfully: a Response says store true when Recall
// stored it, whatever the request asked: store false with a
// previous_response_id continues a stored conversation and is stored
// (GET finds it); store false with neither is stored nowhere (GET: 404).
func TestStoreIsToldTruthfully(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	st, first := call(t, h, "rk-oa", "POST", "/v1/responses", `{"model":"gpt-4.1","input":"my name is Ada"}`)
	if st != 200 || first.Get("store").Type != gjson.True {
		t.Fatalf("a stored response: %d store %s", st, first.Get("store").Raw)
	}
	st, next := call(t, h, "rk-oa", "POST", "/v1/responses", `{"model":"gpt-4.1","store":false,"previous_response_id":"`+first.Get("id").Str+`","input":"and now?"}`)
	if st != 200 || next.Get("store").Type != gjson.True {
		t.Errorf("store false continuing a stored response: %d store %s, want true (it is stored)", st, next.Get("store").Raw)
	}
	if st, _ := call(t, h, "rk-oa", "GET", "/v1/responses/"+next.Get("id").Str, ""); st != 200 {
		t.Errorf("GET of it: %d, want 200", st)
	}
	st, alone := call(t, h, "rk-oa", "POST", "/v1/responses", `{"model":"gpt-4.1","store":false,"input":"a one-off"}`)
	if st != 200 || alone.Get("store").Type != gjson.False {
		t.Errorf("store false alone: %d store %s, want false", st, alone.Get("store").Raw)
	}
	if st, _ := call(t, h, "rk-oa", "GET", "/v1/responses/"+alone.Get("id").Str, ""); st != 404 {
		t.Errorf("GET of it: %d, want 404", st)
	}
}

// TestResponseIDsAreCheckedAgainstTheTurn: a response id's input count
// is checked against the stored turn, never trusted. The id with the
// count changed (smaller, larger, the whole conversation) names nothing:
// GET, input_items, chaining and DELETE find no response, and a DELETE
// of a forged id erases nothing.
func TestResponseIDsAreCheckedAgainstTheTurn(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	_, r1 := call(t, h, "rk-oa", "POST", "/v1/responses", `{"model":"gpt-4.1","input":"one"}`)
	st, r2 := call(t, h, "rk-oa", "POST", "/v1/responses", `{"model":"gpt-4.1","previous_response_id":"`+r1.Get("id").Str+
		`","input":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}`)
	if st != 200 {
		t.Fatalf("second response: %d %s", st, r2.Raw)
	}
	id := r2.Get("id").Str
	conv := r2.Get("conversation.id").Str
	cut := strings.LastIndexByte(id, '_')
	if id[cut+1:] != "2" {
		t.Fatalf("id %s: want an input count of 2", id)
	}
	stored := len(h.Stored("oa", conv))
	for _, n := range []string{"0", "1", "3", "4"} {
		forged := id[:cut+1] + n
		if st, _ := call(t, h, "rk-oa", "GET", "/v1/responses/"+forged, ""); st != 404 {
			t.Errorf("GET with input count %s: got %d, want 404", n, st)
		}
		if st, _ := call(t, h, "rk-oa", "GET", "/v1/responses/"+forged+"/input_items", ""); st != 404 {
			t.Errorf("input_items with input count %s: got %d, want 404", n, st)
		}
		if st, body := call(t, h, "rk-oa", "POST", "/v1/responses", `{"model":"gpt-4.1","previous_response_id":"`+forged+`","input":"x"}`); st != 400 ||
			body.Get("error.code").Str != "previous_response_not_found" {
			t.Errorf("chained with input count %s: got %d %s, want 400 previous_response_not_found", n, st, body.Raw)
		}
		if st, _ := call(t, h, "rk-oa", "DELETE", "/v1/responses/"+forged, ""); st != 404 {
			t.Errorf("DELETE with input count %s: got %d, want 404", n, st)
		}
	}
	if got := len(h.Stored("oa", conv)); got != stored {
		t.Errorf("stored after forged DELETEs: %d messages, want %d", got, stored)
	}
	if st, got := call(t, h, "rk-oa", "GET", "/v1/responses/"+id, ""); st != 200 || got.Get("id").Str != id {
		t.Errorf("GET of the real id: %d %s", st, got.Raw)
	}
}

// TestStoredResponseIsWhatPostReturned: GET /v1/responses/{id} returns
// the Response as POST returned it, member for member: model, usage,
// previous_response_id, instructions, tools and settings, times and
// status, on every upstream kind, streamed or not.
func TestStoredResponseIsWhatPostReturned(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	for _, key := range []string{"rk-oa", "rk-ch", "rk-an"} {
		for _, stream := range []bool{false, true} {
			t.Run(key+map[bool]string{true: "_streamed"}[stream], func(t *testing.T) {
				_, first := call(t, h, key, "POST", "/v1/responses", `{"model":"gpt-4.1","input":"one"}`)
				body := `{"model":"gpt-4.1","previous_response_id":"` + first.Get("id").Str + `","input":"two","instructions":"Be brief.",` +
					`"temperature":0.5,"top_p":0.9,"max_output_tokens":200,"metadata":{"k":"v"},` +
					`"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}],"tool_choice":"auto"`
				var posted gjson.Result
				if stream {
					res := h.Post("/v1/responses", key, "", body+`,"stream":true}`)
					names, data := sseEvents(res.Body)
					for i := range names {
						if names[i] == "response.completed" {
							posted = gjson.Get(data[i], "response")
						}
					}
					h.WaitDone(first.Get("conversation.id").Str)
				} else {
					var st int
					if st, posted = call(t, h, key, "POST", "/v1/responses", body+"}"); st != 200 {
						t.Fatalf("POST: %d %s", st, posted.Raw)
					}
				}
				if !posted.Exists() {
					t.Fatal("no response")
				}
				st, got := call(t, h, key, "GET", "/v1/responses/"+posted.Get("id").Str, "")
				if st != 200 {
					t.Fatalf("GET: %d %s", st, got.Raw)
				}
				posted.ForEach(func(k, v gjson.Result) bool {
					if g := got.Get(k.Str); g.Raw != v.Raw {
						t.Errorf("%s: got %s, want %s as POST returned it", k.Str, g.Raw, v.Raw)
					}
					return true
				})
				if n, m := len(got.Map()), len(posted.Map()); n != m {
					t.Errorf("GET has %d members, POST %d", n, m)
				}
			})
		}
	}
}
