package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/summary"
)

var _ proxy.Summarizer = (*summary.Manager)(nil)

// summaryOn sets a small trigger so that tests reach it in a few turns.
func summaryOn(trigger, keep int) func(*config.Global) {
	return func(g *config.Global) {
		g.Defaults.Summary.Enabled = true
		g.Defaults.Summary.TriggerTurns = trigger
		g.Defaults.Summary.KeepTurns = keep
	}
}

// resender is a client that resends the whole conversation every time, as
// the SDKs' chat examples do.
type resender struct {
	t    *testing.T
	c    openai.Client
	msgs []openai.ChatCompletionMessageParamUnion
}

func (r *resender) say(text string) {
	r.t.Helper()
	r.msgs = append(r.msgs, openai.UserMessage(text))
	resp, err := r.c.Chat.Completions.New(context.Background(), e2etest.ChatParams(r.msgs...))
	if err != nil {
		r.t.Fatalf("%s: %v", text, err)
	}
	r.msgs = append(r.msgs, resp.Choices[0].Message.ToParam())
}

// chatTurns sends the chat turns "turn <from>" to "turn <to>" with c.
func chatTurns(t *testing.T, ctx context.Context, c openai.Client, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		if _, err := c.Chat.Completions.New(ctx, e2etest.ChatParams(openai.UserMessage(fmt.Sprintf("turn %d", i)))); err != nil {
			t.Fatal(err)
		}
	}
}

// checkSummaryIn checks that the texts at path in an upstream request's
// body (its system instructions) carry summariseFive's summary.
func checkSummaryIn(t *testing.T, body []byte, path string) {
	t.Helper()
	var system string
	for _, p := range gjson.GetBytes(body, path).Array() {
		system += p.Get("text").Str + "\n"
	}
	if !strings.Contains(system, plan.SummaryPrefix+"turn 1; turn 2; turn 3") {
		t.Errorf("after the summary: %s %q, want the summary in it", path, system)
	}
}

// summariseFive says turns 1 to 5 in conv (with summaryOn(4, 2): past
// the trigger) and waits for the summary job they start, which must land
// after one summariser call, and returns that call.
func summariseFive(t *testing.T, h *e2etest.Harness, conv string, say func(string)) upstreamtest.Received {
	t.Helper()
	for i := 1; i <= 5; i++ {
		say(fmt.Sprintf("turn %d", i))
	}
	if d := h.WaitJob(conv); d.Outcome != summary.Landed || d.Calls != 1 {
		t.Fatalf("the first job: %+v, want one call that landed", d)
	}
	calls := h.Up.SummaryCalls()
	if len(calls) != 1 {
		t.Fatalf("got %d summariser calls, want 1", len(calls))
	}
	return calls[0]
}

func turnsText(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("user:turn %d", i), fmt.Sprintf("assistant:echo: turn %d", i))
	}
	return out
}

