package summary

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/store/badgerstore/badgertest"
	"github.com/recallproxy/recall/tokens"
)

// staticTenants is a fixed tenant set.
type staticTenants struct{ set *config.Set }

func (s staticTenants) Current() *config.Set { return s.set }

// listing wraps a store with a List over a fixed set of conversations
// (Badger's List is being written elsewhere), newest first, paged.
type listing struct {
	history.Store
	convs []string
	pages int
}

func (l *listing) List(ctx context.Context, tenant string, q history.ListQuery) ([]history.Entry, bool, error) {
	l.pages++
	start := 0
	if q.After != "" {
		for i, c := range l.convs {
			if c == q.After {
				start = i + 1
			}
		}
	}
	var page []history.Entry
	i := start
	for ; i < len(l.convs) && len(page) < q.Limit; i++ {
		snap, err := l.Load(ctx, history.Key{Tenant: tenant, Conversation: l.convs[i]}, metaOnly)
		if err != nil {
			return nil, false, err
		}
		if q.Keep == nil || q.Keep(&snap.Meta) {
			page = append(page, history.Entry{Conversation: l.convs[i], Meta: snap.Meta})
		}
	}
	return page, i < len(l.convs), nil
}

// fixture is a tenant "acme" over the fake upstream and a real Badger store.
type fixture struct {
	t     *testing.T
	up    *upstreamtest.Server
	store history.Store
	set   *config.Set
	// answer, if set, is the assistant's text of turn i (default "ok " and
	// the user's text).
	answer func(i int) string
}

func newFixture(t *testing.T, policy func(*config.Policy), opts ...upstreamtest.Option) *fixture {
	t.Helper()
	f := &fixture{t: t, up: upstreamtest.NewTB(t, opts...)}
	f.store = badgertest.Open(t)
	g := config.DefaultGlobal()
	g.Defaults.Upstream.BaseURL = f.up.URL()
	g.Defaults.Upstream.APIKey = config.Secret("sk-upstream")
	g.Defaults.Summary.TriggerTurns, g.Defaults.Summary.KeepTurns = 4, 1
	if policy != nil {
		policy(&g.Defaults)
	}
	f.set = acmeTenants(t, g)
	return f
}

