package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/recallproxy/recall/internal/e2etest"
)

// TestInspectorShowsThreads drives the inspector in headless chromium
// over a conversation Claude Code would make through Recall (its calls
// made as the agent makes them): two turns of the main thread, a
// subagent's two turns (x-claude-code-agent-id), a title call and a
// classifier's question without the thread's tools. The conversation
// view lists the threads with their turns, linked to their conversation;
// choosing the subagent's shows its own messages, never the main
// thread's; each exchange says its thread, its kind and why; the side
// calls list apart; and no key reaches the page.
func TestInspectorShowsThreads(t *testing.T) {
	if testing.Short() {
		t.Skip("-short drives no browser")
	}
	findChromium(t)
	const (
		clientKey   = "rk-threads-7f3a"
		upstreamKey = "sk-up-threads-91c2"
		agentID     = "a1b2c3d4e5"
	)
	h := e2etest.New(t, e2etest.Options{Tenants: map[string]string{"an.yaml": "id: an\napi_keys: [\"" + clientKey + "\"]\nupstream:\n  base_url: \"{{UPSTREAM}}\"\n  api_key: \"" + upstreamKey + "\"\n  protocol: anthropic\n"}})
	agent := map[string]string{"x-api-key": clientKey, "anthropic-version": "2023-06-01", "Content-Type": "application/json"}
	sub := map[string]string{"x-api-key": clientKey, "anthropic-version": "2023-06-01", "Content-Type": "application/json",
		"x-claude-code-agent-id": agentID}
	post := func(headers map[string]string, conv, body string) {
		t.Helper()
		if r := h.PostHeaders("/c/proj/v1/messages", headers, body); r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		h.WaitDone(conv)
	}
	const thread = "proj~" + agentID
	classifier := `{"model":"claude-haiku-4-5","max_tokens":64,"system":[{"type":"text","text":"Decide whether the user's message starts a new topic."}],` +
		`"messages":[{"role":"user","content":"is this a new topic?"}]}`
	post(agent, "proj", agentRequest("The code word is KIWI."))
	post(agent, "proj", claudeTitleCall("The code word is KIWI."))
	post(sub, thread, agentRequest("Subagent: list the files under src/."))
	post(sub, thread, agentRequest("Subagent: and the tests?"))
	post(agent, "proj", classifier)
	post(agent, "proj", agentRequest("What is the code word?"))
	flush(t, h)

	browser := newBrowser(t)
	base := h.URL + "/recall/ui/"
	b := browser.in(t)
	b.do("open the page", chromedp.Navigate(base))
	b.waitView("signin")
	b.fill("textbox", "API key", clientKey)
	b.press("Sign in", "button", named("Sign in"))
	b.waitView("list")
	if got := eval[string](b, `document.querySelector('a[href="#/c/proj~`+agentID+`"]').closest('td').innerText`); !strings.Contains(got, "thread of proj") {
		t.Errorf("the list's row of the subagent's thread: %q, want it said a thread of proj", got)
	}

	b.do("open the conversation", chromedp.Navigate(base+"#/c/proj"))
	b.waitView("conversation")
	if navs := b.names("navigation"); !slices.Contains(navs, "Threads") {
		t.Fatalf("no navigation named Threads: %q", navs)
	}
	entries := `[...document.querySelectorAll('nav.threads a')].map((a) => a.innerText.replace(/\s+/g, ' ').trim() + (a.getAttribute('aria-current') ? ' (current)' : ''))`
	want := []string{"Main thread · 2 turns (current)", "Subagent " + agentID + " · 2 turns", "Side calls · 2 recorded"}
	if got := eval[[]string](b, entries); !slices.Equal(got, want) {
		t.Errorf("threads: got %q, want %q", got, want)
	}
	if got := b.text(".messages"); strings.Contains(got, "Subagent") || !strings.Contains(got, "KIWI") {
		t.Errorf("the main thread's messages: %q, want its own turns only", got)
	}
	b.keep("5-threads")

	b.press("the subagent's thread", "link", nameContains("Subagent "+agentID))
	b.waitView("conversation")
	if got := b.text(".crumbs .id"); got != thread {
		t.Errorf("the subagent's thread opened %q, want %s", got, thread)
	}
	if got := b.text(".crumbs a.parent"); got != "proj" {
		t.Errorf("the thread's parent in the breadcrumb: %q, want proj", got)
	}
	if got := b.text(".messages"); !strings.Contains(got, "list the files") || !strings.Contains(got, "and the tests?") || strings.Contains(got, "KIWI") {
		t.Errorf("the subagent's messages: %q, want its two turns and nothing of the main thread", got)
	}
	want = []string{"Main thread · 2 turns", "Subagent " + agentID + " · 2 turns (current)", "Side calls · 2 recorded"}
	if got := eval[[]string](b, entries); !slices.Equal(got, want) {
		t.Errorf("threads on the subagent's view: got %q, want %q", got, want)
	}

	rows := `[...document.querySelectorAll('a.xrow')].map((a) => a.querySelector('.kind').innerText + ' | ' + ` +
		`(a.querySelector('.xthread') ? a.querySelector('.xthread').innerText.replace(/\s+/g, ' ').trim() : ''))`
	b.press("the Exchanges tab", "link", named("Exchanges"))
	b.waitView("exchanges")
	b.do("find the thread's exchanges", chromedp.WaitVisible(chromedp.CSS("a.xrow")))
	want = []string{
		"chat | thread " + agentID + " why: x-claude-code-agent-id header",
		"chat | thread " + agentID + " why: x-claude-code-agent-id header",
	}
	if got := eval[[]string](b, rows); !slices.Equal(got, want) {
		t.Errorf("the subagent's exchanges: got %q, want %q", got, want)
	}

	b.do("open the main thread's exchanges", chromedp.Navigate(base+"#/c/proj/exchanges"))
	b.waitView("exchanges")
	b.do("find the exchanges", chromedp.WaitVisible(chromedp.CSS("a.xrow")))
	want = []string{
		"chat | main thread why: no side-call rule held",
		"side: no_tools | side call why: no tools, where the thread’s turns send them",
		"side: marker | side call why: a known side-call prompt (a session title, a model router, a background helper)",
		"chat | main thread why: no side-call rule held",
	}
	if got := eval[[]string](b, rows); !slices.Equal(got, want) {
		t.Errorf("the main thread's exchanges, newest first: got\n%q\nwant\n%q", got, want)
	}
	b.keep("6-thread-exchanges")

	b.press("the side calls", "link", nameStartsWith("Side calls"))
	b.waitView("exchanges")
	b.do("find the side calls", chromedp.WaitVisible(chromedp.CSS("a.xrow")))
	if got := eval[[]string](b, rows); len(got) != 2 || !strings.HasPrefix(got[0], "side: no_tools") || !strings.HasPrefix(got[1], "side: marker") {
		t.Errorf("the side calls alone: got %q, want the two side calls", got)
	}
	b.do("open a side call", chromedp.Focus(chromedp.CSS("a.xrow")), chromedp.KeyEvent("\r"))
	b.do("wait for its detail", chromedp.WaitVisible(chromedp.CSS("aside.detail .xthread")))
	if got := b.text("aside.detail .xthread"); !strings.Contains(got, "side call") || !strings.Contains(got, "no tools") {
		t.Errorf("the side call's detail says %q, want side call and its rule", got)
	}
	if got := eval[string](b, "location.hash"); !strings.HasSuffix(got, "?thread=side") {
		t.Errorf("the selection's address %q dropped the side calls' filter", got)
	}

	body := eval[string](b, "document.documentElement.outerHTML")
	for _, secret := range []string{clientKey, upstreamKey} {
		if strings.Contains(body, secret) {
			t.Errorf("the page holds the key %s", secret)
		}
	}
	for _, m := range b.logged() {
		if m.IsException() || m.Type == "error" {
			t.Errorf("console: %s", m)
		}
	}
}
