package summary

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/tokens"
)

// importTurns commits n turns ("item <i>: …" and an answer) to conv in
// batches, as an import does.
func (f *fixture) importTurns(conv string, n int) {
	f.t.Helper()
	k := history.Key{Tenant: "acme", Conversation: conv}
	ctx := context.Background()
	version := f.meta(conv).Version
	for from := 1; from <= n; from += 500 {
		var msgs []history.Message
		for i := from; i < min(from+500, n+1); i++ {
			u := fmt.Appendf(nil, `{"role":"user","content":"item %d: where is part %d of the order?"}`, i, i)
			a := fmt.Appendf(nil, `{"role":"assistant","content":"Part %d ships from depot %d."}`, i, i%17)
			msgs = append(msgs,
				history.Message{Role: "user", Raw: u, Hash: chat.Hash(u), Tokens: 14},
				history.Message{Role: "assistant", Raw: a, Hash: chat.Hash(a), Tokens: 12})
		}
		meta, err := f.store.Commit(ctx, k, history.Change{Version: version, Model: "gpt-4o", Append: msgs})
		if err != nil {
			f.t.Fatal(err)
		}
		version = meta.Version
	}
}

// smallWindow is a summary model of a 4,000-token window with 200-token
// summaries, so that a few thousand turns take many chunks.
func smallWindow(calls int) func(*config.Policy) {
	return func(p *config.Policy) {
		p.Summary.Model = "small-model"
		p.Summary.MaxTokens = 200
		p.Summary.MaxCallsPerJob = calls
		p.History.ModelWindows = map[string]int{"small-model": 4000}
	}
}

