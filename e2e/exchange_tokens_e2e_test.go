package e2e

import (
	"strings"
	"testing"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/tokens"
)

// TestTheRecordCountsEveryPartOfThePrompt: an agent's request whose
// tool definitions outweigh its messages (as Claude Code's do) is
// recorded with those definitions counted as a part of the prompt: the
// parts (instructions, tools, summary, history, new) and the answer's
// priming add up to the estimated input, so the inspector's bar is as
// long as the prompt.
func TestTheRecordCountsEveryPartOfThePrompt(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{})
	conv := "tools-weigh"
	schema := `{"type":"object","properties":{"path":{"type":"string","description":"` + strings.Repeat("The file to read, relative to the project. ", 40) + `"}},"required":["path"]}`
	toolsRaw := `[{"name":"Read","description":"Reads a file.","input_schema":` + schema + `},{"name":"Write","description":"Writes a file.","input_schema":` + schema + `}]`
	for _, text := range []string{"hello", "what is in a.go?"} {
		body := `{"model":"gpt-4o","max_tokens":256,"system":"You are a coding agent.","tools":` + toolsRaw + `,"messages":[{"role":"user","content":"` + text + `"}]}`
		h.PostDone("/v1/messages", key, conv, body)
	}
	r := exchanges(t, h, conv)[0]
	tk := r.Tokens
	want := (&tokens.Counter{}).Tools(tokens.O200k, []byte(toolsRaw))
	if tk.Tools != want || want < 800 {
		t.Errorf("the record's tools: got %d tokens, want %d (the two definitions, schemas included)", tk.Tools, want)
	}
	parts := tk.Instructions + tk.Tools + tk.Summary + tk.History + tk.New
	if parts+tokens.ReplyPriming != tk.EstimatedInput {
		t.Errorf("the parts add up to %d (+%d priming), the estimated input is %d: %+v", parts, tokens.ReplyPriming, tk.EstimatedInput, tk)
	}
	if tk.Instructions == 0 || tk.History == 0 || tk.New == 0 {
		t.Errorf("tokens %+v: want instructions, history and new counted", tk)
	}
}
