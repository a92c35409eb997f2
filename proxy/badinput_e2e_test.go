package proxy_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/proxy"
)

func TestBadRequestsAreRefusedAndStoreNothing(t *testing.T) {
	h := newHarness(t, e2etest.Options{Proxy: func(c *proxy.Config) { c.MaxBodyBytes = 64 << 10 }})
	// A conversation with one committed turn, which no bad request may change.
	if r := h.Post("/v1/chat/completions", key, "bad-1", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`); r.Status != 200 {
		t.Fatalf("setup: %d %s", r.Status, r.Body)
	}
	before := len(h.Stored(h.PassNamespace(key), "bad-1"))
	upstreamBefore := h.Up.Count()

	tests := []struct {
		name, path, conv, body string
		status                 int
		code, param            string
	}{
		{name: "invalid json", conv: "bad-1", body: `{"model":`, status: 400},
		{name: "not an object", conv: "bad-1", body: `[1,2]`, status: 400},
		{name: "no messages", conv: "bad-1", body: `{"model":"gpt-4o"}`, status: 400, param: "messages"},
		{name: "empty messages", conv: "bad-1", body: `{"messages":[]}`, status: 400, param: "messages"},
		{name: "messages wrong type", conv: "bad-1", body: `{"messages":"hi"}`, status: 400, param: "messages"},
		{name: "unknown role", conv: "bad-1", body: `{"messages":[{"role":"wizard","content":"x"}]}`, status: 400, param: "messages[0].role"},
		{name: "tool without id", conv: "bad-1", body: `{"messages":[{"role":"tool","content":"x"}]}`, status: 400},
		{name: "stream wrong type", conv: "bad-1", body: `{"stream":"yes","messages":[{"role":"user","content":"x"}]}`, status: 400, param: "stream"},
		{name: "bad conversation id", conv: "no spaces allowed", body: `{"messages":[{"role":"user","content":"x"}]}`, status: 400, code: "invalid_conversation_id"},
		{name: "conversation id too long", conv: strings.Repeat("a", 129), body: `{"messages":[{"role":"user","content":"x"}]}`, status: 400, code: "invalid_conversation_id"},
		{name: "bad id in path", path: "/c/bad%20id/v1/chat/completions", body: `{"messages":[{"role":"user","content":"x"}]}`, status: 400, code: "invalid_conversation_id"},
		{name: "body too large", conv: "bad-1", body: `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 70<<10) + `"}]}`, status: 413, code: "request_too_large"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if path == "" {
				path = "/v1/chat/completions"
			}
			r := h.Post(path, key, tc.conv, tc.body)
			if r.Status != tc.status {
				t.Fatalf("got status %d, want %d: %s", r.Status, tc.status, r.Body)
			}
			var e apierr.OpenAIBody
			if err := json.Unmarshal([]byte(r.Body), &e); err != nil || e.Error.Message == "" || e.Error.Type != "invalid_request_error" {
				t.Fatalf("body is not an OpenAI error: %s", r.Body)
			}
			if tc.code != "" && (e.Error.Code == nil || *e.Error.Code != tc.code) {
				t.Errorf("got code %v, want %s", e.Error.Code, tc.code)
			}
			if tc.param != "" && (e.Error.Param == nil || *e.Error.Param != tc.param) {
				t.Errorf("got param %v, want %s", e.Error.Param, tc.param)
			}
		})
	}
	if after := len(h.Stored(h.PassNamespace(key), "bad-1")); after != before {
		t.Errorf("stored messages went from %d to %d", before, after)
	}
	if h.Up.Count() != upstreamBefore {
		t.Errorf("bad requests reached the upstream")
	}
}

func TestBadHistoryModeHeader(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	r := h.PostHeaders("/v1/chat/completions", map[string]string{"Authorization": "Bearer " + key, "X-Conversation-ID": "m-1", "X-Recall-History": "everything"},
		`{"messages":[{"role":"user","content":"x"}]}`)
	if r.Status != 400 || !strings.Contains(r.Body, "invalid_history_mode") {
		t.Errorf("got %d %s", r.Status, r.Body)
	}
}

