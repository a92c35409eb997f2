package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/recallproxy/recall/api"
	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/summary"
)

// The context call answers exactly what the next chat request sends
// upstream before its own new message: with a summary injected, and with
// turns the budget leaves out.
func TestAPIContextIsTheNextUpstreamContext(t *testing.T) {
	for _, tc := range []struct {
		name    string
		global  func(*config.Global)
		summary func(*summary.Config)
		turns   int
		words   int    // padding of each turn
		dropped string // a reason the context must report
	}{
		{name: "summary", global: summaryOn(4, 2), summary: func(*summary.Config) {}, turns: 5, dropped: "summarized"},
		{name: "budget", global: func(g *config.Global) {
			g.Defaults.Summary.Enabled = false
			g.Defaults.History.BudgetTokens = 256
		}, turns: 12, words: 30, dropped: "budget"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := e2etest.New(t, e2etest.Options{Global: tc.global, Summary: tc.summary})
			conv := "ctx-" + tc.name
			for i := 1; i <= tc.turns; i++ {
				h.Say(key, conv, fmt.Sprintf("turn %d: %s", i, strings.Repeat("words ", tc.words)))
			}
			if tc.summary != nil {
				if d := h.WaitJob(conv); d.Outcome != summary.Landed {
					t.Fatalf("summary job: %+v", d)
				}
			}
			a := h.API(key, "", "GET", convBase+conv+"/context?model=gpt-4o", "")
			var got api.Context
			a.JSON(t, &got)
			if a.Status != 200 {
				t.Fatalf("context: %d %s", a.Status, a.Body)
			}
			reasons := map[string]bool{}
			for _, d := range got.Dropped {
				reasons[d.Reason] = true
			}
			if !reasons[tc.dropped] {
				t.Errorf("context reports dropped %+v, want a %q entry", got.Dropped, tc.dropped)
			}
			ctxMsgs := make([]json.RawMessage, len(got.Messages))
			for i, m := range got.Messages {
				ctxMsgs[i] = m.Message
			}

			h.Say(key, conv, "one more")
			sent := h.Up.Last().Messages
			if len(sent) == 0 {
				t.Fatal("the upstream got no messages")
			}
			want := e2etest.RenderAll(sent[:len(sent)-1])
			if have := e2etest.RenderAll(ctxMsgs); !slices.Equal(have, want) {
				t.Errorf("context call answered\n%q\nthe next request sent\n%q", have, want)
			}
		})
	}
}

// End and summarize reach the real summaries manager: end seals the open
// episode and folds it into the summary with a title, summarize compacts
// now, and a tenant without summaries is told so.
func TestAPIEndAndSummarizeWithTheSummariesManager(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{Global: summaryOn(10, 1), Summary: func(*summary.Config) {}})
	for i := 1; i <= 3; i++ {
		h.Say(key, "end-1", fmt.Sprintf("turn %d", i))
	}
	a := h.API(key, "", "POST", convBase+"end-1/summarize", "")
	var d convDetail
	a.JSON(t, &d)
	if a.Status != 200 {
		t.Fatalf("summarize: %d %s", a.Status, a.Body)
	}
	if m := h.Meta(h.PassNamespace(key), "end-1"); m.Summary == nil || m.Summary.Turns != 2 {
		t.Errorf("after summarize the stored summary is %+v, want turns 1-2 covered (keep 1)", m.Summary)
	}
	h.Say(key, "end-1", "turn 4")
	if a = h.API(key, "", "POST", convBase+"end-1/end", ""); a.Status != 200 {
		t.Fatalf("end: %d %s", a.Status, a.Body)
	}
	a.JSON(t, &d)
	m := h.Meta(h.PassNamespace(key), "end-1")
	if d.Status != "ended" || len(m.Episodes) != 1 || m.Episodes[0].Title == "" || m.Title == "" {
		t.Errorf("after end: status %q, episodes %+v, title %q; want ended, one titled episode", d.Status, m.Episodes, m.Title)
	}
	if a := h.API(key, "", "POST", convBase+"nobody/end", ""); a.Status != 404 {
		t.Errorf("end of an unknown conversation: %d %s", a.Status, a.Body)
	}

	off := e2etest.New(t, e2etest.Options{Global: func(g *config.Global) { g.Defaults.Summary.Enabled = false }, Summary: func(*summary.Config) {}})
	off.Say(key, "off-1", "hello")
	if a := off.API(key, "", "POST", convBase+"off-1/summarize", ""); a.Status != 409 || a.ErrCode() != "summaries_disabled" {
		t.Errorf("summarize with summaries off: %d %s", a.Status, a.Body)
	}
}