func TestSummaryIsIncrementalAndReplacesTheTurnsItCovers(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{Global: summaryOn(4, 2), Summary: func(*summary.Config) {}})
	r := &resender{t: t, c: h.Client(key, "sum-1"), msgs: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief")}}
	// Five turns, trigger 4: one compaction of all but the newest two.
	in := string(summariseFive(t, h, "sum-1", r.say).Messages[1])
	for _, want := range []string{"user: turn 1", "user: turn 3", "assistant: echo: turn 3"} {
		if !strings.Contains(in, want) {
			t.Errorf("first summariser input lacks %q:\n%s", want, in)
		}
	}
	if strings.Contains(in, "turn 4") || strings.Contains(in, "Previous summary") {
		t.Errorf("first summariser input covers more than turns 1-3:\n%s", in)
	}

	r.say("turn 6")
	got := e2etest.RenderAll(h.Up.Last().Messages)
	want := append([]string{"system:be brief", "system:" + plan.SummaryPrefix + "turn 1; turn 2; turn 3"}, turnsText(4, 5)...)
	want = append(want, "user:turn 6")
	if !slices.Equal(got, want) {
		t.Fatalf("after the summary, upstream got\n%q\nwant\n%q", got, want)
	}

	r.say("turn 7")
	r.say("turn 8")
	if d := h.WaitJob("sum-1"); d.Outcome != summary.Landed || d.Calls != 1 {
		t.Fatalf("second job: %+v, want one call that landed", d)
	}
	calls := h.Up.SummaryCalls()
	if len(calls) != 2 {
		t.Fatalf("got %d summariser calls, want 2", len(calls))
	}
	in = string(calls[1].Messages[1])
	if !strings.Contains(in, `Previous summary:\nturn 1; turn 2; turn 3`) {
		t.Errorf("second summariser input lacks the previous summary:\n%s", in)
	}
	for _, old := range []string{"user: turn 1", "user: turn 3", "turn 7"} {
		if strings.Contains(in, old) {
			t.Errorf("second summariser input holds %q, outside the newly covered turns:\n%s", old, in)
		}
	}
	for _, want := range []string{"user: turn 4", "user: turn 6"} {
		if !strings.Contains(in, want) {
			t.Errorf("second summariser input lacks %q:\n%s", want, in)
		}
	}

	r.say("turn 9")
	got = e2etest.RenderAll(h.Up.Last().Messages)
	want = append([]string{"system:be brief", "system:" + plan.SummaryPrefix + "turn 1; turn 2; turn 3; turn 4; turn 5; turn 6"}, turnsText(7, 8)...)
	want = append(want, "user:turn 9")
	if !slices.Equal(got, want) {
		t.Fatalf("after the second summary, upstream got\n%q\nwant\n%q", got, want)
	}
	meta := h.Meta(h.PassNamespace(key), "sum-1")
	if meta.Summary == nil || meta.Summary.Turns != 6 || meta.Summaries != 2 || meta.SummaryPromptTokens == 0 {
		t.Errorf("stored summary state %+v (summaries %d, prompt tokens %d), want 6 turns covered by 2 summaries with their usage",
			meta.Summary, meta.Summaries, meta.SummaryPromptTokens)
	}
	// Every turn is still stored: a summary hides turns from the context,
	// it deletes nothing.
	if n := len(e2etest.Active(h.Stored(h.PassNamespace(key), "sum-1"))); n != 18 {
		t.Errorf("got %d active stored messages, want 18", n)
	}
}

func TestRequestDuringASummaryIsServedAndKept(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{Global: summaryOn(3, 1), Summary: func(*summary.Config) {}})
	h.Up.EnqueueSummary(upstreamtest.Reply{Hold: true})
	c := h.Client(key, "sum-2")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	chatTurns(t, ctx, c, 1, 4)
	if err := h.Up.WaitStalled(ctx, 1); err != nil {
		t.Fatalf("the summariser call is not in flight: %v", err)
	}
	start := time.Now()
	if _, err := c.Chat.Completions.New(ctx, e2etest.ChatParams(openai.UserMessage("turn 5"))); err != nil {
		t.Fatalf("a request during a summary failed: %v", err)
	}
	t.Logf("chat request while a summary was in flight: %v", time.Since(start))
	h.Up.Release()
	if d := h.WaitJob("sum-2"); d.Outcome != summary.Landed {
		t.Fatalf("job: %+v, want landed", d)
	}
	if _, err := c.Chat.Completions.New(ctx, e2etest.ChatParams(openai.UserMessage("turn 6"))); err != nil {
		t.Fatal(err)
	}
	got := e2etest.RenderAll(h.Up.Last().Messages)
	// The summary covered turns 1-3 (made when 4 were stored, keeping 1);
	// turn 5, committed while it ran, is not lost.
	want := append([]string{"system:" + plan.SummaryPrefix + "turn 1; turn 2; turn 3"}, turnsText(4, 5)...)
	want = append(want, "user:turn 6")
	if !slices.Equal(got, want) {
		t.Fatalf("upstream got\n%q\nwant\n%q", got, want)
	}
}

