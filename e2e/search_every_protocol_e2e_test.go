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

// TestExportImportEveryProtocol: a Responses tool loop and an Anthropic one
// export with each message's protocol, role and text, and import into new
// conversations as the same messages in the same protocols (before, every
// line was read as chat completions and the import refused them); the
// copies go upstream as the originals do.
func TestExportImportEveryProtocol(t *testing.T) {
	h := e2etest.New(t, toolTenants())
	for _, cv := range []struct {
		c        *toolClient
		conv     string
		protocol string
	}{{&responsesClient, "r1", "responses"}, {&messagesClient, "m1", "messages"}} {
		r := &toolRun{t: t, h: h, c: cv.c, tenant: "oa", conv: cv.conv}
		h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{{ID: "call_" + cv.conv, Name: "get_weather", Arguments: `{"city":"Oslo"}`}}},
			upstreamtest.Reply{Content: "Bring an umbrella."})
		msgs := []string{cv.c.user("weather in Oslo?")}
		got := r.send(msgs)
		msgs = append(append(msgs, got.resend...), cv.c.result(got.calls[0], "drizzle all day"))
		r.send(msgs)

		exp := h.API("rk-oa", "", "GET", convBase+cv.conv+"/export", "")
		lines := strings.Split(strings.TrimSpace(string(exp.Body)), "\n")
		if exp.Status != 200 || len(lines) != 5 {
			t.Fatalf("%s: export got %d with %d lines: %s", cv.conv, exp.Status, len(lines), exp.Body)
		}
		var texts []string
		for _, ln := range lines[1:] {
			if p := gjson.Get(ln, "protocol").Str; p != cv.protocol {
				t.Errorf("%s: exported line has protocol %q, want %q: %s", cv.conv, p, cv.protocol, ln)
			}
			texts = append(texts, gjson.Get(ln, "role").Str+": "+gjson.Get(ln, "text").Str)
		}
		want := []string{"user: weather in Oslo?", "assistant: get_weather\n{\"city\":\"Oslo\"}", "tool: drizzle all day", "assistant: Bring an umbrella."}
		if strings.Join(texts, "|") != strings.Join(want, "|") {
			t.Errorf("%s: exported roles and texts %q, want %q", cv.conv, texts, want)
		}
		copyID := cv.conv + "-copy"
		if a := h.API("rk-oa", "", "POST", convBase+copyID+"/import", string(exp.Body), "application/x-ndjson"); a.Status != 201 {
			t.Fatalf("%s: import got %d %s", cv.conv, a.Status, a.Body)
		}
		orig, cp := h.Stored("oa", cv.conv), h.Stored("oa", copyID)
		if len(orig) != len(cp) {
			t.Fatalf("%s: the copy holds %d messages, want %d", cv.conv, len(cp), len(orig))
		}
		for i := range orig {
			if orig[i].Protocol != cp[i].Protocol || orig[i].Hash != cp[i].Hash || orig[i].Role != cp[i].Role || string(orig[i].Raw) != string(cp[i].Raw) {
				t.Errorf("%s: message %d: copy %v %s %q, want %v %s %q", cv.conv, i+1, cp[i].Protocol, cp[i].Role, cp[i].Raw, orig[i].Protocol, orig[i].Role, orig[i].Raw)
			}
		}
	}
}
