package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/openai/openai-go/v3"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/summary"
)

const (
	acmeKey  = "rk-acme-1"
	adminKey = "rk-admin-1"
)

// TestInspectorInABrowser drives the inspector's page (/recall/ui/) in
// headless chromium, by keyboard and by the names assistive technology
// finds (DESIGN.md §13), over a server with two tenants and a
// conversation that has a summary, dropped turns, an edit and a
// forgotten turn. With RECALL_UI_SCREENSHOTS=dir it keeps screenshots of
// the list, a conversation and its exchanges.
func TestInspectorInABrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short drives no browser")
	}
	findChromium(t) // fail first, before building anything
	h := inspectorServer(t)
	browser := newBrowser(t)
	base := h.URL + "/recall/ui/"

	t.Run("sign-in refuses a wrong key with the API's error", func(t *testing.T) {
		b := browser.in(t)
		b.do("open the page", chromedp.Navigate(h.URL+"/recall/ui"))
		b.waitView("signin")
		if got := eval[string](b, "location.href"); got != base {
			t.Errorf("/recall/ui led to %s, want %s", got, base)
		}
		b.fill("textbox", "API key", "rk-wrong")
		b.press("Sign in", "button", named("Sign in"))
		b.do("wait for the error", chromedp.WaitVisible(chromedp.CSS("#signin-error")))
		if got := b.text("#signin-error"); !strings.Contains(got, "Incorrect API key provided.") {
			t.Errorf("error shown: %q, want the API's Incorrect API key provided.", got)
		}
		if got := eval[int](b, "sessionStorage.length + localStorage.length"); got != 0 {
			t.Errorf("a refused key left %d stored items", got)
		}
	})

	t.Run("sign-in keeps the key in the tab only and lists the conversations", func(t *testing.T) {
		b := browser.in(t)
		b.fill("textbox", "API key", acmeKey)
		b.press("Sign in", "button", named("Sign in"))
		b.waitView("list")
		if got := eval[string](b, "sessionStorage.getItem('recall.key')"); got != acmeKey {
			t.Errorf("session storage holds %q, want the key", got)
		}
		if got := eval[int](b, "localStorage.length"); got != 0 {
			t.Errorf("local storage holds %d items, want none", got)
		}
		links := b.names("link")
		for _, id := range []string{"ui-long", "ui-fox", "ui-tools"} {
			if !slices.ContainsFunc(links, func(s string) bool { return strings.Contains(s, id) }) {
				t.Errorf("no link names %s; links: %q", id, links)
			}
		}
		if slices.ContainsFunc(links, func(s string) bool { return strings.Contains(s, "ui-globex") }) {
			t.Errorf("acme's list links globex's conversation: %q", links)
		}
		var c struct {
			Status string `json:"status"`
			Turns  int    `json:"turns"`
			Tokens int    `json:"tokens"`
		}
		h.API(acmeKey, "", "GET", "/recall/v1/conversations/ui-long", "").JSON(t, &c)
		cells := strings.Fields(eval[string](b, `document.querySelector('a[href="#/c/ui-long"]').closest('tr').innerText`))
		for _, want := range []string{"ui-long", c.Status, grouped(c.Turns), grouped(c.Tokens)} {
			if !slices.Contains(cells, want) {
				t.Errorf("ui-long's row %q lacks %q", cells, want)
			}
		}
		b.keep("1-list")
	})

	t.Run("search finds a message's conversation", func(t *testing.T) {
		b := browser.in(t)
		b.fill("searchbox", "Search messages", "fox")
		b.key(kb.Enter)
		b.do("wait for the hits", chromedp.WaitVisible(chromedp.CSS(".hits")))
		b.waitView("list")
		links := b.names("link")
		if !slices.ContainsFunc(links, nameContains("ui-fox")) {
			t.Errorf("searching fox links no ui-fox: %q", links)
		}
		if slices.ContainsFunc(links, nameContains("ui-long")) {
			t.Errorf("searching fox links ui-long: %q", links)
		}
		if got := eval[string](b, "location.hash"); got != "#/?q=fox" {
			t.Errorf("the search's address is %q, want #/?q=fox", got)
		}
	})

	// Every id a conversation may have opens: ':' and '@' (the README's
	// run:7), '.', '_' and '-', from the list's link and by its address.
	t.Run("every valid conversation id opens", func(t *testing.T) {
		b := browser.in(t)
		for _, id := range oddIDs {
			b.do("back to the list", chromedp.Navigate(base+"#/"))
			b.waitView("list")
			b.press(id, "link", nameContains(id))
			b.waitView("conversation")
			if got := b.text(".crumbs .id"); got != id {
				t.Errorf("%s opened the conversation %q", id, got)
			}
			if got := b.text(".messages"); !strings.Contains(got, "hello from "+id) {
				t.Errorf("%s shows messages %q, want its own", id, got)
			}
			b.press("the Exchanges tab", "link", named("Exchanges"))
			b.waitView("exchanges")
			b.do("find "+id+"'s exchange", chromedp.WaitVisible(chromedp.CSS("a.xrow")))
			b.do("open "+id+" by its address", chromedp.Navigate(base+"#/c/"+id))
			b.waitView("conversation")
			if got := b.text(".crumbs .id"); got != id {
				t.Errorf("#/c/%s opened the conversation %q", id, got)
			}
		}
	})

	t.Run("a conversation shows its summary, messages, roles and flags", func(t *testing.T) {
		b := browser.in(t)
		b.do("back to the list", chromedp.Navigate(base+"#/"))
		b.waitView("list")
		b.press("ui-long", "link", nameContains("ui-long"))
		b.waitView("conversation")
		b.do("find the Summary heading", chromedp.WaitVisible("", role("heading", named("Summary"))))
		if got := b.text(".summary-text"); !strings.Contains(got, "turn 1") {
			t.Errorf("summary shown: %q, want the summary of turns 1-3", got)
		}
		for _, sel := range []string{".msg.is-superseded .flag-superseded", ".msg.is-forgotten .flag-forgotten", ".msg.role-user", ".msg.role-assistant"} {
			b.do("find "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
		}
		if got := b.text(".msg.is-superseded"); !strings.Contains(got, "turn 7") {
			t.Errorf("superseded message: %q, want the first version of turn 7", got)
		}
		if got := b.text("body"); strings.Contains(got, acmeKey) {
			t.Errorf("the page shows the key")
		}
		var cal struct {
			Calibration *struct {
				Ratio   float64 `json:"ratio"`
				Samples int     `json:"samples"`
			} `json:"calibration"`
		}
		h.API(acmeKey, "", "GET", "/recall/v1/conversations/ui-long", "").JSON(t, &cal)
		if cal.Calibration == nil || cal.Calibration.Samples == 0 {
			t.Errorf("ui-long's calibration: got %+v, want one learned from its exchanges", cal.Calibration)
		} else if got, want := b.text(".stats .calibration"), fmt.Sprintf("ratio %.2f over %d samples", cal.Calibration.Ratio, cal.Calibration.Samples); got != want {
			t.Errorf("calibration shown: %q, want %q", got, want)
		}
		b.keep("2-conversation")

		b.do("open the tool conversation", chromedp.Navigate(base+"#/c/ui-tools"))
		b.waitView("conversation")
		if got := b.text(".msg.role-assistant .content"); !strings.Contains(got, "read_file") || !strings.Contains(got, `{"path":"notes.txt"}`) {
			t.Errorf("tool call shown as %q, want read_file and its arguments", got)
		}
		if got := b.text(".msg.role-tool .tool"); !strings.Contains(got, "buy milk") {
			t.Errorf("tool result shown as %q, want its text", got)
		}
		b.keep("2-conversation-tools")
	})

	// Each protocol's messages are shown by the role and text the API
	// read through their codec, never by the page reading their JSON: a
	// Gemini "model" content is an assistant's, an Anthropic tool_result
	// is a tool's, and a Gemini functionResponse shows its output, not
	// its JSON.
	t.Run("Responses, Messages and Gemini conversations show their texts", func(t *testing.T) {
		b := browser.in(t)
		for _, tc := range []struct {
			id   string
			want []string // "role: text" of each message, in order
		}{
			{"ui-responses", []string{
				"user: what is the weather in Lisbon?",
				"assistant: (no text)",
				"assistant: weather {\"city\":\"Lisbon\"}",
				"tool: result 5 characters: sunny",
				"assistant: It is sunny in Lisbon.",
			}},
			{"ui-messages", []string{
				"user: <system-reminder>use the context</system-reminder> read a.go",
				"assistant: Reading. Read {\"path\":\"a.go\"}",
				"tool: result 15 characters: package main 42",
				"assistant: It says 42.",
			}},
			{"ui-gemini", []string{
				"user: and in Oslo?",
				"assistant: weather {\"city\":\"Oslo\"}",
				"tool: result 4 characters: rain",
				"assistant: Rain in Oslo.",
			}},
		} {
			b.do("open "+tc.id, chromedp.Navigate(base+"#/c/"+tc.id))
			b.waitView("conversation")
			got := eval[[]string](b, `[...document.querySelectorAll('li.msg')].map((m) => m.querySelector('.role').innerText + ': ' + `+
				`m.querySelector('.content, .meta + .muted').innerText.replace(/\s+/g, ' ').trim())`)
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s shows\n%q\nwant\n%q", tc.id, got, tc.want)
			}
		}
		b.keep("2-conversation-protocols")

		// A search hit's one-line preview leaves the agent's reminder out.
		b.do("back to the list", chromedp.Navigate(base+"#/"))
		b.waitView("list")
		b.fill("searchbox", "Search messages", "a.go")
		b.key(kb.Enter)
		b.do("wait for the hits", chromedp.WaitVisible(chromedp.CSS(".hits")))
		b.waitView("list")
		got := eval[[]string](b, `[...document.querySelectorAll('.hit')].map((h) => h.innerText.replace(/\s+/g, ' ').trim())`)
		if !slices.ContainsFunc(got, func(s string) bool {
			return strings.Contains(s, "ui-messages") && strings.HasSuffix(s, "user read a.go")
		}) {
			t.Errorf("hits for a.go: %q, want ui-messages's user message without its reminder", got)
		}
	})

	xid, reason := exchangeWithDrop(t, h)
	// A side call on ui-long: listed among its exchanges with its rule.
	if r := h.PostHeaders("/v1/chat/completions", map[string]string{"Authorization": "Bearer " + acmeKey, "X-Conversation-ID": "ui-long",
		"X-Recall-Thread": "side", "Content-Type": "application/json"},
		`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"a title for this, please"}]}`); r.Status != 200 {
		t.Fatalf("a side call: %d %s", r.Status, r.Body)
	}

	t.Run("exchanges are drawn against the budget", func(t *testing.T) {
		b := browser.in(t)
		if xid == "" {
			t.Skip(reason)
		}
		b.do("open the conversation", chromedp.Navigate(base+"#/c/ui-long"))
		b.waitView("conversation")
		b.press("the Exchanges tab", "link", named("Exchanges"))
		b.waitView("exchanges")
		// ARIA's img role; Chromium's accessibility tree calls it image.
		imgs := append(b.names("img"), b.names("image")...)
		if !slices.ContainsFunc(imgs, nameStartsWith("Tokens")) {
			t.Errorf("no image named Tokens…: %q", imgs)
		}
		b.do("find the budget line", chromedp.WaitVisible(chromedp.CSS(`svg[role="img"] line.budget`)))
		// The chat calls' bars fill the chart: a summariser's record (its
		// budget is its model's whole window) does not set the scale.
		widest := `Math.max(...[...document.querySelectorAll('a.xrow.kind-chat svg.bar')].map((svg) =>
			[...svg.querySelectorAll('rect.seg')].reduce((w, r) => w + r.width.baseVal.value, 0) / svg.viewBox.baseVal.width))`
		if got := eval[float64](b, widest); got < 0.5 {
			t.Errorf("the widest chat bar fills %.3f of the chart, want at least half", got)
		}
		// The summariser's calls are in the timeline, labelled and coloured
		// apart from the chat calls, and their detail names their kind.
		// A side call is labelled with the rule that made it one.
		if xid != "" {
			b.do("find the side call", chromedp.WaitVisible(chromedp.CSS(`a.xrow.kind-side .kind`)))
			if got := b.text(`a.xrow.kind-side .kind`); got != "side: header" {
				t.Errorf("the side call's label: %q, want side: header", got)
			}
		}
		b.do("find a summary record", chromedp.WaitVisible(chromedp.CSS(`a.xrow.kind-summary .kind`)))
		if got := b.text(`a.xrow.kind-summary .kind`); got != "summary" {
			t.Errorf("a summary record's label: %q, want summary", got)
		}
		bg := `(sel) => getComputedStyle(document.querySelector(sel)).backgroundColor`
		if s, c := eval[string](b, "("+bg+")('a.xrow.kind-summary .kind')"), eval[string](b, "("+bg+")('a.xrow.kind-chat .kind')"); s == c {
			t.Errorf("summary and chat records' labels share the colour %s", s)
		}
		sid := eval[string](b, `document.querySelector('a.xrow.kind-summary').dataset.xid`)
		b.do("open the summary record", chromedp.Navigate(base+"#/c/ui-long/exchanges/"+sid))
		b.do("wait for its detail", chromedp.WaitVisible(chromedp.CSS("aside.detail .xmeta .kind-summary")))
		if got := b.text("aside.detail .pairs"); !strings.Contains(got, "History") {
			t.Errorf("summary record's tokens %q, want the history it folded", got)
		}
		b.closeDetail()
	})

	t.Run("an exchange's detail lists what was dropped and why", func(t *testing.T) {
		b := browser.in(t)
		if xid == "" {
			t.Skip(reason)
		}
		row := fmt.Sprintf(`a.xrow[data-xid=%q]`, xid)
		b.do("select "+xid, chromedp.Focus(chromedp.CSS(row)), chromedp.KeyEvent(kb.Enter))
		b.do("wait for the detail", chromedp.WaitVisible(chromedp.CSS("aside.detail li.dropped")))
		got := b.text("aside.detail li.dropped")
		if !strings.Contains(got, "dropped") || !strings.Contains(got, reason) {
			t.Errorf("dropped item %q, want the word dropped and the reason %s", got, reason)
		}
		if got := eval[string](b, "location.hash"); got != "#/c/ui-long/exchanges/"+xid {
			t.Errorf("the selection's address is %q", got)
		}
		if got := b.text("aside.detail .pairs"); !strings.Contains(got, "Estimated input") || !strings.Contains(got, "Calibrated input") || !strings.Contains(got, "Reported input") {
			t.Errorf("detail's tokens %q, want estimated, calibrated and reported input", got)
		}
		b.press("Show the messages sent", "button", named("Show the messages sent"))
		if got := b.text("aside.detail .sent-list"); !strings.Contains(got, "instruction") || !strings.Contains(got, "turn 7, edited") {
			t.Errorf("messages sent: %q, want the instructions' placeholder and the edited turn 7", got)
		}
		eval[int](b, "window.scrollTo(0, 0), document.querySelector('aside.detail').scrollTop = 0") // the screenshot shows the decisions
		b.keep("3-exchanges")
		b.keepDark("4-exchanges-dark")
		b.closeDetail()
		if got := eval[string](b, "document.activeElement.dataset.xid || ''"); got != xid {
			t.Errorf("after Escape the focus is on %q, want the row of %s", got, xid)
		}
	})

	// An exchange that sent the first summary, which the second replaced:
	// the summary it sent is said to be replaced, in the page's neutral
	// colours, not forgotten in its danger colour; the context as the
	// upstream's protocol carried it is there to read, and the bar has a
	// part for the tool definitions.
	t.Run("a summary replaced since reads as replaced, not lost", func(t *testing.T) {
		b := browser.in(t)
		old := replacedSummaryExchange(t, h)
		b.do("open the exchange", chromedp.Navigate(base+"#/c/ui-long/exchanges/"+old))
		b.do("wait for its detail", chromedp.WaitVisible(chromedp.CSS("aside.detail .pairs")))
		if got := b.text(".legend"); !strings.Contains(got, "Tools") {
			t.Errorf("the legend %q has no Tools", got)
		}
		b.press("Show the messages sent", "button", named("Show the messages sent"))
		b.do("wait for the summary sent", chromedp.WaitVisible(chromedp.CSS("aside.detail .sent-list .kind-summary")))
		got := b.text("aside.detail .sent-list .kind-summary")
		if !strings.Contains(got, "replaced by a later summary") || strings.Contains(got, "forgotten") {
			t.Errorf("the replaced summary reads %q, want it replaced, not forgotten", got)
		}
		color := `(sel) => getComputedStyle(document.querySelector(sel)).color`
		danger := eval[string](b, `(() => { const p = document.createElement('span'); p.className = 'flag flag-forgotten'; document.body.append(p);
			const c = getComputedStyle(p).color; p.remove(); return c; })()`)
		if c := eval[string](b, "("+color+")('aside.detail .sent-list .kind-summary .flag-replaced')"); c == danger {
			t.Errorf("the replaced flag is in the danger colour %s", c)
		}
		if got := b.text("aside.detail .sent-json summary"); !strings.Contains(got, "chat.completions") {
			t.Errorf("the context as sent is titled %q, want its protocol", got)
		}
		b.closeDetail()
	})

	t.Run("the admin key acts on the tenant named", func(t *testing.T) {
		b := browser.in(t)
		b.press("Sign out", "button", named("Sign out"))
		b.waitView("signin")
		if got := eval[int](b, "sessionStorage.length"); got != 0 {
			t.Errorf("signed out with %d items in session storage", got)
		}
		b.fill("textbox", "API key", adminKey)
		b.fill("textbox", "Tenant", "globex")
		b.press("Sign in", "button", named("Sign in"))
		b.waitView("list")
		if links := b.names("link"); !slices.ContainsFunc(links, nameContains("ui-globex")) {
			t.Errorf("the admin key on globex links no ui-globex: %q", links)
		}
	})

	t.Run("the page stays on Recall's origin under its policy", func(t *testing.T) {
		b := browser.in(t)
		reqs := b.requested()
		if len(reqs) == 0 {
			t.Fatal("no request recorded")
		}
		for _, u := range reqs {
			if !strings.HasPrefix(u, h.URL+"/") {
				t.Errorf("the page requested %s, outside %s", u, h.URL)
			}
		}
		if got := b.header(base, "Content-Security-Policy"); !strings.HasPrefix(got, "default-src 'self'") {
			t.Errorf("the page came with Content-Security-Policy %q", got)
		}
		for _, m := range b.logged() {
			if m.IsException() || strings.Contains(m.Text, "Content Security Policy") || m.Type == "error" && !strings.Contains(m.Text, "401") {
				t.Errorf("console: %s", m)
			}
		}
	})
}