func TestFailingSummariserIsRetriedWhileTheBudgetServes(t *testing.T) {
	type wait struct {
		d  time.Duration
		ch chan time.Time
	}
	waits := make(chan wait, 16)
	h := e2etest.New(t, e2etest.Options{Global: summaryOn(2, 1), Summary: func(c *summary.Config) {
		c.After = func(d time.Duration) <-chan time.Time {
			ch := make(chan time.Time, 1)
			waits <- wait{d, ch}
			return ch
		}
	}})
	h.Up.EnqueueSummary(upstreamtest.Reply{Status: 500}, upstreamtest.Reply{Status: 503})
	c := h.Client(key, "sum-3")
	ctx := context.Background()
	chatTurns(t, ctx, c, 1, 3)
	for attempt, backoff := range []time.Duration{time.Second, 2 * time.Second} {
		d := h.WaitJob("sum-3")
		if d.Outcome != summary.Failed || d.Attempt != attempt+1 || d.Retry != backoff {
			t.Fatalf("attempt %d: %+v, want failed, retried after %v", attempt+1, d, backoff)
		}
		var w wait
		select {
		case w = <-waits:
		case <-time.After(10 * time.Second):
			t.Fatal("no retry scheduled")
		}
		if w.d != backoff {
			t.Errorf("retry wait %v, want %v", w.d, backoff)
		}
		// While there is no summary, the turns are served by the budget.
		msg := fmt.Sprintf("between %d", attempt+1)
		if _, err := c.Chat.Completions.New(ctx, e2etest.ChatParams(openai.UserMessage(msg))); err != nil {
			t.Fatal(err)
		}
		got := e2etest.RenderAll(h.Up.Last().Messages)
		if got[0] != "user:turn 1" || got[len(got)-1] != "user:"+msg {
			t.Errorf("without a summary the context is %q, want every turn from turn 1", got)
		}
		w.ch <- time.Now()
	}
	if d := h.WaitJob("sum-3"); d.Outcome != summary.Landed || d.Attempt != 3 {
		t.Fatalf("third attempt: %+v, want landed", d)
	}
	if meta := h.Meta(h.PassNamespace(key), "sum-3"); meta.Summary == nil {
		t.Fatal("no summary stored after the retry landed")
	}
	// Pass-through: the summariser used the client's credential, which no
	// log line (the failures were logged) holds.
	for _, c := range h.Up.SummaryCalls() {
		if got := c.Header.Get("Authorization"); got != "Bearer "+key {
			t.Errorf("summariser call authorised with %q, want the triggering request's credential", got)
		}
	}
	if !h.Logs.WaitFor("summary failed") {
		t.Error("the failures were not logged")
	}
	if strings.Contains(h.Logs.String(), key) {
		t.Error("a log line holds the client's credential")
	}
}

