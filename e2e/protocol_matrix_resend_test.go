package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/protocol/gemini"
	"github.com/recallproxy/recall/wire"
)

// The matrix's ninth aspect, resend: a client that holds the whole
// conversation and resends it on every request, switching protocol at
// every turn, as a coding agent whose history moves from one SDK to
// another does. Its conversation (matrixResendConv) begins on the cell's
// ingress and goes on through the others in the switch's order; each
// turn is a tool loop, and both of its requests carry every earlier
// message in the shape of the protocol they go over: the answers heard
// over that protocol as they were heard (thinking included), the others
// translated, their thinking or reasoning left out as no other protocol
// can carry it. A Messages client asks for thinking, which an Anthropic
// upstream gives.
//
// Recall must see through the resend: every request's upstream
// conversation holds each earlier message once, in order, and the store
// holds the conversation's 16 messages once each, in order, none
// superseded.

// matrixResendConv is the conversation of the resend aspect.
const matrixResendConv = "matrix-resend"

// resendEntry is one message of the conversation as the resending client
// holds it: a user's text, a tool's result, or an answer (its text and
// calls, and the messages or items it was heard as, over proto).
type resendEntry struct {
	role   string // "user", "tool" or "assistant"
	text   string
	callID string // a result's call
	calls  []resendCall
	proto  string   // the ingress an answer was heard over
	heard  []string // the answer as heard (heard.resend)
}

type resendCall struct{ id, name, args string }

// resendWords are the words of turn k: its question, the city its call
// names, its tool's result and its answer, each in one message.
func resendWords(k int) (ask, city, result, answer string) {
	animals := []string{"ibis", "lynx", "okapi", "tapir"}
	cities := []string{"Tromso", "Narvik", "Alta", "Molde"}
	a := animals[k]
	return "Resend question about the " + a + "?", cities[k], "resend result " + a + " wind", "Resend answer: the " + a + " naps."
}

func (c *matrixCell) resend(t *testing.T) {
	var held []resendEntry
	for k, in := range c.order {
		ask, city, result, answer := resendWords(k)
		held = append(held, resendEntry{role: "user", text: ask})
		c.h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{{Name: "get_weather", Arguments: `{"city":"` + city + `"}`}}},
			upstreamtest.Reply{Content: answer})
		got, up := c.resendSend(t, in, held)
		if len(got.calls) != 1 {
			t.Fatalf("turn %d over %s: got calls %q (text %q), want the get_weather call", k+1, in.name, got.calls, got.text)
		}
		c.resendSentOnce(t, fmt.Sprintf("turn %d's question over %s", k+1, in.name), up, k, false)
		held = append(held, resendEntry{role: "assistant", text: got.text, proto: in.name, heard: got.resend,
			calls: []resendCall{{id: got.calls[0], name: "get_weather", args: `{"city":"` + city + `"}`}}})
		held = append(held, resendEntry{role: "tool", callID: got.calls[0], text: result})
		got, up = c.resendSend(t, in, held)
		if got.text != answer || len(got.calls) != 0 {
			t.Fatalf("turn %d's result over %s: got %q and calls %q, want %q", k+1, in.name, got.text, got.calls, answer)
		}
		c.resendSentOnce(t, fmt.Sprintf("turn %d's result over %s", k+1, in.name), up, k, true)
		held = append(held, resendEntry{role: "assistant", text: got.text, proto: in.name, heard: got.resend})
	}
	c.resendStoredOnce(t, len(c.order))
}

// resendSend sends the whole of held over in, as in's client writes it.
func (c *matrixCell) resendSend(t *testing.T, in *matrixIngress, held []resendEntry) (heard, upstreamtest.Received) {
	t.Helper()
	var msgs []string
	for _, e := range held {
		msgs = append(msgs, e.in(t, in)...)
	}
	body := in.c.body(msgs, c.stream)
	switch in.name {
	case "messages":
		// The Messages client thinks, as Claude Code does.
		body, _ = sjson.Set(body, "max_tokens", 2000)
		body, _ = sjson.SetRaw(body, "thinking", `{"type":"enabled","budget_tokens":1024}`)
	case "responses":
		// The Responses client reasons, and keeps no state: it holds
		// the reasoning items, as Codex does.
		body, _ = sjson.Set(body, "model", "gpt-5")
		body, _ = sjson.SetRaw(body, "include", `["reasoning.encrypted_content"]`)
	}
	return c.sendBody(t, in, matrixResendConv, body)
}

