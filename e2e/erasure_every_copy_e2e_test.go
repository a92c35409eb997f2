package e2e

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/summary"
)

// TestErasureReachesEveryCopy: a caller's model reads two conversations
// through get_conversation and search_conversations, in Recall's own
// rounds and in an answer that also calls the client's tool (whose
// results Recall stores in the caller's turn); the caller's turns are
// summarised; then one source is deleted and the other's turn holding
// its secret is hard-forgotten. Neither secret is then anywhere: not in
// the caller's (or the forgotten source's) API views (the conversation,
// the list, messages with forgotten ones, context, export, search, every
// exchange record rendered), not in the tenant's search, not in a summary
// or what the summariser was given, not in the server's log, not in the
// caller's next upstream request. On Badger and on PostgreSQL.
func TestErasureReachesEveryCopy(t *testing.T) {
	for _, store := range []string{"badger", "postgresql"} {
		t.Run(store, func(t *testing.T) {
			o := e2etest.Options{Tenants: toolsTenant("4"), Global: summaryOn(100, 1), Summary: func(*summary.Config) {}}
			if store == "postgresql" {
				o.PostgreSQL = pgtest.DB(t)
			}
			erasureEverywhere(t, e2etest.New(t, o))
		})
	}
}

func erasureEverywhere(t *testing.T, h *e2etest.Harness) {
	const (
		k        = "rk-acme-1"
		passport = "PASSPORT-X7731Q" // in src-del, which is deleted
		vault    = "VAULT-5521K"     // in src-fgt's first turn, hard-forgotten
	)
	secrets := []string{passport, vault, "X7731Q", "5521K"}
	h.Say(k, "src-del", "my passport number is "+passport)
	h.Say(k, "src-fgt", "the vault code is "+vault)
	h.Say(k, "src-fgt", "an unrelated second note")

	// Turn 1: Recall's rounds read both sources by both tools.
	h.Up.Enqueue(
		upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{toolCall("get_conversation", `{"conversation_id":"src-del"}`), toolCall("search_conversations", `{"query":"vault"}`)}},
		upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{toolCall("get_conversation", `{"conversation_id":"src-fgt"}`), toolCall("search_conversations", `{"query":"passport"}`)}},
		upstreamtest.Reply{Content: "Found them."},
	)
	before := len(h.Up.Requests())
	h.PostDone("/v1/chat/completions", k, "caller", `{"model":"gpt-4o","messages":[{"role":"user","content":"what are my numbers?"}]}`)
	if reqs := h.Up.Requests()[before:]; len(reqs) != 3 || !carries(reqs[1].Body, passport, vault) || !carries(reqs[2].Body, passport, vault) {
		t.Fatalf("turn 1: %d upstream requests; want 3, the later two given both secrets by the tools", len(reqs))
	}

	// Turn 2: one answer calls Recall's tools and the client's; the
	// client answers its own call. Another conversation, never
	// summarised, makes the same turn.
	tools := `"tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object","properties":{}}}}]`
	mixed := func(conv string) {
		t.Helper()
		h.Up.Enqueue(
			upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{
				{ID: "call_g", Name: "get_conversation", Arguments: `{"conversation_id":"src-del"}`},
				{ID: "call_s", Name: "search_conversations", Arguments: `{"query":"vault"}`},
				{ID: "call_l", Name: "lookup", Arguments: `{}`}}},
			upstreamtest.Reply{Content: "Done."},
		)
		user := `{"role":"user","content":"check again"}`
		r := h.Post("/v1/chat/completions", k, conv, `{"model":"gpt-4o",`+tools+`,"messages":[`+user+`]}`)
		h.WaitDone(conv)
		if r.Status != 200 || gjson.Get(r.Body, "choices.0.message.tool_calls.#.id").String() != `["call_l"]` {
			t.Fatalf("%s, turn 2: %d %s, want the client's call only", conv, r.Status, r.Body)
		}
		call := gjson.Get(r.Body, "choices.0.message").Raw
		before := len(h.Up.Requests())
		r = h.Post("/v1/chat/completions", k, conv, `{"model":"gpt-4o",`+tools+`,"messages":[`+user+`,`+call+`,{"role":"tool","tool_call_id":"call_l","content":"nothing"}]}`)
		h.WaitDone(conv)
		if r.Status != 200 || gjson.Get(r.Body, "choices.0.message.content").String() != "Done." {
			t.Fatalf("%s, turn 2, the client's result: %d %s", conv, r.Status, r.Body)
		}
		if reqs := h.Up.Requests()[before:]; len(reqs) != 1 {
			t.Fatalf("%s, turn 2, the client's result: %d upstream requests, want 1", conv, len(reqs))
		}
	}
	mixed("caller")
	mixed("unsummarised")
	// say sends a user turn with the client's tools (a request without
	// them would be a side call: package thread).
	say := func(conv, text string) {
		t.Helper()
		r := h.Post("/v1/chat/completions", k, conv, `{"model":"gpt-4o",`+tools+`,"messages":[{"role":"user","content":"`+text+`"}]}`)
		if d := h.WaitDone(conv); r.Status != 200 || !d.Committed {
			t.Fatalf("%s, %s: %d %s, committed %v", conv, text, r.Status, r.Body, d.Committed)
		}
	}
	say("caller", "one more thing")
	say("caller", "and another")

	// The caller's first turns are summarised before the erasure.
	if a := h.API(k, "", "POST", convBase+"caller/summarize", ""); a.Status != 200 {
		t.Fatalf("summarize: %d %s", a.Status, a.Body)
	}
	if m := h.Meta("acme", "caller"); m.Summary == nil || m.Summary.Through < 14 {
		t.Fatalf("the caller's summary is %+v, want one covering turns 1 and 2 (seqs 1-14)", m.Summary)
	}

	if a := h.API(k, "", "DELETE", convBase+"src-del", ""); a.Status != 200 {
		t.Fatalf("delete: %d %s", a.Status, a.Body)
	}
	if a := h.API(k, "", "POST", convBase+"src-fgt/forget", `{"instruction":"before:turn_2","mode":"hard"}`); a.Status != 200 {
		t.Fatalf("hard forget: %d %s", a.Status, a.Body)
	}

	leaks := func(where string, body []byte) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(string(body), s) {
				t.Errorf("%s holds %q: %.600s", where, s, body)
				return
			}
		}
	}
	get := func(path string) []byte {
		t.Helper()
		a := h.API(k, "", "GET", path, "")
		if a.Status != 200 {
			t.Fatalf("GET %s: %d %s", path, a.Status, a.Body)
		}
		return a.Body
	}
	if a := h.API(k, "", "GET", convBase+"src-del", ""); a.Status != 404 {
		t.Errorf("the deleted source: %d %s, want 404", a.Status, a.Body)
	}
	flush(t, h)
	leaks("the conversation list", get("/recall/v1/conversations?limit=100"))
	for _, s := range []string{"X7731Q", "5521K", "passport", "vault"} {
		if b := get("/recall/v1/search?q=" + s); gjson.GetBytes(b, "data.#").Int() != 0 {
			leaks("search for "+s, b)
		}
	}
	for _, conv := range []string{"caller", "unsummarised", "src-fgt"} {
		base := convBase + conv
		leaks(conv, get(base))
		leaks(conv+"'s messages", get(base+"/messages?limit=100&include=superseded,forgotten"))
		leaks(conv+"'s context", get(base+"/context?model=gpt-4o"))
		leaks(conv+"'s export", get(base+"/export"))
		leaks(conv+"'s search", get(base+"/search?q=passport"))
		xs := get(base + "/exchanges?limit=200")
		leaks(conv+"'s exchange records", xs)
		for _, id := range gjson.GetBytes(xs, "data.#.id").Array() {
			leaks(conv+"'s exchange "+id.Str+" rendered", get(base+"/exchanges/"+id.Str+"?render=messages"))
		}
		for _, m := range h.Stored("acme", conv) {
			leaks(conv+"'s stored message", m.Raw)
		}
		if s := h.Meta("acme", conv).Summary; s != nil {
			leaks(conv+"'s stored summary", []byte(s.Text))
		}
	}
	// The fake's summary keeps only the transcript's user lines: what the
	// summariser was given (the caller's turns: no source is summarised)
	// stands for what a model's summary keeps.
	summarised := 0
	for _, q := range h.Up.Requests() {
		if q.Summary {
			summarised++
			leaks("the summariser's request", q.Body)
		}
	}
	if summarised == 0 {
		t.Errorf("no summariser request reached the upstream")
	}
	leaks("the server's log", []byte(h.Logs.String()))
	for _, conv := range []string{"caller", "unsummarised"} {
		say(conv, "thanks")
		next := h.Up.Last().Body
		if !carries(next, "check again", "thanks") {
			t.Errorf("%s's next upstream request lacks its history: %.600s", conv, next)
		}
		leaks(conv+"'s next upstream request", next)
	}
}

// carries reports whether body holds every one of texts.
func carries(body []byte, texts ...string) bool {
	for _, s := range texts {
		if !strings.Contains(string(body), s) {
			return false
		}
	}
	return true
}
