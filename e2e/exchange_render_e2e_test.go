package e2e

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// renderedExchange is an exchange rendered with ?render=messages.
type renderedExchange struct {
	history.ExchangeRecord
	Messages []struct {
		Seq       *uint64         `json:"seq"`
		Kind      string          `json:"kind"`
		Text      string          `json:"text"`
		Content   json.RawMessage `json:"content"`
		Forgotten bool            `json:"forgotten"`
		Replaced  bool            `json:"replaced"`
		Cut       bool            `json:"cut"`
		Repaired  bool            `json:"repaired"`
	} `json:"messages"`
	Sent *struct {
		Protocol     string            `json:"protocol"`
		Instructions []json.RawMessage `json:"instructions"`
		Messages     []json.RawMessage `json:"messages"`
		Complete     bool              `json:"complete"`
	} `json:"sent"`
}

func renderExchange(t *testing.T, h *e2etest.Harness, conv, xid string) renderedExchange {
	t.Helper()
	return renderExchangeAs(t, h, key, conv, xid)
}

// renderExchangeAs is renderExchange with the API key k.
func renderExchangeAs(t *testing.T, h *e2etest.Harness, k, conv, xid string) renderedExchange {
	t.Helper()
	a := h.API(k, "", "GET", "/recall/v1/conversations/"+conv+"/exchanges/"+xid+"?render=messages", "")
	if a.Status != 200 {
		t.Fatalf("render %s: %d %s", xid, a.Status, a.Body)
	}
	var x renderedExchange
	a.JSON(t, &x)
	return x
}

// jsonEqual reports whether a and b hold the same JSON values.
func jsonEqual(t *testing.T, a, b []json.RawMessage) bool {
	t.Helper()
	var va, vb []any
	for _, m := range a {
		var v any
		if err := json.Unmarshal(m, &v); err != nil {
			t.Fatalf("not JSON: %s", m)
		}
		va = append(va, v)
	}
	for _, m := range b {
		var v any
		if err := json.Unmarshal(m, &v); err != nil {
			t.Fatalf("not JSON: %s", m)
		}
		vb = append(vb, v)
	}
	return reflect.DeepEqual(va, vb)
}

