package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/plan"
)

// TestPlanWithoutNewMessagesIsTheNextContext checks the contract the
// conversation API's context call relies on: plan.Make with no new
// messages returns exactly what the next chat request sends upstream,
// minus that request's new message. The budget is small, so curation has
// dropped turns.
func TestPlanWithoutNewMessagesIsTheNextContext(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{Global: func(g *config.Global) {
		g.Defaults.History.BudgetTokens = 300
		g.Defaults.History.OldToolResultChars = 40
		g.Defaults.Summary.Enabled = false
	}})
	c := h.Client(key, "ctx-1")
	ctx := context.Background()
	sys := openai.SystemMessage("be brief")
	for i := range 12 {
		text := fmt.Sprintf("turn %d %s", i, strings.Repeat("word ", 10))
		if _, err := c.Chat.Completions.New(ctx, e2etest.ChatParams(sys, openai.UserMessage(text))); err != nil {
			t.Fatal(err)
		}
		h.WaitDone("ctx-1")
	}

	tenant := h.Set.Tenants()[0]
	pol, err := plan.PolicyFor(tenant)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Make(ctx, plan.Input{
		Store:        h.Store,
		Key:          history.Key{Tenant: h.PassNamespace(key), Conversation: "ctx-1"},
		Policy:       pol,
		Model:        "gpt-4o",
		Instructions: []history.Message{{Role: "system", Raw: []byte(`{"role":"system","content":"be brief"}`)}},
		Now:          time.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.Report.DroppedTurns == 0 && p.Report.IncludedTurns == p.Report.StoredTurns {
		t.Fatalf("the budget dropped nothing (report %+v): the test proves too little", p.Report)
	}
	var planned []string
	for _, m := range p.Messages {
		if m.Tokens <= 0 {
			t.Errorf("planned message %s has %d tokens", m.Raw, m.Tokens)
		}
		planned = append(planned, e2etest.Render(m.Raw))
	}

	if _, err := c.Chat.Completions.New(ctx, e2etest.ChatParams(sys, openai.UserMessage("next"))); err != nil {
		t.Fatal(err)
	}
	h.WaitDone("ctx-1")
	sent := e2etest.RenderAll(h.Up.Last().Messages)
	if got, want := sent[len(sent)-1], "user:next"; got != want {
		t.Fatalf("last sent message %q, want %q", got, want)
	}
	if got := sent[:len(sent)-1]; !slices.Equal(got, planned) {
		t.Errorf("upstream got %q\nplan said %q", got, planned)
	}
}