func TestStaleSummaryIsDiscarded(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{Global: summaryOn(10, 1)})
	c := h.Client(key, "sum-4")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	chatTurns(t, ctx, c, 1, 4)
	// Two managers on one store, as two processes without a lease: the
	// slow one's result was made from a summary that is no longer stored.
	var mu sync.Mutex
	var outcomes []summary.Outcome
	newManager := func() *summary.Manager {
		m, err := summary.New(summary.Config{Store: h.History, Tenants: proxy.StaticTenants{Set: h.Set},
			OnJobDone: func(d summary.JobDone) { mu.Lock(); outcomes = append(outcomes, d.Outcome); mu.Unlock() }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		return m
	}
	slow, fast := newManager(), newManager()
	k := history.Key{Tenant: h.PassNamespace(key), Conversation: "sum-4"}
	h.Up.EnqueueSummary(upstreamtest.Reply{Hold: true})
	slowDone := make(chan error, 1)
	go func() { _, err := slow.Summarize(ctx, k); slowDone <- err }()
	if err := h.Up.WaitStalled(ctx, 1); err != nil {
		t.Fatal(err)
	}
	landed, err := fast.Summarize(ctx, k)
	if err != nil || landed.Summary == nil {
		t.Fatalf("fast summary: %v, %+v", err, landed.Summary)
	}
	h.Up.Release()
	if err := <-slowDone; err != nil {
		t.Fatalf("slow summary: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(outcomes) != 2 || outcomes[0] != summary.Landed || outcomes[1] != summary.Stale {
		t.Errorf("outcomes %v, want [landed stale]", outcomes)
	}
	if meta := h.Meta(k.Tenant, k.Conversation); meta.Summaries != 1 || *meta.Summary != *landed.Summary {
		t.Errorf("stored summary %+v (%d landed), want the fast one only", meta.Summary, meta.Summaries)
	}
}

func TestIdleTimeoutAndEndSealEpisodesWithTitles(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	h := e2etest.New(t, e2etest.Options{
		Global: func(g *config.Global) {
			summaryOn(10, 2)(g)
			g.Defaults.History.IdleTimeout = config.Duration(time.Hour)
		},
		Summary: func(c *summary.Config) { c.Now = clock },
		Proxy:   func(c *proxy.Config) { c.Now = clock },
	})
	c := h.Client(key, "ep-1")
	ctx := context.Background()
	say := func(text string) {
		t.Helper()
		if _, err := c.Chat.Completions.New(ctx, e2etest.ChatParams(openai.UserMessage(text))); err != nil {
			t.Fatal(err)
		}
	}
	say("plan the trip to Lisbon")
	say("book the hotel near the river")
	advance(2 * time.Hour)
	say("new topic: my tax return")
	d := h.WaitJob("ep-1")
	if d.Outcome != summary.Landed {
		t.Fatalf("fold after the idle timeout: %+v", d)
	}
	k := history.Key{Tenant: h.PassNamespace(key), Conversation: "ep-1"}
	meta := h.Meta(k.Tenant, k.Conversation)
	if len(meta.Episodes) != 1 || meta.Episodes[0].Title == "" || meta.Title != meta.Episodes[0].Title {
		t.Fatalf("episodes %+v, title %q: want episode 1 sealed and titled", meta.Episodes, meta.Title)
	}
	if n := len(strings.Fields(meta.Title)); n < 5 || n > 8 {
		t.Errorf("title %q has %d words, want 5 to 8", meta.Title, n)
	}
	if meta.Episode != 2 {
		t.Errorf("open episode %d, want 2", meta.Episode)
	}
	// The next episode starts with only the summary carried forward.
	say("and the deductions")
	got := e2etest.RenderAll(h.Up.Last().Messages)
	want := []string{"system:" + plan.SummaryPrefix + "plan the trip to Lisbon; book the hotel near the river",
		"user:new topic: my tax return", "assistant:echo: new topic: my tax return", "user:and the deductions"}
	if !slices.Equal(got, want) {
		t.Fatalf("upstream got\n%q\nwant\n%q", got, want)
	}

	ended, err := h.Summaries.End(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if ended.Status != history.StatusEnded || len(ended.Episodes) != 2 || ended.Episodes[1].Title == "" || ended.Title != ended.Episodes[1].Title {
		t.Fatalf("after End: status %s, episodes %+v, title %q", ended.Status, ended.Episodes, ended.Title)
	}
	if ended.Summary == nil || !strings.HasSuffix(ended.Summary.Text, "new topic: my tax return; and the deductions") {
		t.Errorf("after End the summary is %+v, want the second episode folded in", ended.Summary)
	}
	calls := h.Up.SummaryCalls()
	if got := calls[len(calls)-1].Header.Get("Authorization"); got != "Bearer "+key {
		t.Errorf("End's fold authorised with %q, want the pass-through credential last seen", got)
	}
	if _, err := h.Summaries.End(ctx, history.Key{Tenant: k.Tenant, Conversation: "never-written"}); !errors.Is(err, summary.ErrNotFound) {
		t.Errorf("End of an unknown conversation: %v, want ErrNotFound", err)
	}
	if _, err := h.Summaries.Summarize(ctx, history.Key{Tenant: k.Tenant, Conversation: "never-written"}); !errors.Is(err, summary.ErrNotFound) {
		t.Errorf("Summarize of an unknown conversation: %v, want ErrNotFound", err)
	}
	if got := plan.Status(&ended, time.Hour, clock().Add(3*time.Hour)); got != history.StatusEnded {
		t.Errorf("an ended conversation reads %s later, want ended", got)
	}
}

func TestSummariesDisabledMakeNoCalls(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{Global: func(g *config.Global) {
		summaryOn(1, 0)(g)
		g.Defaults.Summary.Enabled = false
	}, Summary: func(*summary.Config) {}})
	c := h.Client(key, "off-1")
	chatTurns(t, context.Background(), c, 0, 4)
	if n := h.Summaries.Pending(); n != 0 {
		t.Errorf("%d summary jobs queued with summaries off", n)
	}
	if n := len(h.Up.SummaryCalls()); n != 0 {
		t.Errorf("%d summariser calls with summaries off", n)
	}
	if _, err := h.Summaries.Summarize(context.Background(), history.Key{Tenant: h.PassNamespace(key), Conversation: "off-1"}); !errors.Is(err, summary.ErrDisabled) {
		t.Errorf("Summarize with summaries off: %v, want ErrDisabled", err)
	}
}

// TestFiguresHundredTurnConversation prints the cost of summaries over a
// 100-turn conversation with the default summary settings (trigger 10,
// keep 3) and the default budget: summariser calls, their tokens as the
// upstream reported them and as Recall counts them, and the context the
// last request sent. It waits for each job the trigger calls for, so the
// figures do not depend on timing. Run with -v to see them.
func TestFiguresHundredTurnConversation(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{Global: summaryOn(10, 3), Summary: func(*summary.Config) {}})
	c := h.Client(key, "fig-100")
	ctx := context.Background()
	ns := h.PassNamespace(key)
	words := strings.Fields("the user asks about prices dates names budgets travel plans meetings reports tools numbers results and preferences for the project")
	var lastTokens, covered, want, landed int
	for i := 1; i <= 100; i++ {
		text := fmt.Sprintf("turn %d: %s", i, strings.Join(words[:10+i%10], " "))
		resp, err := c.Chat.Completions.New(ctx, e2etest.ChatParams(openai.SystemMessage("be brief"), openai.UserMessage(text)))
		if err != nil {
			t.Fatal(err)
		}
		lastTokens = int(resp.Usage.PromptTokens)
		// The trigger, as the proxy applies it: wait for each summary it
		// calls for before the next turn (it may land before the answer
		// arrives, or after).
		if i-covered > 10 {
			want, covered = want+1, i-3
		}
		for landed < want {
			if d := h.WaitJob("fig-100"); d.Outcome != summary.Landed {
				t.Fatalf("turn %d: job %+v", i, d)
			}
			landed++
		}
	}
	meta := h.Meta(ns, "fig-100")
	calls := h.Up.SummaryCalls()
	counted := 0
	for _, call := range calls {
		for _, m := range call.Messages {
			counted += h.CountTokens(m)
		}
	}
	t.Logf("100 turns: %d summariser calls (%d summaries), upstream-reported %d prompt + %d completion tokens; "+
		"Recall's count of the summariser input %d tokens; summary covers %d turns, %d tokens; last request's prompt %d tokens (fake's estimate)",
		len(calls), meta.Summaries, meta.SummaryPromptTokens, meta.SummaryCompletionTokens, counted,
		meta.Summary.Turns, meta.Summary.Tokens, lastTokens)
	// The first at turn 11 (11 > 10 unsummarised: 8 covered, 3 kept), then
	// every 8 turns: 11, 19, …, 99.
	if len(calls) != meta.Summaries || meta.Summaries != 12 || meta.Summary.Turns != 96 {
		t.Errorf("got %d calls for %d summaries covering %d turns, want 12 of each covering 96", len(calls), meta.Summaries, meta.Summary.Turns)
	}
}

func TestBudgetTriggersASummaryUnderTheTurnTrigger(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{Global: func(g *config.Global) {
		summaryOn(50, 2)(g)
		g.Defaults.History.BudgetTokens = 400
	}, Summary: func(*summary.Config) {}})
	c := h.Client(key, "bud-1")
	long := strings.Repeat("many words of detail ", 12) // ~50 tokens, twice per turn
	landed := false
	for i := 0; i < 20 && !landed; i++ {
		// Streamed: the stream's commit triggers too.
		readStream(t, c, fmt.Sprintf("turn %d %s", i, long))
		if d := h.WaitDone("bud-1"); !d.Committed {
			t.Fatalf("turn %d not committed: %+v", i, d)
		}
	drain:
		for {
			select {
			case d := <-h.Jobs:
				landed = landed || d.Outcome == summary.Landed
			default:
				break drain
			}
		}
	}
	if !landed {
		if d := h.WaitJob("bud-1"); d.Outcome != summary.Landed {
			t.Fatalf("20 turns over a 400-token budget: job %+v, want a summary", d)
		}
	}
	meta := h.Meta(h.PassNamespace(key), "bud-1")
	// (How many turns it covers depends on how many arrived while it ran.)
	if meta.Summary == nil || meta.Turns >= 50 || meta.Summary.Turns > meta.Turns-2 {
		t.Fatalf("summary %+v of %d turns, want one under the turn trigger of 50, keeping 2 turns", meta.Summary, meta.Turns)
	}
	readStream(t, c, "next")
	h.WaitDone("bud-1")
	if got := e2etest.RenderAll(lastChat(h.Up).Messages); !strings.HasPrefix(got[0], "system:"+plan.SummaryPrefix) {
		t.Errorf("context %q does not start with the summary", got)
	}
}

