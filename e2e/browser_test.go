package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// chromiumHelp says how to get the browser the UI suite drives; the suite
// fails without it rather than skip, so that a green run means the page
// was exercised in a real browser.
const chromiumHelp = "the UI suite drives a real browser, Debian's chromium: install it with " +
	"apt-get install -y chromium (or point RECALL_CHROMIUM at a Chromium or Chrome binary)"

// stepTimeout bounds each browser step: a wait for a view, a key press.
const stepTimeout = 15 * time.Second

// findChromium returns the browser binary: $RECALL_CHROMIUM, then
// /usr/bin/chromium, then the usual names on PATH. It fails the test
// when there is none.
func findChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("RECALL_CHROMIUM"); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("no chromium found: %s", chromiumHelp)
	return ""
}

// browser is one headless chromium tab on a laptop-sized window, with
// everything it requested and logged recorded for the test to check.
type browser struct {
	t   *testing.T // the test its steps fail
	ctx context.Context
	rec *record
}

// record is what the tab requested and logged.
type record struct {
	mu       sync.Mutex
	requests []string                   // every URL the page requested
	headers  map[string]network.Headers // response headers by URL
	console  []chromedp.ConsoleMessage
}

// in returns the browser with its steps failing t, a subtest, which gets
// a screenshot of the page if it fails.
func (b *browser) in(t *testing.T) *browser {
	c := *b
	c.t = t
	c.onFailure(t)
	return &c
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(findChromium(t)),
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 800),
		chromedp.Flag("lang", "en-US"), // the page formats numbers in the browser's locale
		chromedp.UserDataDir(t.TempDir()),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // chromium refuses to run its sandbox as root
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// The first run starts the browser; it gets no deadline, which would
	// bound the browser's life.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v (%s)", err, chromiumHelp)
	}
	rec := &record{headers: map[string]network.Headers{}}
	b := &browser{t: t, ctx: ctx, rec: rec}
	err := chromedp.Listen(ctx, func(ev any) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			rec.requests = append(rec.requests, ev.Request.URL)
		case *network.EventResponseReceived:
			rec.headers[ev.Response.URL] = ev.Response.Headers
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			rec.mu.Lock()
			rec.console = append(rec.console, m)
			rec.mu.Unlock()
		}
	}()
	return b
}

// do runs steps with a deadline, failing the test on error.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression into T.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitView waits until <main> shows view, loaded.
func (b *browser) waitView(view string) {
	b.t.Helper()
	b.do("wait for the "+view+" view", chromedp.WaitVisible(chromedp.CSS(`main[data-view="`+view+`"][aria-busy="false"]`)))
}

// text is the rendered text of the first element sel matches, once
// there is one.
func (b *browser) text(sel string) string {
	b.t.Helper()
	b.do("find "+sel, chromedp.WaitReady(chromedp.CSS(sel)))
	q, _ := json.Marshal(sel)
	return eval[string](b, "document.querySelector("+string(q)+").innerText")
}

// role selects elements as assistive technology finds them: by computed
// role, and an accessible name that match accepts (the query waits until
// one is there).
func role(r string, match func(name string) bool) chromedp.QueryOption {
	return chromedp.ByFunc(func(ctx context.Context, t *chromedp.Target, n *chromedp.Node) ([]cdp.NodeID, error) {
		res, err := cdp.Call(ctx, t, accessibility.QueryAXTree, accessibility.QueryAXTreeParams{NodeID: n.NodeID, Role: r})
		if err != nil {
			return nil, err
		}
		var backend []cdp.BackendNodeID
		for _, a := range res.Nodes {
			if !a.Ignored && a.BackendDOMNodeID != 0 && match(axName(a)) {
				backend = append(backend, a.BackendDOMNodeID)
			}
		}
		if len(backend) == 0 {
			return nil, nil
		}
		pushed, err := cdp.Call(ctx, t, dom.PushNodesByBackendIDsToFrontend, dom.PushNodesByBackendIDsToFrontendParams{BackendNodeIDs: backend})
		return pushed.NodeIDs, err
	})
}

func named(name string) func(string) bool { return func(s string) bool { return s == name } }
func nameContains(sub string) func(string) bool {
	return func(s string) bool { return strings.Contains(s, sub) }
}
func nameStartsWith(pre string) func(string) bool {
	return func(s string) bool { return strings.HasPrefix(s, pre) }
}

func axName(n *accessibility.Node) string {
	if n.Name == nil {
		return ""
	}
	var s string
	json.Unmarshal(n.Name.Value, &s)
	return s
}