// inspectorServer starts Recall with two tenants and an admin key, small
// summaries and a tight budget, and gives acme conversations to look at.
func inspectorServer(t *testing.T) *e2etest.Harness {
	t.Helper()
	o := e2etest.TwoTenants()
	o.Global = func(g *config.Global) {
		g.AdminKey = adminKey
		summaryOn(4, 2)(g)
		g.Defaults.History.BudgetTokens = 400
	}
	o.Summary = func(*summary.Config) {}
	h := e2etest.New(t, o)

	// ui-long: five turns and a summary of the first three, two more
	// turns, the last edited, then turn 6's question forgotten (after
	// what the summary covers, which forgetting would void).
	r := &resender{t: t, c: h.Client(acmeKey, "ui-long"), msgs: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief")}}
	say := func(n int, extra string) {
		r.say(fmt.Sprintf("turn %d%s: %s", n, extra, strings.Repeat("lorem ipsum dolor ", 6)))
		h.WaitDone("ui-long")
	}
	for i := 1; i <= 5; i++ {
		say(i, "")
	}
	if d := h.WaitJob("ui-long"); d.Outcome != summary.Landed {
		t.Fatalf("summary job: %+v, want landed", d)
	}
	say(6, "")
	say(7, "")
	r.msgs = r.msgs[:len(r.msgs)-2]
	say(7, ", edited")
	// The edit's commit calls for the second compaction, of turns 4 and 5.
	if d := h.WaitJob("ui-long"); d.Outcome != summary.Landed {
		t.Fatalf("second summary job: %+v, want landed", d)
	}
	if a := h.API(acmeKey, "", "POST", "/recall/v1/conversations/ui-long/forget", `{"instruction":"position:11","mode":"soft"}`); a.Status != 200 {
		t.Fatalf("forget: %d %s", a.Status, a.Body)
	}

	h.Say(acmeKey, "ui-fox", "where did the quick brown fox go?")
	h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"notes.txt"}`}}})
	for _, body := range []string{
		`{"model":"gpt-4o","messages":[{"role":"user","content":"read my notes"}]}`,
		`{"model":"gpt-4o","messages":[{"role":"tool","tool_call_id":"call_1","content":"buy milk"}]}`,
	} {
		if res := h.Post("/v1/chat/completions", acmeKey, "ui-tools", body); res.Status != 200 {
			t.Fatalf("ui-tools: %d %s", res.Status, res.Body)
		}
		h.WaitDone("ui-tools")
	}
	importConv(t, h, "ui-responses",
		`{"protocol":"responses","message":{"type":"message","role":"user","content":[{"type":"input_text","text":"what is the weather in Lisbon?"}]}}`,
		`{"protocol":"responses","message":{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"}}`,
		`{"protocol":"responses","message":{"type":"function_call","call_id":"call_2","name":"weather","arguments":"{\"city\":\"Lisbon\"}"}}`,
		`{"protocol":"responses","message":{"type":"function_call_output","call_id":"call_2","output":"sunny"}}`,
		`{"protocol":"responses","message":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"It is sunny in Lisbon.","annotations":[]}]}}`)
	importConv(t, h, "ui-messages",
		`{"protocol":"messages","message":{"role":"user","content":[{"type":"text","text":"<system-reminder>use the context</system-reminder>"},{"type":"text","text":"read a.go"}]}}`,
		`{"protocol":"messages","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"Reading."},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"path":"a.go"}}]}}`,
		`{"protocol":"messages","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"package main 42"}]}}`,
		`{"protocol":"messages","message":{"role":"assistant","content":[{"type":"text","text":"It says 42."}]}}`)
	importConv(t, h, "ui-gemini",
		`{"protocol":"gemini","message":{"role":"user","parts":[{"text":"and in Oslo?"}]}}`,
		`{"protocol":"gemini","message":{"role":"model","parts":[{"text":"plan","thought":true},{"functionCall":{"name":"weather","args":{"city":"Oslo"}},"thoughtSignature":"c2ln"}]}}`,
		`{"protocol":"gemini","message":{"role":"user","parts":[{"functionResponse":{"name":"weather","response":{"output":"rain"}}}]}}`,
		`{"protocol":"gemini","message":{"role":"model","parts":[{"text":"Rain in Oslo."}]}}`)
	for _, id := range oddIDs {
		h.Say(acmeKey, id, "hello from "+id)
	}
	h.Say("rk-globex-1", "ui-globex", "hello from globex")
	flush(t, h) // the exchange records are written off the request path
	return h
}

// oddIDs are conversation ids of every character an id may hold besides
// letters and digits.
var oddIDs = []string{"run:7", "ada@work", "v1.2_x-y"}

// replacedSummaryExchange returns a chat exchange of ui-long that sent a
// summary a later one replaced.
func replacedSummaryExchange(t *testing.T, h *e2etest.Harness) string {
	t.Helper()
	var list struct {
		Data []struct {
			ID      string `json:"id"`
			Kind    string `json:"kind"`
			Summary *struct {
				Through uint64 `json:"through"`
			} `json:"summary"`
		} `json:"data"`
	}
	h.API(acmeKey, "", "GET", "/recall/v1/conversations/ui-long/exchanges?limit=100", "").JSON(t, &list)
	for _, x := range list.Data {
		if x.Kind != "chat" || x.Summary == nil {
			continue
		}
		var r struct {
			Messages []struct {
				Kind     string `json:"kind"`
				Replaced bool   `json:"replaced"`
			} `json:"messages"`
		}
		h.API(acmeKey, "", "GET", "/recall/v1/conversations/ui-long/exchanges/"+x.ID+"?render=messages", "").JSON(t, &r)
		for _, m := range r.Messages {
			if m.Kind == "summary" && m.Replaced {
				return x.ID
			}
		}
	}
	t.Fatalf("no chat exchange of ui-long sent a summary replaced since, among %d", len(list.Data))
	return ""
}

// importConv imports messages (each a line of an export without its
// place) into conversation id of acme, through the API's import.
func importConv(t *testing.T, h *e2etest.Harness, id string, msgs ...string) {
	t.Helper()
	lines := []string{`{"object":"conversation.export","version":1,"id":"` + id + `"}`}
	for i, m := range msgs {
		lines = append(lines, fmt.Sprintf(`{"object":"conversation.message","seq":%d,"turn":1,"episode":1,"created_at":1772355660,"tokens":0,"flags":[],%s`, i+1, m[1:]))
	}
	if a := h.API(acmeKey, "", "POST", "/recall/v1/conversations/"+id+"/import", strings.Join(lines, "\n")+"\n", "application/x-ndjson"); a.Status != 201 {
		t.Fatalf("import %s: %d %s", id, a.Status, a.Body)
	}
}

// exchangeWithDrop returns an exchange of ui-long that dropped turns, and
// the reason of its first drop; or "" and why the exchange subtests
// skip: a server without the exchanges route (404) has no records.
func exchangeWithDrop(t *testing.T, h *e2etest.Harness) (xid, reason string) {
	t.Helper()
	req, _ := http.NewRequest("GET", h.URL+"/recall/v1/conversations/ui-long/exchanges?limit=100", nil)
	req.Header.Set("Authorization", "Bearer "+acmeKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return "", "GET /recall/v1/conversations/{id}/exchanges answers 404: this server records no exchanges yet"
	}
	var list struct {
		Data []struct {
			ID      string `json:"id"`
			Dropped []struct {
				Reason string `json:"reason"`
			} `json:"dropped"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || resp.StatusCode != 200 {
		t.Fatalf("exchanges: %d %v", resp.StatusCode, err)
	}
	for _, x := range list.Data {
		if len(x.Dropped) > 0 {
			return x.ID, x.Dropped[0].Reason
		}
	}
	t.Fatalf("no exchange of ui-long dropped turns among %d", len(list.Data))
	return "", ""
}

// grouped writes n as the page does in English: 12,345.
func grouped(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// TestInspectorLoadsMorePages: each paged list of the inspector (the
// conversations, a conversation's messages, its exchanges) shows its
// first page, and its button loads the rest once pressed, then hides.
// Each list holds one item more than its page.
func TestInspectorLoadsMorePages(t *testing.T) {
	if testing.Short() {
		t.Skip("-short drives no browser")
	}
	findChromium(t) // fail first, before building anything
	h := e2etest.New(t, e2etest.TwoTenants())
	const conversations, messages, exchanges = 51, 201, 101 // each one past its page
	for i := range conversations - 2 {                      // and the two below
		importConv(t, h, fmt.Sprintf("page-%02d", i), `{"protocol":"chat.completions","message":{"role":"user","content":"hi"}}`)
	}
	var msgs []string
	for i := range messages {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, fmt.Sprintf(`{"protocol":"chat.completions","message":{"role":%q,"content":"message %d"}}`, role, i+1))
	}
	importConv(t, h, "long", msgs...)
	for i := range exchanges {
		h.Say(acmeKey, "busy", "exchange "+strconv.Itoa(i+1))
	}
	flush(t, h)

	browser := newBrowser(t)
	b := browser.in(t)
	base := h.URL + "/recall/ui/"
	b.do("open the page", chromedp.Navigate(base))
	b.waitView("signin")
	b.fill("textbox", "API key", acmeKey)
	b.press("Sign in", "button", named("Sign in"))
	b.waitView("list")

	for _, tc := range []struct {
		name, hash, view, button, items string
		want                            int
	}{
		{"conversations", "#/", "list", "Load more", "table.conversations tbody tr", conversations},
		{"messages", "#/c/long", "conversation", "Load more messages", "ol.messages > li", messages},
		{"exchanges", "#/c/busy/exchanges", "exchanges", "Load older exchanges", "ol.timeline > li", exchanges},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := browser.in(t)
			b.do("open "+tc.hash, chromedp.Navigate(base+tc.hash))
			b.waitView(tc.view)
			count := "document.querySelectorAll(" + strconv.Quote(tc.items) + ").length"
			if got := eval[int](b, count); got != tc.want-1 {
				t.Fatalf("first page: got %d items, want %d", got, tc.want-1)
			}
			b.press(tc.button, "button", named(tc.button))
			b.do("wait for the next page", chromedp.WaitReady(chromedp.CSS(fmt.Sprintf("%s:nth-child(%d)", tc.items, tc.want))))
			if got := eval[int](b, count); got != tc.want {
				t.Errorf("after %s: got %d items, want %d", tc.button, got, tc.want)
			}
			b.do("wait for the button to hide", chromedp.WaitNotVisible(chromedp.CSS("div.actions button")))
		})
	}
}