// TestTheRenderIsWhatTheUpstreamReceived: an exchange's render=messages
// is the context the upstream received, not the stored messages: an
// earlier tool result cut for the context shows cut, a tool call repair
// left out is left out, the summary goes with the role the client's
// instructions have, and its sent view, in the upstream's protocol,
// equals as JSON the messages the strict fake upstream recorded (the
// client's own instructions, never stored, aside). A Messages client on
// a chat-completions upstream gets the same, translated.
func TestTheRenderIsWhatTheUpstreamReceived(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{Global: func(g *config.Global) {
		g.Defaults.History.OldToolResultChars = 100
	}})
	long := strings.Repeat("x", 3000)

	t.Run("chat completions", func(t *testing.T) {
		conv := "render-chat"
		say := func(body string) {
			t.Helper()
			h.PostDone("/v1/chat/completions", key, conv, body)
		}
		say(`{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}]}`) // seqs 1-2
		h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{{ID: "call_1", Name: "read", Arguments: "{}"}}})
		say(`{"model":"gpt-4o","messages":[{"role":"user","content":"read it"}]}`)                              // seqs 3-4
		say(`{"model":"gpt-4o","messages":[{"role":"tool","tool_call_id":"call_1","content":"` + long + `"}]}`) // seqs 5-6
		// A call the client never answers: the next request sends it
		// repaired away.
		h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{{ID: "call_2", Name: "read", Arguments: "{}"}}})
		say(`{"model":"gpt-4o","messages":[{"role":"user","content":"and again"}]}`) // seqs 7-8
		ns := h.PassNamespace(key)
		m := h.Meta(ns, conv)
		if _, err := h.History.Commit(context.Background(), history.Key{Tenant: ns, Conversation: conv}, history.Change{Summary: &history.SummaryChange{
			Incarnation: m.Incarnation, Epoch: m.Epoch, Summary: history.Summary{Text: "They said hello.", Through: 2, Turns: 1, Tokens: 8}}}); err != nil {
			t.Fatal(err)
		}
		say(`{"model":"gpt-4o","messages":[{"role":"developer","content":"be brief"},{"role":"user","content":"never mind, what now"}]}`) // seqs 9-10
		got := h.Up.Last().Messages

		recs := exchanges(t, h, conv)
		r := recs[0]
		if len(r.Cut) != 1 || r.Cut[0].Seq != 5 || r.RepairedCalls == 0 || r.Summary == nil || r.Summary.Role != "developer" {
			t.Fatalf("the record: cut %+v, %d repaired, summary %+v; want seq 5 cut, a call repaired, a developer summary", r.Cut, r.RepairedCalls, r.Summary)
		}
		x := renderExchange(t, h, conv, r.ID)
		if x.Sent == nil || x.Sent.Protocol != "chat.completions" || !x.Sent.Complete {
			t.Fatalf("sent: %+v, want a complete chat-completions context", x.Sent)
		}
		// The upstream got the client's instruction first, never stored.
		want := got[1:]
		if sent := append(append([]json.RawMessage{}, x.Sent.Instructions...), x.Sent.Messages...); !jsonEqual(t, sent, want) {
			t.Errorf("the render's sent context is not what the upstream received:\ngot  %s\nwant %s", join(sent), join(want))
		}
		for _, msg := range x.Messages {
			switch {
			case msg.Seq != nil && *msg.Seq == 5:
				if !msg.Cut || !strings.Contains(msg.Text, "[truncated for context: 100 of 3000 characters]") || len(msg.Text) > 200 {
					t.Errorf("the cut tool result renders cut %v, %d characters ending %q; want it cut to 100 characters", msg.Cut, len(msg.Text), msg.Text[max(0, len(msg.Text)-60):])
				}
			case msg.Seq != nil && *msg.Seq == 8:
				if !msg.Repaired || msg.Content != nil && string(msg.Content) != "null" {
					t.Errorf("the unanswered call renders repaired %v, content %s; want it left out", msg.Repaired, msg.Content)
				}
			case msg.Kind == "summary":
				if msg.Replaced || !strings.Contains(msg.Text, "They said hello.") {
					t.Errorf("the summary renders %q (replaced %v), want the one sent", msg.Text, msg.Replaced)
				}
			}
		}
	})

	t.Run("a Messages client on a chat-completions upstream", func(t *testing.T) {
		conv := "render-messages"
		say := func(msg string) {
			t.Helper()
			h.PostDone("/v1/messages", key, conv, `{"model":"gpt-4o","max_tokens":256,"messages":[`+msg+`]}`)
		}
		h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{{ID: "call_9", Name: "read", Arguments: "{}"}}})
		say(`{"role":"user","content":"read it"}`)
		say(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_9","content":"` + long + `"}]}`)
		say(`{"role":"user","content":"what did it say?"}`)
		got := h.Up.Last().Messages

		recs := exchanges(t, h, conv)
		r := recs[0]
		if len(r.Cut) != 1 {
			t.Fatalf("cut %+v, want the tool result", r.Cut)
		}
		x := renderExchange(t, h, conv, r.ID)
		if x.Sent == nil || x.Sent.Protocol != "chat.completions" || !x.Sent.Complete || len(x.Sent.Instructions) != 0 {
			t.Fatalf("sent: %+v, want a complete chat-completions context", x.Sent)
		}
		if !jsonEqual(t, x.Sent.Messages, got) {
			t.Errorf("the render's sent context is not what the upstream received:\ngot  %s\nwant %s", join(x.Sent.Messages), join(got))
		}
		if !strings.Contains(join(x.Sent.Messages), "[truncated for context: 100 of 3000 characters]") {
			t.Errorf("the sent context lacks the cut: %s", join(x.Sent.Messages))
		}
	})
}

func join(msgs []json.RawMessage) string {
	s := make([]string, len(msgs))
	for i, m := range msgs {
		s[i] = string(m)
	}
	return strings.Join(s, "\n     ")
}

