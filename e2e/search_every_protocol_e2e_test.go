package e2e

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// TestSearchFindsEveryProtocol: a conversation held through /v1/responses
// and one through /v1/messages, each a tool loop, are found by their
// answer's text and their tool result's text, through the search API and
// through the search_conversations tool, and get_conversation shows the
// model their texts (issue 48: both read chat completions only, and
// found nothing of a Responses answer or a tool result).
func TestSearchFindsEveryProtocol(t *testing.T) {
	h := e2etest.New(t, toolTenants())
	convs := []struct {
		c             *toolClient
		conv          string
		ask           string
		result, reply string
	}{
		{&responsesClient, "r1", `{"type":"message","role":"user","content":[{"type":"input_text","text":"what about Tromso tonight"}]}`,
			"clear skies kelvin minus twelve", "Expect aurora tonight."},
		{&messagesClient, "m1", `{"role":"user","content":[{"type":"text","text":"what about Bergen tomorrow"}]}`,
			"fjord breeze gusting", "Pack a puffin sweater."},
	}
	for _, cv := range convs {
		r := &toolRun{t: t, h: h, c: cv.c, tenant: "oa", conv: cv.conv}
		h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{{ID: "call_" + cv.conv, Name: "get_weather", Arguments: `{"city":"north"}`}}},
			upstreamtest.Reply{Content: cv.reply})
		msgs := []string{cv.ask}
		got := r.send(msgs)
		if len(got.calls) != 1 {
			t.Fatalf("%s: got calls %v, want the weather call", cv.conv, got.calls)
		}
		msgs = append(append(msgs, got.resend...), cv.c.result(got.calls[0], cv.result))
		if got := r.send(msgs); got.text != cv.reply {
			t.Fatalf("%s: got %q, want %q", cv.conv, got.text, cv.reply)
		}
	}

	for _, q := range []struct{ query, conv string }{
		{"aurora", "r1"}, {"kelvin", "r1"}, {"Tromso", "r1"},
		{"puffin", "m1"}, {"fjord", "m1"}, {"Bergen", "m1"},
	} {
		a := h.API("rk-oa", "", "GET", "/recall/v1/search?q="+q.query, "")
		if a.Status != 200 || gjson.GetBytes(a.Body, "data.#").Int() != 1 || gjson.GetBytes(a.Body, "data.0.conversation").Str != q.conv {
			t.Errorf("search API for %q: got %d %s, want one hit in %s", q.query, a.Status, a.Body, q.conv)
		}
	}

	// The tools, from a chat conversation of the same tenant: what they
	// return goes upstream in the next round.
	r := &toolRun{t: t, h: h, c: &chatClient, tenant: "oa", conv: "asker"}
	h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{
		toolCall("search_conversations", `{"query":"aurora kelvin puffin fjord"}`)}}, upstreamtest.Reply{Content: "Found."})
	r.send([]string{chatClient.user("find the weather talk")})
	body := string(h.Up.Last().Body)
	for _, want := range []string{"Expect aurora tonight.", "clear skies kelvin minus twelve", "Pack a puffin sweater.", "fjord breeze gusting", "r1", "m1"} {
		if !strings.Contains(body, want) {
			t.Errorf("search_conversations' result lacks %q: %s", want, body)
		}
	}
	for _, cv := range convs {
		h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{
			toolCall("get_conversation", `{"conversation_id":"`+cv.conv+`"}`)}}, upstreamtest.Reply{Content: "Read."})
		r.send([]string{chatClient.user("read " + cv.conv)})
		body := string(h.Up.Last().Body)
		for _, want := range []string{cv.reply, cv.result, strings.Fields(gjson.Get(cv.ask, "content.0.text").Str)[2], "get_weather"} {
			if !strings.Contains(body, want) {
				t.Errorf("get_conversation of %s lacks %q: %s", cv.conv, want, body)
			}
		}
	}
}