// names returns the accessible names of every element of role r now on
// the page.
func (b *browser) names(r string) []string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	names, err := chromedp.Run(ctx, func(ctx context.Context, t *chromedp.Target) ([]string, error) {
		// The document as a JavaScript object: DOM.getDocument would
		// renumber the nodes chromedp tracks.
		doc, err := cdp.Call(ctx, t, runtime.Evaluate, runtime.EvaluateParams{Expression: "document"})
		if err != nil {
			return nil, err
		}
		res, err := cdp.Call(ctx, t, accessibility.QueryAXTree, accessibility.QueryAXTreeParams{ObjectID: doc.Result.ObjectID, Role: r})
		if err != nil {
			return nil, err
		}
		var out []string
		for _, a := range res.Nodes {
			if !a.Ignored {
				out = append(out, axName(a))
			}
		}
		return out, nil
	})
	if err != nil {
		b.t.Fatalf("names of %s: %v", r, err)
	}
	return names
}

// fill types text into the field of role r named name, replacing what
// it held.
func (b *browser) fill(r, name, text string) {
	b.t.Helper()
	sel := role(r, named(name))
	b.do("fill "+name, chromedp.Clear("", sel), chromedp.SendKeys("", text, sel))
}

// press focuses the element of role r whose name match accepts, and
// presses Enter on it: the page is driven by keyboard.
func (b *browser) press(what, r string, match func(string) bool) {
	b.t.Helper()
	b.do("press "+what, chromedp.Focus("", role(r, match)), chromedp.KeyEvent(kb.Enter))
}

// key presses one key on whatever has the focus.
func (b *browser) key(k string) {
	b.t.Helper()
	b.do("press a key", chromedp.KeyEvent(k))
}

// closeDetail presses Escape and waits for the detail pane to close.
func (b *browser) closeDetail() {
	b.t.Helper()
	b.key(kb.Escape)
	b.do("wait for the detail to close", chromedp.WaitNotVisible(chromedp.CSS("aside.detail")))
}

// screenshot saves the viewport as a PNG in dir and returns its path.
func (b *browser) screenshot(dir, name string) (string, error) {
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, name+".png")
	return p, os.WriteFile(p, png, 0o644)
}

// onFailure saves a screenshot of the current view if t fails: under
// $RECALL_UI_SCREENSHOTS if set (kept), else under t.TempDir().
func (b *browser) onFailure(t *testing.T) {
	dir := os.Getenv("RECALL_UI_SCREENSHOTS")
	keep := dir != ""
	if !keep {
		dir = t.TempDir()
	}
	t.Cleanup(func() {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Logf("screenshot of the failure: %v", err)
			return
		}
		if !t.Failed() {
			return
		}
		name := "failed-" + strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
		p, err := b.screenshot(dir, name)
		switch {
		case err != nil:
			t.Logf("screenshot of the failure: %v", err)
		case keep:
			t.Logf("screenshot of the failure: %s", p)
		default:
			t.Logf("screenshot of the failure: %s (removed with the test's temporary directory; set RECALL_UI_SCREENSHOTS=dir to keep it)", p)
		}
	})
}

// keep saves a screenshot under $RECALL_UI_SCREENSHOTS, if set: the
// views of a passing run, to look at.
func (b *browser) keep(name string) {
	b.t.Helper()
	dir := os.Getenv("RECALL_UI_SCREENSHOTS")
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	p, err := b.screenshot(dir, name)
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	b.t.Logf("screenshot: %s", p)
}

// keepDark is keep with the page in its dark colour scheme.
func (b *browser) keepDark(name string) {
	b.t.Helper()
	if os.Getenv("RECALL_UI_SCREENSHOTS") == "" {
		return
	}
	scheme := func(v string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}}})
			return err
		})
	}
	b.do("dark scheme", scheme("dark"))
	defer b.do("light scheme", scheme(""))
	b.keep(name)
}

// requested returns every URL the page requested so far.
func (b *browser) requested() []string {
	b.rec.mu.Lock()
	defer b.rec.mu.Unlock()
	return append([]string(nil), b.rec.requests...)
}

// header returns a response header of url as the browser received it.
func (b *browser) header(url, name string) string {
	b.rec.mu.Lock()
	defer b.rec.mu.Unlock()
	for k, v := range b.rec.headers[url] {
		if strings.EqualFold(k, name) {
			s, _ := v.(string)
			return s
		}
	}
	return ""
}

// logged returns the console messages so far.
func (b *browser) logged() []chromedp.ConsoleMessage {
	b.rec.mu.Lock()
	defer b.rec.mu.Unlock()
	return append([]chromedp.ConsoleMessage(nil), b.rec.console...)
}