// acmeTenants loads the tenants of g with one, acme, from a file in a
// fresh tenants directory.
func acmeTenants(t *testing.T, g config.Global) *config.Set {
	t.Helper()
	g.TenantsDir = t.TempDir()
	if err := os.WriteFile(filepath.Join(g.TenantsDir, "acme.yaml"), []byte("id: acme\napi_keys: [sk-acme-client-0123456789]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	set, err := config.LoadTenants(g, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// write commits n turns of user text and an answer to conv.
func (f *fixture) write(conv string, from, n int, text func(i int) string) {
	f.t.Helper()
	k := history.Key{Tenant: "acme", Conversation: conv}
	for i := from; i < from+n; i++ {
		version := f.meta(conv).Version
		u := fmt.Appendf(nil, `{"role":"user","content":%q}`, text(i))
		answer := "ok " + text(i)
		if f.answer != nil {
			answer = f.answer(i)
		}
		a := fmt.Appendf(nil, `{"role":"assistant","content":%q}`, answer)
		_, err := f.store.Commit(context.Background(), k, history.Change{
			Version: version, Model: "gpt-4o", Now: time.Now().UnixNano(),
			Append: []history.Message{
				{Role: "user", Raw: u, Hash: chat.Hash(u), Tokens: 10},
				{Role: "assistant", Raw: a, Hash: chat.Hash(a), Tokens: 10},
			},
		})
		if err != nil {
			f.t.Fatal(err)
		}
	}
}

// manager starts a Manager for the fixture's tenants on its store; it
// closes when the test ends.
func (f *fixture) manager() *Manager {
	f.t.Helper()
	m, err := New(Config{Store: f.store, Tenants: staticTenants{f.set}})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { m.Close() })
	return m
}

// meta is conv's metadata as stored.
func (f *fixture) meta(conv string) history.Meta {
	f.t.Helper()
	snap, err := f.store.Load(context.Background(), history.Key{Tenant: "acme", Conversation: conv}, metaOnly)
	if err != nil {
		f.t.Fatal(err)
	}
	return snap.Meta
}

// jobOn starts a Manager for the fixture's tenants on st (the fixture's
// store, wrapped), runs the summary job of conversation c and returns how
// it ended. The Manager closes when the test ends.
func (f *fixture) jobOn(st history.Store) JobDone {
	f.t.Helper()
	done := make(chan JobDone, 4) // Start's re-derivation may trigger the job too: a rerun
	m, err := New(Config{Store: st, Tenants: staticTenants{f.set}, OnJobDone: func(d JobDone) { done <- d }})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { m.Close() })
	_ = m.Start(context.Background()) // the wrapped store cannot list: nothing re-derived
	m.Trigger("acme", history.Key{Tenant: "acme", Conversation: "c"}, "gpt-4o", "", false)
	select {
	case d := <-done:
		return d
	case <-time.After(10 * time.Second):
		f.t.Fatal("job did not run")
	}
	return JobDone{}
}

func TestStartRederivesJobsFromTheStore(t *testing.T) {
	f := newFixture(t, nil)
	word := func(i int) string { return fmt.Sprintf("fact %d", i) }
	f.write("long", 1, 6, word)  // 6 turns > trigger 4: needs a summary
	f.write("short", 1, 3, word) // 3 turns: does not
	st := &listing{Store: f.store, convs: []string{"long", "short"}}
	done := make(chan JobDone, 8)
	m, err := New(Config{Store: st, Tenants: staticTenants{f.set}, OnJobDone: func(d JobDone) { done <- d }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-done:
		if d.Key.Conversation != "long" || d.Outcome != Landed {
			t.Fatalf("job %+v, want long landed", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no job re-derived")
	}
	if got := f.meta("long").Summary; got == nil || got.Turns != 5 || got.Text != "fact 1; fact 2; fact 3; fact 4; fact 5" {
		t.Errorf("summary %+v, want turns 1-5 covered", got)
	}
	if f.meta("short").Summary != nil || len(f.up.SummaryCalls()) != 1 {
		t.Errorf("short got a summary or more than one call was made (%d)", len(f.up.SummaryCalls()))
	}
	call := f.up.SummaryCalls()[0]
	if got := call.Header.Get("Authorization"); got != "Bearer sk-upstream" {
		t.Errorf("summariser call authorised with %q, want the tenant's upstream key", got)
	}
	if call.Model != "gpt-4o" {
		t.Errorf("summariser model %q, want the conversation's", call.Model)
	}
}

func TestLargeMaterialIsSummarisedInChunks(t *testing.T) {
	f := newFixture(t, func(p *config.Policy) {
		p.Summary.Model = "small-model"
		p.Summary.MaxTokens = 100
		p.History.ModelWindows = map[string]int{"small-model": 1200}
	})
	long := strings.Repeat("lorem ipsum dolor sit amet ", 40) // ~200 tokens a turn
	f.answer = func(i int) string { return long }
	f.write("big", 1, 9, func(i int) string { return fmt.Sprintf("item %d", i) })
	m := f.manager()
	meta, err := m.Summarize(context.Background(), history.Key{Tenant: "acme", Conversation: "big"})
	if err != nil {
		t.Fatal(err)
	}
	calls := f.up.SummaryCalls()
	if len(calls) < 2 {
		t.Fatalf("got %d summariser calls, want the 8 turns split in chunks", len(calls))
	}
	counter := &tokens.Counter{}
	for i, c := range calls {
		user := string(c.Messages[1])
		if n := counter.Text(tokens.O200k, user); n > 1200-100 {
			t.Errorf("call %d sends %d tokens, over the window", i, n)
		}
		if i > 0 && !strings.Contains(user, "Previous summary:") {
			t.Errorf("chunk %d does not carry the summary so far", i)
		}
	}
	if meta.Summary == nil || meta.Summary.Turns != 8 || meta.Summary.Text != "item 1; item 2; item 3; item 4; item 5; item 6; item 7; item 8" {
		t.Errorf("summary %+v, want turns 1-8 folded", meta.Summary)
	}
	if meta.SummaryPromptTokens == 0 || meta.Summaries != 1 {
		t.Errorf("usage not recorded: %d prompt tokens, %d summaries", meta.SummaryPromptTokens, meta.Summaries)
	}
}

func TestTranscriptAbbreviatesToolResultsAndShowsCalls(t *testing.T) {
	msgs := []history.Message{
		{Turn: 1, Role: "user", Raw: []byte(`{"role":"user","content":[{"type":"text","text":"weather?"},{"type":"image_url","image_url":{"url":"x"}}]}`)},
		{Turn: 1, Role: "assistant", Raw: []byte(`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]}`)},
		{Turn: 1, Role: "tool", Raw: []byte(`{"role":"tool","tool_call_id":"c1","content":"` + strings.Repeat("x", 2000) + `"}`)},
		{Turn: 1, Role: "assistant", Raw: []byte(`{"role":"assistant","content":"cold"}`)},
	}
	got := userContent("earlier", turns(msgs))
	for _, want := range []string{
		"Previous summary:\nearlier\n\n",
		"user: weather?\n[image]\n",
		`assistant called get_weather({"city":"Oslo"}) [c1]`,
		"tool result (c1): xxx",
		"[…1400 more characters]",
		"assistant: cold\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("transcript lacks %q:\n%s", want, got)
		}
	}
}

func TestBackoffIsCappedAtAMinute(t *testing.T) {
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute, time.Minute, time.Minute}
	for i, w := range want {
		if got := backoff(i + 1); got != w {
			t.Errorf("backoff(%d) = %v, want %v", i+1, got, w)
		}
	}
}

func TestParseAnswerTitles(t *testing.T) {
	for _, tc := range []struct {
		name, answer, title, text string
	}{
		{"title", "Title: Planning a Trip to Lisbon\n\nnotes", "Planning a Trip to Lisbon", "notes"},
		{"quoted and long", "Title: \"One two three four five six seven eight nine\"\nnotes", "One two three four five six seven eight", "notes"},
		{"no title line", "just notes", "", "just notes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			title, text := parseAnswer(tc.answer, true)
			if title != tc.title || text != tc.text {
				t.Errorf("got %q, %q, want %q, %q", title, text, tc.title, tc.text)
			}
		})
	}
}

// leaser is a store whose lease on every name is held elsewhere.
type leaser struct {
	history.Store
	mu    sync.Mutex
	names []string
}

func (l *leaser) Acquire(ctx context.Context, name string) (func(), error) { return func() {}, nil }
func (l *leaser) TryAcquire(ctx context.Context, name string) (func(), bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.names = append(l.names, name)
	return nil, false, nil
}

func TestJobSkipsWhenAnotherProcessHoldsTheLease(t *testing.T) {
	f := newFixture(t, nil)
	f.write("c", 1, 6, func(i int) string { return fmt.Sprint("t", i) })
	st := &leaser{Store: f.store}
	if d := f.jobOn(st); d.Outcome != Skipped {
		t.Fatalf("job %+v, want skipped", d)
	}
	if len(f.up.SummaryCalls()) != 0 || f.meta("c").Summary != nil {
		t.Error("a job ran without the lease")
	}
	st.mu.Lock()
	names := slices.Clone(st.names)
	st.mu.Unlock()
	if want := "summary/acme/c"; len(names) == 0 || slices.ContainsFunc(names, func(n string) bool { return n != want }) {
		t.Errorf("leases asked %q, want only %s", names, want)
	}
}

func TestATriggerDuringAJobRunsItAgainAfter(t *testing.T) {
	f := newFixture(t, nil) // trigger 4, keep 1
	word := func(i int) string { return fmt.Sprint("fact ", i) }
	f.write("c", 1, 6, word)
	done := make(chan JobDone, 8)
	m, err := New(Config{Store: f.store, Tenants: staticTenants{f.set}, OnJobDone: func(d JobDone) { done <- d }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	// The first job's call is held whichever starts it: Start, when the
	// store already lists c, or the Trigger after it (with the reply
	// queued after Start, a job Start began could take the answer first).
	f.up.EnqueueSummary(upstreamtest.Reply{Hold: true})
	_ = m.Start(context.Background())
	k := history.Key{Tenant: "acme", Conversation: "c"}
	m.Trigger("acme", k, "gpt-4o", "", false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.up.WaitStalled(ctx, 1); err != nil {
		t.Fatal(err)
	}
	f.write("c", 7, 5, word) // turns arrive while the job runs
	m.Trigger("acme", k, "gpt-4o", "", false)
	if n := m.Pending(); n != 1 {
		t.Errorf("%d jobs for one conversation, want 1", n)
	}
	f.up.Release()
	for i := range 2 {
		select {
		case d := <-done:
			if d.Outcome != Landed {
				t.Fatalf("run %d: %+v, want landed", i+1, d)
			}
		case <-ctx.Done():
			t.Fatal("the job did not run again")
		}
	}
	calls := f.up.SummaryCalls()
	if len(calls) != 2 || !strings.Contains(string(calls[1].Messages[1]), "Previous summary:") {
		t.Fatalf("got %d calls, want 2, the second from the first's summary", len(calls))
	}
	if s := f.meta("c").Summary; s == nil || s.Turns != 10 {
		t.Errorf("summary %+v, want 10 of 11 turns covered", s)
	}
}

// commits is a store that keeps the changes committed through it.
type commits struct {
	history.Store
	mu      sync.Mutex
	changes []history.Change
}

func (c *commits) Commit(ctx context.Context, k history.Key, ch history.Change) (history.Meta, error) {
	c.mu.Lock()
	c.changes = append(c.changes, ch)
	c.mu.Unlock()
	return c.Store.Commit(ctx, k, ch)
}

// TestJobLandsOnTheMetadataItRead: a job's summary names the metadata
// the job read as its Base (and its Version), so that a store can land it
// in one write while the conversation's head is still that one.
func TestJobLandsOnTheMetadataItRead(t *testing.T) {
	f := newFixture(t, nil)
	f.write("c", 1, 6, func(i int) string { return fmt.Sprint("t", i) })
	before := f.meta("c")
	st := &commits{Store: f.store}
	if d := f.jobOn(st); d.Outcome != Landed {
		t.Fatalf("job %+v, want landed", d)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.changes) != 1 || st.changes[0].Summary == nil {
		t.Fatalf("commits %+v, want one summary", st.changes)
	}
	c := st.changes[0]
	if c.Base == nil || c.Version != c.Base.Version || history.HeadOf(c.Base) != history.HeadOf(&before) {
		t.Fatalf("summary's Base %+v, Version %d; want the metadata read, head %+v", c.Base, c.Version, history.HeadOf(&before))
	}
}

// BenchmarkUserContent renders the transcript of ten turns of prose, as
// a summariser call of the load script's conversations does.
func BenchmarkUserContent(b *testing.B) {
	var msgs []history.Message
	text := strings.Repeat("The quarterly report covers revenue, churn and the new pricing. ", 9)
	for i := uint32(1); i <= 10; i++ {
		msgs = append(msgs,
			history.Message{Turn: i, Role: "user", Raw: []byte(`{"role":"user","content":"` + text + `"}`)},
			history.Message{Turn: i, Role: "assistant", Raw: []byte(`{"role":"assistant","content":"` + text + `"}`)})
	}
	ts := turns(msgs)
	previous := strings.Repeat("Earlier the user asked about the board meeting. ", 20)
	b.ReportAllocs()
	for b.Loop() {
		if s := userContent(previous, ts); len(s) < len(text)*20 {
			b.Fatalf("transcript of %d bytes", len(s))
		}
	}
}
