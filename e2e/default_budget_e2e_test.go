package e2e

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// agentRequest is a coding agent's Messages request as Claude Code sends
// one: system blocks and 25 tools of its own, about 20k tokens before the
// user's prompt, with the prompt.
func agentRequest(prompt string) string {
	var tools []string
	for i := range 25 {
		tools = append(tools, fmt.Sprintf(`{"name":"tool_%d","description":%q,"input_schema":{"type":"object","properties":{"path":{"type":"string","description":%q}},"required":["path"]}}`,
			i, strings.Repeat("Reads, edits and searches files in the working tree with care. ", 40), strings.Repeat("A path in the repository. ", 20)))
	}
	system := strings.Repeat("You are an interactive coding agent. Follow the user's instructions and use the tools. ", 400)
	return `{"model":"claude-sonnet-4-5","max_tokens":32000,"stream":true,"system":[{"type":"text","text":` + strconv.Quote(system) +
		`}],"tools":[` + strings.Join(tools, ",") + `],"messages":[{"role":"user","content":` + strconv.Quote(prompt) + `}]}`
}

// anHeaders are the headers of a Messages client of tenant an (see
// anthropicTenant), with more as name, value pairs.
func anHeaders(more ...string) map[string]string {
	h := map[string]string{"x-api-key": "rk-an", "anthropic-version": "2023-06-01", "Content-Type": "application/json"}
	for i := 0; i+1 < len(more); i += 2 {
		h[more[i]] = more[i+1]
	}
	return h
}

// postAgentTurn posts body with headers to the Messages API under the
// base URL /c/{proj}, fails the test unless it is answered with a 200,
// and waits for conv's exchange (proj, or a subagent's thread of it).
func postAgentTurn(h *e2etest.Harness, headers map[string]string, proj, conv, body string) {
	h.T.Helper()
	if r := h.PostHeaders("/c/"+proj+"/v1/messages", headers, body); r.Status != 200 {
		h.T.Fatalf("%d %s", r.Status, r.Body)
	}
	h.WaitDone(conv)
}

// TestAnAgentsOwnPromptDoesNotEmptyItsMemory: Recall on its defaults (no
// budget configured), an agent whose own request is over 16k tokens (the
// old default budget) on one /c/{id} base URL, in two processes that each
// send only their own prompt: the second process's request carries the
// first's turn.
func TestAnAgentsOwnPromptDoesNotEmptyItsMemory(t *testing.T) {
	h := e2etest.New(t, anthropicTenant())
	headers := anHeaders()
	for i, prompt := range []string{"The code word is KIWI.", "What is the code word?", "And again: the code word?", "Once more?"} {
		r := h.PostHeaders("/c/proj/v1/messages", headers, agentRequest(prompt))
		if r.Status != 200 {
			t.Fatalf("process %d: %d %s", i+1, r.Status, r.Body)
		}
		h.WaitDone("proj")
		if n, _ := strconv.Atoi(r.Header.Get("X-Recall-Context-Tokens")); i == 0 && n <= 16000 {
			t.Fatalf("the agent's request is %d tokens by Recall's count, want over the old default budget of 16,000", n)
		}
		if i == 0 {
			continue
		}
		var sent []string
		for _, m := range h.Up.Last().Messages {
			sent = append(sent, texts([]json.RawMessage{m})[0])
		}
		if len(sent) < 3 || !strings.Contains(strings.Join(sent, "\n"), "KIWI") {
			t.Errorf("process %d: the upstream got %q, want the first process's turn before the prompt", i+1, sent)
		}
	}
}

// TestAModelsWindowIsLearnedFromTheUpstream: on Recall's defaults a model
// nobody knows is planned to half of 128k; an upstream that refuses a
// prompt over the model's real window (8,192 here) in OpenAI's words
// teaches Recall that window: the refused request is answered with the
// upstream's error, and from the next request on the conversation is
// planned within the window, and answered.
func TestAModelsWindowIsLearnedFromTheUpstream(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{Upstream: []upstreamtest.Option{upstreamtest.WithWindow("my-llama", 8192)}})
	say := func(text string) e2etest.Result {
		t.Helper()
		return h.Post("/v1/chat/completions", key, "llama-1", `{"model":"my-llama","messages":[{"role":"user","content":`+strconv.Quote(text)+`}]}`)
	}
	for i := range 6 {
		if r := say(fmt.Sprintf("turn %d: %s", i, strings.Repeat("lorem ipsum dolor ", 150))); r.Status != 200 {
			t.Fatalf("turn %d: %d %s", i, r.Status, r.Body)
		}
		h.WaitDone("llama-1")
	}
	r := say("and now? " + strings.Repeat("sit amet ", 500))
	if r.Status != 400 || !strings.Contains(r.Body, "context_length_exceeded") {
		t.Fatalf("over the window: got %d %s, want the upstream's 400 context_length_exceeded", r.Status, r.Body)
	}
	h.WaitDone("llama-1")
	r = say("and now? " + strings.Repeat("sit amet ", 500))
	if r.Status != 200 {
		t.Fatalf("after the refusal: got %d %s, want the request planned within the learned window", r.Status, r.Body)
	}
	var sent, stored int
	if _, err := fmt.Sscanf(r.Header.Get("X-Recall-History"), "%d/%d", &sent, &stored); err != nil || sent < 2 || sent >= stored {
		t.Errorf("X-Recall-History %q, want some earlier turns sent, not all", r.Header.Get("X-Recall-History"))
	}
	if cal, _ := h.Calibration.Get("default", "my-llama"); cal.Window != 8192 {
		t.Errorf("got calibration %+v, want the window 8192 learned", cal)
	}
}