// transcriptTokens is what the job's chunks carry for conv's turns after
// the stored summary but the newest keep: the transcript's tokens.
func transcriptTokens(t *testing.T, f *fixture, m *Manager, conv string, keep int) int {
	t.Helper()
	var msgs []history.Message
	var after uint64
	if s := f.meta(conv).Summary; s != nil {
		after = s.Through
	}
	err := f.store.Messages(context.Background(), history.Key{Tenant: "acme", Conversation: conv}, after, false, func(msg history.Message) bool {
		msgs = append(msgs, msg)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := turns(msgs)
	n := 0
	for _, tr := range ts[:len(ts)-keep] {
		n += m.turnTokens(tokens.O200k, tr)
	}
	return n
}

// summariserModes are the fake summariser's two ways of answering: within
// max_completion_tokens, and running on past it (every item it was ever
// given).
var summariserModes = []struct {
	name string
	opts []upstreamtest.Option
}{
	{"within_limit", nil},
	{"runs_on", []upstreamtest.Option{upstreamtest.WithUnboundedSummaries()}},
}

// A job's calls are linear in its transcript, whatever the summariser
// answers: a summariser that runs on past max_completion_tokens (every
// item it was ever given) does not make the summary, and so every call,
// grow with the conversation.
func TestSummaryCallsAreLinearInTheTranscript(t *testing.T) {
	for _, tc := range summariserModes {
		t.Run(tc.name, func(t *testing.T) {
			const turnsN, window, maxTokens = 3000, 4000, 200
			f := newFixture(t, smallWindow(1000), tc.opts...)
			f.importTurns("big", turnsN)
			m := f.manager()
			counter := &tokens.Counter{}
			total := transcriptTokens(t, f, m, "big", 1)
			system := counter.Text(tokens.O200k, DefaultPrompt)
			chunk := window - system - 64 - 2*maxTokens // the window less instructions, summary share and answer
			meta, err := m.Summarize(context.Background(), history.Key{Tenant: "acme", Conversation: "big"})
			if err != nil {
				t.Fatal(err)
			}
			calls := f.up.SummaryCalls()
			if limit := (total+chunk-1)/chunk + 2; len(calls) > limit {
				t.Errorf("got %d summariser calls for %d transcript tokens, want at most %d (chunks of %d)", len(calls), total, limit, chunk)
			}
			for i, c := range calls {
				if sent := sentTokens(counter, c); sent > window-maxTokens {
					t.Fatalf("call %d sends %d tokens, want at most %d (the window less the answer)", i, sent, window-maxTokens)
				}
				if got := gjson.GetBytes(c.Body, "max_completion_tokens").Int(); got != maxTokens || gjson.GetBytes(c.Body, "max_tokens").Exists() {
					t.Fatalf("call %d asks max_completion_tokens %d (max_tokens set: %v), want %d and no max_tokens",
						i, got, gjson.GetBytes(c.Body, "max_tokens").Exists(), maxTokens)
				}
			}
			if s := meta.Summary; s == nil || s.Turns != turnsN-1 || s.Tokens > maxTokens {
				t.Errorf("summary %+v, want %d turns covered in at most %d tokens", s, turnsN-1, maxTokens)
			}
			t.Logf("%d turns, %d transcript tokens: %d calls", turnsN, total, len(calls))
		})
	}
}

// sentTokens is what a summariser call sends: its messages' tokens.
func sentTokens(counter *tokens.Counter, c upstreamtest.Received) int {
	n := 0
	for _, msg := range c.Messages {
		n += counter.Message(tokens.O200k, msg)
	}
	return n
}

// userLines returns the "item <i>" of every user line of the transcripts
// the calls carried, in order.
func userLines(calls []upstreamtest.Received) []string {
	var out []string
	for _, c := range calls {
		user := gjson.ParseBytes(c.Messages[1]).Get("content").Str
		_, transcript, _ := strings.Cut(user, "Transcript of the turns to add:\n")
		for line := range strings.Lines(transcript) {
			if rest, ok := strings.CutPrefix(line, "user: "); ok {
				item, _, _ := strings.Cut(rest, ":")
				out = append(out, item)
			}
		}
	}
	return out
}

// A job stops at summary.max_calls_per_job: it lands the summary of the
// chunks it folded, and the next job goes on from there, so every turn is
// folded exactly once and none is lost.
func TestJobStopsAtMaxCallsAndTheNextGoesOn(t *testing.T) {
	const turnsN, maxCalls = 1000, 3
	f := newFixture(t, smallWindow(maxCalls), upstreamtest.WithUnboundedSummaries())
	f.importTurns("big", turnsN)
	var done []JobDone
	m, err := New(Config{Store: f.store, Tenants: staticTenants{f.set}, OnJobDone: func(d JobDone) { done = append(done, d) }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	k := history.Key{Tenant: "acme", Conversation: "big"}
	covered := 0
	for job := 1; covered < turnsN-1; job++ {
		if job > 20 {
			t.Fatalf("%d turns covered after 20 jobs, want %d", covered, turnsN-1)
		}
		meta, err := m.Summarize(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		d := done[len(done)-1]
		if d.Outcome != Landed || d.Calls > maxCalls {
			t.Fatalf("job %d: %+v, want landed within %d calls", job, d, maxCalls)
		}
		s := meta.Summary
		if s == nil || s.Turns <= covered || s.Tokens > 200 {
			t.Fatalf("job %d: summary %+v, want more than %d turns covered in at most 200 tokens", job, s, covered)
		}
		if job == 1 && s.Turns >= turnsN-1 {
			t.Fatalf("the first job covered all %d turns: the cap was not reached, make the conversation longer", s.Turns)
		}
		covered = s.Turns
	}
	lines := userLines(f.up.SummaryCalls())
	if len(lines) != turnsN-1 {
		t.Fatalf("the calls carried %d turns, want each of %d once", len(lines), turnsN-1)
	}
	for i, item := range lines {
		if want := fmt.Sprint("item ", i+1); item != want {
			t.Fatalf("turn %d of the transcripts is %q, want %q", i+1, item, want)
		}
	}
}

// A sealed episode whose fold reaches the call cap is titled by the job
// that finishes it, not before.
func TestCappedFoldTitlesTheEpisodeWhenItEnds(t *testing.T) {
	f := newFixture(t, smallWindow(2), upstreamtest.WithUnboundedSummaries())
	f.importTurns("ep", 600)
	m := f.manager()
	k := history.Key{Tenant: "acme", Conversation: "ep"}
	meta, err := m.End(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(meta.Episodes); n != 1 || meta.Episodes[0].Title != "" || meta.Summary == nil || meta.Summary.Turns >= 600 {
		t.Fatalf("after a capped fold: episodes %+v, summary %+v, want one untitled episode partly folded", meta.Episodes, meta.Summary)
	}
	for range 20 {
		if meta.Summary.Turns == 600 {
			break
		}
		if meta, err = m.Summarize(context.Background(), k); err != nil {
			t.Fatal(err)
		}
	}
	if meta.Summary.Turns != 600 || meta.Episodes[0].Title == "" {
		t.Errorf("after the fold went on: summary %+v, episodes %+v, want all 600 turns folded and the episode titled", meta.Summary, meta.Episodes)
	}
}