func TestSummaryMetricsAndForgettingRebuild(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{Global: summaryOn(3, 1), Summary: func(*summary.Config) {}})
	c := h.Client(key, "fg-1")
	ctx := context.Background()
	for _, text := range []string{"my secret is 1234", "turn b", "turn c", "turn d"} {
		if _, err := c.Chat.Completions.New(ctx, e2etest.ChatParams(openai.UserMessage(text))); err != nil {
			t.Fatal(err)
		}
	}
	if d := h.WaitJob("fg-1"); d.Outcome != summary.Landed {
		t.Fatalf("job %+v", d)
	}
	k := history.Key{Tenant: h.PassNamespace(key), Conversation: "fg-1"}
	if s := h.Meta(k.Tenant, k.Conversation).Summary; s == nil || !strings.Contains(s.Text, "1234") {
		t.Fatalf("summary %+v, want the first turn in it", s)
	}
	resp, err := http.Get(h.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := string(raw)
	for _, want := range []string{`recall_summaries_total{tenant="default"} 1`, `recall_summary_prompt_tokens_total{tenant="default"}`,
		`recall_summary_job_duration_seconds_count{tenant="default"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// Hard-forget the first turn: the summary holding it is dropped, and
	// the next compaction rebuilds it from what remains.
	var active []history.Message
	if err := h.History.Messages(ctx, k, 0, false, func(m history.Message) bool { active = append(active, m); return true }); err != nil {
		t.Fatal(err)
	}
	meta := h.Meta(k.Tenant, k.Conversation)
	var after history.Meta
	f := history.PlanForget(active, []uint64{active[0].Seq, active[1].Seq}, true)
	after, err = h.History.Commit(ctx, k, history.Change{Version: meta.Version, Forget: f, Now: time.Now().UnixNano()})
	if err != nil {
		t.Fatal(err)
	}
	if after.Summary != nil {
		t.Fatalf("the summary outlived the forgotten turn: %+v", after.Summary)
	}
	rebuilt, err := h.Summaries.Summarize(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if s := rebuilt.Summary; s == nil || strings.Contains(s.Text, "1234") || !strings.Contains(s.Text, "turn b") {
		t.Errorf("rebuilt summary %+v, want it made of what remains", s)
	}
}

// readStream sends text as a streamed request and reads the stream to its end.
func readStream(t *testing.T, c openai.Client, text string) {
	t.Helper()
	st := c.Chat.Completions.NewStreaming(context.Background(), e2etest.ChatParams(openai.UserMessage(text)))
	for st.Next() {
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	st.Close()
}

// lastChat returns the newest chat request the upstream got, leaving out
// summariser calls (which a commit may have triggered since).
func lastChat(up *upstreamtest.Server) upstreamtest.Received {
	reqs := up.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if !reqs[i].Summary {
			return reqs[i]
		}
	}
	return upstreamtest.Received{}
}

func TestEditInsideTheSummaryDropsIt(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{Global: summaryOn(4, 2), Summary: func(*summary.Config) {}})
	r := &resender{t: t, c: h.Client(key, "edit-1"), msgs: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief")}}
	for i := 1; i <= 5; i++ {
		r.say(fmt.Sprintf("turn %d", i))
	}
	if d := h.WaitJob("edit-1"); d.Outcome != summary.Landed {
		t.Fatalf("job %+v", d)
	}
	// The client edits turn 2, which the summary covers: the summary no
	// longer holds, and the context is the stored turns up to the edit.
	r.msgs = r.msgs[:3] // system, turn 1 and its answer
	r.say("turn 2, edited")
	got := e2etest.RenderAll(lastChat(h.Up).Messages)
	want := []string{"system:be brief", "user:turn 1", "assistant:echo: turn 1", "user:turn 2, edited"}
	if !slices.Equal(got, want) {
		t.Fatalf("upstream got\n%q\nwant\n%q", got, want)
	}
	if s := h.Meta(h.PassNamespace(key), "edit-1").Summary; s != nil {
		t.Errorf("the summary of the rewritten turns survived: %+v", s)
	}
}

// TestSummariesOverAMessagesOnlyUpstream: a tenant whose upstream speaks
// only Anthropic Messages gets its summaries from that upstream, in its
// protocol (POST /messages with x-api-key and anthropic-version, the
// instructions as system): the job lands, and the next request carries
// the summary in its system prompt and none of the turns it covers.
// Before, every summary went to /chat/completions with a bearer key: a
// 404 each time, and no summary ever landed.
func TestSummariesOverAMessagesOnlyUpstream(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{Global: summaryOn(4, 2), Summary: func(*summary.Config) {},
		Tenants: anthropicTenant().Tenants})
	say := func(text string) {
		t.Helper()
		body := `{"model":"claude-sonnet-4-5","max_tokens":256,"system":"be brief","messages":[{"role":"user","content":"` + text + `"}]}`
		if r := h.PostHeaders("/v1/messages", anHeaders("X-Conversation-ID", "sum-an"), body); r.Status != 200 {
			t.Fatalf("%s: %d %s", text, r.Status, r.Body)
		}
		h.WaitDone("sum-an")
	}
	c := summariseFive(t, h, "sum-an", say)
	if c.Path != "/v1/messages" || c.Header.Get("X-Api-Key") != "sk-up-an" || c.Header.Get("Authorization") != "" || c.Header.Get("Anthropic-Version") == "" {
		t.Errorf("the summariser call: %s with x-api-key %q, authorization %q, anthropic-version %q; want /v1/messages with the tenant's key as x-api-key",
			c.Path, c.Header.Get("X-Api-Key"), c.Header.Get("Authorization"), c.Header.Get("Anthropic-Version"))
	}
	say("turn 6")
	last := h.Up.Last()
	checkSummaryIn(t, last.Body, "system")
	if got := strings.Join(e2etest.RenderAll(last.Messages), "\n"); strings.Contains(got, "turn 1") || !strings.Contains(got, "turn 6") {
		t.Errorf("after the summary: the upstream got %q, want none of the summarised turns", got)
	}
}
