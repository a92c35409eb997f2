package proxy_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/summary"
)

// Agents pointed at /c/{id}/v1 start every process with the same opening
// messages and often resend their whole conversation, with item ids they
// mint per request and cache hints they move to the newest message. These tests drive such a client over HTTP through Recall to
// the strict fake upstream.

const (
	agentPreamble = `{"role":"system","content":"You are a coding agent."}`
	agentEnv      = `{"role":"user","content":"<env>cwd: /work/repo, os: linux</env>"}`
)

// agentPost sends msgs (JSON objects) to conversation conv by path prefix
// and returns the upstream's answer as a message the client would resend.
func (h *harness) agentPost(conv string, msgs ...string) string {
	h.T.Helper()
	body := `{"model":"gpt-4o","messages":[` + strings.Join(msgs, ",") + `]}`
	r := h.Post("/c/"+conv+"/v1/chat/completions", key, "", body)
	if r.Status != 200 {
		h.T.Fatalf("status %d: %s", r.Status, r.Body)
	}
	var resp struct {
		Choices []struct {
			Message json.RawMessage `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(r.Body), &resp); err != nil || len(resp.Choices) == 0 {
		h.T.Fatalf("answer %s: %v", r.Body, err)
	}
	h.WaitDone(conv)
	return string(resp.Choices[0].Message)
}

func userMsg(text string) string {
	b, _ := json.Marshal(map[string]string{"role": "user", "content": text})
	return string(b)
}

// superseded counts a conversation's stored messages that are no longer
// active.
func superseded(h *harness, conv string) int {
	n := 0
	for _, m := range h.Stored(h.PassNamespace(key), conv) {
		if !m.Active() {
			n++
		}
	}
	return n
}

// An agent restarted with the same preamble and opening message keeps
// the memory of its earlier processes, and its environment preamble,
// identical to the stored one, is kept once (history.repeatsPreamble).
func TestRestartedAgentKeepsMemory(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	const conv = "agent-restart"
	// First process: a task, then a full resend with a follow-up.
	a1 := h.agentPost(conv, agentPreamble, agentEnv, userMsg("fix the failing test"))
	h.agentPost(conv, agentPreamble, agentEnv, userMsg("fix the failing test"), a1, userMsg("now run the linter"))

	// Second process: same preamble and opening message, a new question.
	h.agentPost(conv, agentPreamble, agentEnv, userMsg("what did you change earlier?"))
	got := e2etest.RenderAll(h.Up.Last().Messages)
	want := []string{
		"system:You are a coding agent.",
		"user:<env>cwd: /work/repo, os: linux</env>", "user:fix the failing test", "assistant:echo: fix the failing test",
		"user:now run the linter", "assistant:echo: now run the linter",
		"user:what did you change earlier?",
	}
	if !slices.Equal(got, want) {
		t.Errorf("upstream got %q, want %q", got, want)
	}
	if n := superseded(h, conv); n != 0 {
		t.Errorf("got %d superseded messages, want 0", n)
	}
	if got := len(e2etest.Active(h.Stored(h.PassNamespace(key), conv))); got != 7 {
		t.Errorf("got %d active messages, want 7", got)
	}
}

// Once a summary covers the stored environment preamble, a later
// process's identical one is still kept once: not stored again, and sent
// upstream once, first after the summary, with every request (the agent
// means it to go with every request).
func TestRestartedAgentPreambleAfterSummary(t *testing.T) {
	h := newHarness(t, e2etest.Options{
		Global: func(g *config.Global) {
			g.Defaults.Summary.Enabled, g.Defaults.Summary.TriggerTurns, g.Defaults.Summary.KeepTurns = true, 2, 1
		},
		Summary: func(*summary.Config) {},
	})
	const conv = "agent-preamble-summary"
	// First process: its preamble is a turn of its own (a user message
	// follows it); its third turn makes the summary fold the first two.
	a1 := h.agentPost(conv, agentPreamble, agentEnv, userMsg("fix the failing test"))
	h.agentPost(conv, agentPreamble, agentEnv, userMsg("fix the failing test"), a1, userMsg("now run the linter"))
	if d := h.WaitJob(conv); d.Outcome != summary.Landed {
		t.Fatalf("got job %+v, want one that landed", d)
	}

	// Second process: the same preamble, a new question, then a resend.
	upstreamOnce := func(what, prompt string) {
		t.Helper()
		var got []string // the request that asked prompt (a summary job may call after it)
		for _, r := range h.Up.Requests() {
			if m := e2etest.RenderAll(r.Messages); len(m) > 0 && m[len(m)-1] == "user:"+prompt {
				got = m
			}
		}
		env := slices.Index(got, "user:<env>cwd: /work/repo, os: linux</env>")
		if n := countOf(got, "user:<env>cwd: /work/repo, os: linux</env>"); n != 1 || env < 1 || !strings.HasPrefix(got[env-1], "system:Summary of the earlier conversation:") {
			t.Errorf("%s: upstream got %q, want the preamble once, right after the summary", what, got)
		}
	}
	a3 := h.agentPost(conv, agentPreamble, agentEnv, userMsg("what did you change earlier?"))
	upstreamOnce("second process", "what did you change earlier?")
	h.agentPost(conv, agentPreamble, agentEnv, userMsg("what did you change earlier?"), a3, userMsg("and why?"))
	upstreamOnce("second process, resend", "and why?")

	var envs int
	for _, m := range e2etest.Active(h.Stored(h.PassNamespace(key), conv)) {
		if strings.Contains(m, "<env>") {
			envs++
		}
	}
	if envs != 1 {
		t.Errorf("stored the preamble %d times, want once", envs)
	}
}

func countOf(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// An edit or a regeneration through the agent path still supersedes:
// the resend shares a stored assistant message.
func TestAgentEditAndRegenerationSupersede(t *testing.T) {
	tests := []struct {
		name         string
		resend       func(a1 string) []string
		wantActive   []string
		wantReplaced int
	}{
		{
			name:         "edit",
			resend:       func(a1 string) []string { return []string{agentPreamble, userMsg("one"), a1, userMsg("two, edited")} },
			wantActive:   []string{"user:one", "assistant:echo: one", "user:two, edited", "assistant:echo: two, edited"},
			wantReplaced: 2,
		},
		{
			name:         "regeneration",
			resend:       func(a1 string) []string { return []string{agentPreamble, userMsg("one"), a1, userMsg("two")} },
			wantActive:   []string{"user:one", "assistant:echo: one", "user:two", "assistant:echo: two"},
			wantReplaced: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, e2etest.Options{})
			conv := "agent-" + tt.name
			a1 := h.agentPost(conv, agentPreamble, userMsg("one"))
			h.agentPost(conv, agentPreamble, userMsg("one"), a1, userMsg("two"))
			h.agentPost(conv, tt.resend(a1)...)
			want := append([]string{"system:You are a coding agent."}, tt.wantActive[:3]...)
			if got := e2etest.RenderAll(h.Up.Last().Messages); !slices.Equal(got, want) {
				t.Errorf("upstream got %q, want %q", got, want)
			}
			if got := e2etest.Active(h.Stored(h.PassNamespace(key), conv)); !slices.Equal(got, tt.wantActive) {
				t.Errorf("active history %q, want %q", got, tt.wantActive)
			}
			if n := superseded(h, conv); n != tt.wantReplaced {
				t.Errorf("got %d superseded messages, want %d", n, tt.wantReplaced)
			}
		})
	}
}

// An agent's title call to the same conversation (its first user message
// and an instruction, no tools) supersedes nothing.
func TestAgentTitleCallKeepsHistory(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	const conv = "agent-title"
	first := userMsg("refactor the parser")
	a1 := h.agentPost(conv, agentPreamble, first)
	h.agentPost(conv, agentPreamble, first, a1, userMsg("and add tests"))

	h.agentPost(conv, `{"role":"system","content":"Generate a short title for the conversation."}`,
		first, userMsg("Reply with the title only."))
	got := e2etest.RenderAll(h.Up.Last().Messages)
	want := []string{
		"system:Generate a short title for the conversation.",
		"user:refactor the parser", "assistant:echo: refactor the parser", "user:and add tests", "assistant:echo: and add tests",
		"user:refactor the parser", "user:Reply with the title only.",
	}
	if !slices.Equal(got, want) {
		t.Errorf("upstream got %q, want %q", got, want)
	}
	if n := superseded(h, conv); n != 0 {
		t.Errorf("got %d superseded messages, want 0", n)
	}
}

// A client that resends everything, minting new item ids and moving its
// cache hint to the newest message on every call, is stored once; the
// upstream gets the stored messages without their old hints and the
// newest message with its own. The ids sit on content parts: a strict
// upstream (the fake, like OpenAI) answers 400 to an "id" on a message,
// which the canonical hash ignores as well (protocol/chat's TestHashEqual).
func TestFullResendWithIDsAndMovingCacheHints(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	const conv = "agent-hints"
	hint := `,"cache_control":{"type":"ephemeral"}`
	part := func(role, id, text, extra string) string {
		return `{"role":"` + role + `","content":[{"type":"text","text":"` + text + `","id":"` + id + `"` + extra + `}]}`
	}
	text := func(answer string) string {
		var m struct{ Content string }
		if err := json.Unmarshal([]byte(answer), &m); err != nil {
			t.Fatal(err)
		}
		return m.Content
	}

	a1 := text(h.agentPost(conv, agentPreamble, part("user", "m1", "one", hint)))
	a2 := text(h.agentPost(conv, agentPreamble, part("user", "m2", "one", ""), part("assistant", "m3", a1, ""), part("user", "m4", "two", hint)))
	h.agentPost(conv, agentPreamble, part("user", "m5", "one", ""), part("assistant", "m6", a1, ""),
		part("user", "m7", "two", ""), part("assistant", "m8", a2, ""), part("user", "m9", "three", hint))

	got := e2etest.RenderAll(h.Up.Last().Messages)
	want := []string{"system:You are a coding agent.",
		`user:[{"type":"text","text":"one","id":"m1"}]`, "assistant:echo: one",
		`user:[{"type":"text","text":"two","id":"m4"}]`, "assistant:echo: two",
		`user:[{"type":"text","text":"three","id":"m9","cache_control":{"type":"ephemeral"}}]`}
	if !slices.Equal(got, want) {
		t.Errorf("upstream got %q, want %q", got, want)
	}
	stored := h.Stored(h.PassNamespace(key), conv)
	if len(stored) != 6 || superseded(h, conv) != 0 {
		t.Errorf("stored %d messages (%d superseded), want 6 active: %q", len(stored), superseded(h, conv), e2etest.Active(stored))
	}
}