// TestTheRenderOnAnAnthropicUpstream: a chat client's exchange on an
// Anthropic upstream renders in the Messages API's shape, equal as JSON
// to the messages the strict fake upstream received, the cut tool result
// and the summary (in the request's system) included.
func TestTheRenderOnAnAnthropicUpstream(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{Tenants: map[string]string{"an.yaml": "id: an\napi_keys: [\"rk-an\"]\nupstream:\n  base_url: \"{{UPSTREAM}}\"\n" +
		"  api_key: \"sk-up-an\"\n  protocol: anthropic\nhistory:\n  old_tool_result_chars: 100\n"}})
	conv := "render-anthropic"
	say := func(body string) {
		t.Helper()
		h.PostDone("/v1/chat/completions", "rk-an", conv, body)
	}
	say(`{"model":"claude-sonnet-4-5","max_tokens":200,"messages":[{"role":"user","content":"hello"}]}`)
	h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{{ID: "toolu_1", Name: "read", Arguments: "{}"}}})
	say(`{"model":"claude-sonnet-4-5","max_tokens":200,"messages":[{"role":"user","content":"read it"}]}`)
	say(`{"model":"claude-sonnet-4-5","max_tokens":200,"messages":[{"role":"tool","tool_call_id":"toolu_1","content":"` + strings.Repeat("y", 3000) + `"}]}`)
	m := h.Meta("an", conv)
	if _, err := h.History.Commit(context.Background(), history.Key{Tenant: "an", Conversation: conv}, history.Change{Summary: &history.SummaryChange{
		Incarnation: m.Incarnation, Epoch: m.Epoch, Summary: history.Summary{Text: "They said hello.", Through: 2, Turns: 1, Tokens: 8}}}); err != nil {
		t.Fatal(err)
	}
	say(`{"model":"claude-sonnet-4-5","max_tokens":200,"messages":[{"role":"user","content":"what did it say?"}]}`)
	var body struct {
		System   json.RawMessage   `json:"system"`
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(h.Up.Last().Body, &body); err != nil {
		t.Fatal(err)
	}

	flush(t, h)
	var l exchangeList
	h.API("rk-an", "", "GET", "/recall/v1/conversations/"+conv+"/exchanges", "").JSON(t, &l)
	if len(l.Data) == 0 {
		t.Fatal("no exchange recorded")
	}
	r := l.Data[0]
	if r.Upstream != "messages" || len(r.Cut) != 1 || r.Summary == nil {
		t.Fatalf("the record: upstream %s, cut %+v, summary %+v; want messages, a cut, a summary", r.Upstream, r.Cut, r.Summary)
	}
	x := renderExchangeAs(t, h, "rk-an", conv, r.ID)
	if x.Sent == nil || x.Sent.Protocol != "messages" || !x.Sent.Complete {
		t.Fatalf("sent: %+v, want a complete Messages context", x.Sent)
	}
	if !jsonEqual(t, x.Sent.Messages, body.Messages) {
		t.Errorf("the render's messages are not what the upstream received:\ngot  %s\nwant %s", join(x.Sent.Messages), join(body.Messages))
	}
	if !strings.Contains(join(x.Sent.Messages), "[truncated for context: 100 of 3000 characters]") {
		t.Errorf("the sent messages lack the cut: %s", join(x.Sent.Messages))
	}
	if len(x.Sent.Instructions) == 0 || !strings.Contains(string(body.System), "They said hello.") || !strings.Contains(join(x.Sent.Instructions), "They said hello.") {
		t.Errorf("the summary: rendered %s, the upstream's system %s; want it in both", join(x.Sent.Instructions), body.System)
	}
}

// TestTheRenderCutsTheSummaryAsItWasSent: a summary too long for a
// small model's window beside the current turn is sent cut; the render
// cuts the stored summary the same way, and equals what the upstream
// received.
func TestTheRenderCutsTheSummaryAsItWasSent(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{Global: func(g *config.Global) {
		g.Defaults.History.ModelWindows = map[string]int{"tiny-model": 1200}
	}})
	conv := "render-summary-cut"
	say := func(text string) {
		t.Helper()
		h.PostDone("/v1/chat/completions", key, conv, `{"model":"tiny-model","max_tokens":100,"messages":[{"role":"user","content":"`+text+`"}]}`)
	}
	say("hello")
	say("how are you")
	var long strings.Builder
	for i := range 300 {
		long.WriteString("In turn " + strings.Repeat("x", i%7+1) + " they spoke of the weather at length. ")
	}
	ns := h.PassNamespace(key)
	m := h.Meta(ns, conv)
	if _, err := h.History.Commit(context.Background(), history.Key{Tenant: ns, Conversation: conv}, history.Change{Summary: &history.SummaryChange{
		Incarnation: m.Incarnation, Epoch: m.Epoch, Summary: history.Summary{Text: long.String(), Through: 2, Turns: 1, Tokens: 3000}}}); err != nil {
		t.Fatal(err)
	}
	say("and now?")
	got := h.Up.Last().Messages

	r := exchanges(t, h, conv)[0]
	if r.Summary == nil || !r.Summary.Cut {
		t.Fatalf("the record's summary %+v, want one sent cut", r.Summary)
	}
	x := renderExchange(t, h, conv, r.ID)
	if x.Sent == nil || !x.Sent.Complete || len(x.Sent.Instructions) != 1 {
		t.Fatalf("sent: %+v, want a complete context with the summary", x.Sent)
	}
	if sent := append(append([]json.RawMessage{}, x.Sent.Instructions...), x.Sent.Messages...); !jsonEqual(t, sent, got) {
		t.Errorf("the render's sent context is not what the upstream received:\ngot  %.300s\nwant %.300s", join(sent), join(got))
	}
}