// in is the entry as in's client sends it: an answer heard over in as
// it was heard, anything else translated into in's shape.
func (e resendEntry) in(t *testing.T, in *matrixIngress) []string {
	switch {
	case e.role == "user":
		return []string{in.c.user(e.text)}
	case e.role == "tool":
		return []string{in.c.result(e.callID, e.text)}
	case e.proto == in.name:
		return e.heard
	}
	q := quoteJSON
	switch in.name {
	case "chat":
		m := `{"role":"assistant","content":` + q(e.text)
		if len(e.calls) > 0 {
			var tcs []string
			for _, c := range e.calls {
				tcs = append(tcs, `{"id":`+q(c.id)+`,"type":"function","function":{"name":`+q(c.name)+`,"arguments":`+q(c.args)+`}}`)
			}
			m = `{"role":"assistant","content":null,"tool_calls":[` + strings.Join(tcs, ",") + `]`
			if e.text != "" {
				m = strings.Replace(m, "null", q(e.text), 1)
			}
		}
		return []string{m + "}"}
	case "responses":
		var items []string
		if e.text != "" {
			items = append(items, `{"type":"message","role":"assistant","content":[{"type":"output_text","text":`+q(e.text)+`}]}`)
		}
		for _, c := range e.calls {
			items = append(items, `{"type":"function_call","call_id":`+q(c.id)+`,"name":`+q(c.name)+`,"arguments":`+q(c.args)+`}`)
		}
		return items
	case "messages":
		var blocks []string
		if e.text != "" {
			blocks = append(blocks, `{"type":"text","text":`+q(e.text)+`}`)
		}
		for _, c := range e.calls {
			blocks = append(blocks, `{"type":"tool_use","id":`+q(c.id)+`,"name":`+q(c.name)+`,"input":`+c.args+`}`)
		}
		return []string{`{"role":"assistant","content":[` + strings.Join(blocks, ",") + `]}`}
	case "gemini":
		var parts []string
		if e.text != "" {
			parts = append(parts, `{"text":`+q(e.text)+`}`)
		}
		for i, c := range e.calls {
			id := `"id":` + q(c.id) + `,`
			if c.id == gemini.SyntheticID(c.name, i) {
				id = ""
			}
			parts = append(parts, `{"functionCall":{`+id+`"name":`+q(c.name)+`,"args":`+c.args+`}}`)
		}
		return []string{`{"role":"model","parts":[` + strings.Join(parts, ",") + `]}`}
	}
	t.Fatalf("no translation into %s", in.name)
	return nil
}

// resendSentOnce fails the test unless up's conversation holds each word
// of turns 1 to k+1 (of turn k+1 only its question, unless whole) once,
// in the order they were said; thinking, which repeats the question it
// thinks about, aside.
func (c *matrixCell) resendSentOnce(t *testing.T, what string, up upstreamtest.Received, k int, whole bool) {
	t.Helper()
	var words []string
	for i := 0; i <= k; i++ {
		ask, city, result, answer := resendWords(i)
		words = append(words, ask)
		if i < k || whole {
			words = append(words, city, result)
		}
		if i < k {
			words = append(words, answer)
		}
	}
	text := strings.Join(resendStrings(up.Messages), "\n")
	at := -1
	for _, w := range words {
		switch n := strings.Count(text, w); {
		case n != 1:
			t.Errorf("%s: the upstream request holds %q %d times, want once: %s", what, w, n, join(up.Messages))
		case strings.Index(text, w) < at:
			t.Errorf("%s: the upstream request holds %q out of order: %s", what, w, join(up.Messages))
		default:
			at = strings.Index(text, w)
		}
	}
}

// resendStoredOnce fails the test unless the resend conversation's store
// holds turns tool loops, each message once, in order: the question, the
// call, the result and the answer, none of them inactive; and the
// reasoning items stored beside them once each.
func (c *matrixCell) resendStoredOnce(t *testing.T, turns int) {
	t.Helper()
	stored := c.h.Stored(c.tenant, matrixResendConv)
	meta := c.h.Meta(c.tenant, matrixResendConv)
	var got []string
	thoughts := map[uint64]bool{}
	for _, m := range stored {
		flags := m.Flags | meta.FlagsAt(m.Seq)
		s := m.Codec().Role(m.Raw) + " " + strings.ReplaceAll(string(m.Text()), "\n", " ")
		if flags&history.Inactive != 0 {
			s += fmt.Sprintf(" (inactive %d)", flags)
		} else if tc, ok := m.Codec().(wire.Thinking); ok {
			// A reasoning item of its own: stored once, where it came.
			if _, empty, ok := tc.WithoutThinking(m.Raw); ok && empty {
				if thoughts[m.Hash] {
					t.Errorf("the store holds reasoning %s twice", m.Raw)
				}
				thoughts[m.Hash] = true
				continue
			}
		}
		got = append(got, s)
	}
	var want []string
	for k := range turns {
		ask, city, result, answer := resendWords(k)
		want = append(want, "user "+ask, `assistant get_weather {"city":"`+city+`"}`, "tool "+result, "assistant "+answer)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the store holds %d messages:\n%s\nwant %d:\n%s", len(got), strings.Join(got, "\n"), len(want), strings.Join(want, "\n"))
	}
}

// resendStrings are the strings in msgs, thinking and signatures aside.
func resendStrings(msgs []json.RawMessage) []string {
	var out []string
	var walk func(r gjson.Result)
	walk = func(r gjson.Result) {
		if typ := r.Get("type").Str; r.IsObject() && (typ == "thinking" || typ == "redacted_thinking" || typ == "reasoning" ||
			r.Get("thought").Type == gjson.True) {
			return
		}
		r.ForEach(func(k, v gjson.Result) bool {
			switch {
			case k.Str == "thoughtSignature" || k.Str == "signature":
			case v.Type == gjson.String:
				out = append(out, v.Str)
			case v.IsObject() || v.IsArray():
				walk(v)
			}
			return true
		})
	}
	for _, m := range msgs {
		walk(gjson.ParseBytes(m))
	}
	return out
}