func TestHistoryModeOffNeitherInjectsNorRecords(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	if r := h.Post("/v1/chat/completions", key, "off-1", `{"messages":[{"role":"user","content":"one"}]}`); r.Status != 200 {
		t.Fatal(r.Body)
	}
	r := h.PostHeaders("/v1/chat/completions", map[string]string{"Authorization": "Bearer " + key, "X-Conversation-ID": "off-1", "X-Recall-History": "off"},
		`{"messages":[{"role":"user","content":"two"}]}`)
	if r.Status != 200 {
		t.Fatal(r.Body)
	}
	if got := e2etest.RenderAll(h.Up.Last().Messages); !slices.Equal(got, []string{"user:two"}) {
		t.Errorf("upstream got %q", got)
	}
	if n := len(h.Stored(h.PassNamespace(key), "off-1")); n != 2 {
		t.Errorf("stored %d messages, want 2", n)
	}
}

// The budget bounds what Recall adds, never what the client sends: a
// current turn over the budget that the model takes is sent with the
// newest earlier turn while the model's window holds both, alone past
// that, said in X-Recall-Curation, and recorded; only one over the
// model's window is a 400, in OpenAI's words.
func TestCurrentTurnOverBudget(t *testing.T) {
	h := newHarness(t, e2etest.Options{Global: func(g *config.Global) { g.Defaults.History.BudgetTokens = 300 }})
	if r := h.Post("/v1/chat/completions", key, "big-1", e2etest.ChatBody("a short first turn", false)); r.Status != 200 {
		t.Fatalf("first turn: got %d %s", r.Status, r.Body)
	}
	h.WaitDone("big-1")
	long := strings.Repeat("word ", 400)
	r := h.Post("/v1/chat/completions", key, "big-1", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"`+long+`"}]}`)
	if r.Status != 200 {
		t.Fatalf("got %d %s, want 200", r.Status, r.Body)
	}
	if got := r.Header.Get("X-Recall-Curation"); !strings.Contains(got, "over_budget=newest_turn_kept") {
		t.Errorf("X-Recall-Curation %q, want it to say the newest earlier turn was kept", got)
	}
	if got := e2etest.RenderAll(h.Up.Last().Messages); len(got) != 3 || got[0] != "user:a short first turn" || !strings.HasPrefix(got[2], "user:word") {
		t.Errorf("upstream got %q, want the first turn and the current one", got)
	}
	h.WaitDone("big-1")
	if n := len(h.Stored(h.PassNamespace(key), "big-1")); n != 4 {
		t.Errorf("stored %d messages, want 4", n)
	}

	// gpt-4's window is 8,192 tokens: over it, the model would refuse too.
	r = h.Post("/v1/chat/completions", key, "big-1", `{"model":"gpt-4","messages":[{"role":"user","content":"`+strings.Repeat(long, 25)+`"}]}`)
	if r.Status != 400 || !strings.Contains(r.Body, `"code":"context_length_exceeded"`) ||
		!strings.Contains(r.Body, `"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in `) ||
		strings.Contains(r.Body, "history:") {
		t.Fatalf("got %d %s, want OpenAI's context_length_exceeded", r.Status, r.Body)
	}
	h.WaitDone("big-1")
	if n := len(h.Stored(h.PassNamespace(key), "big-1")); n != 4 {
		t.Errorf("stored %d messages, want still 4", n)
	}
}

// A turn too big for one store transaction (here 40,000 tiny messages)
// is stored whole, not answered 200 and lost.
func TestTurnTooBigForOneTransaction(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	var b strings.Builder
	b.WriteString(`{"model":"unknown-model","messages":[`)
	for i := range 40000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"role":"user","content":"m%d"}`, i)
	}
	b.WriteString(`]}`)
	r := h.Post("/v1/chat/completions", key, "many-1", b.String())
	if r.Status != 200 {
		t.Fatalf("got %d %s, want 200", r.Status, r.Body)
	}
	if d := h.WaitDone("many-1"); !d.Committed {
		t.Fatalf("got %+v, want a committed exchange", d)
	}
	if n := len(h.Stored(h.PassNamespace(key), "many-1")); n != 40001 {
		t.Errorf("stored %d messages, want 40,001", n)
	}
	// Sync to the first message supersedes 40,000 stored messages at once.
	r = h.PostHeaders("/v1/chat/completions", map[string]string{"Authorization": "Bearer " + key, "X-Conversation-ID": "many-1",
		"X-Recall-History": "sync", "Content-Type": "application/json"},
		`{"model":"unknown-model","messages":[{"role":"user","content":"m0"},{"role":"user","content":"instead"}]}`)
	if r.Status != 200 {
		t.Fatalf("sync: got %d %s, want 200", r.Status, r.Body)
	}
	h.WaitDone("many-1")
	if got := e2etest.Active(h.Stored(h.PassNamespace(key), "many-1")); len(got) != 3 {
		t.Errorf("after sync: got %d active messages, want 3", len(got))
	}
}
