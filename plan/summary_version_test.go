package plan_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/tokens"
)

// The summary's message is escaped once per version of the summary and
// reused while it stays (package plan keeps it): a summary changed,
// erased, or landed in a conversation deleted and made again under the
// same id is never served as the copy made of the one before. The
// summaries here have the same length and cover the same turns, so that
// where they cover the same turns only their version tells them apart.
func TestChangedOrErasedSummaryIsNeverServedStale(t *testing.T) {
	for _, cached := range []bool{false, true} {
		name := "store"
		if cached {
			name = "window cache"
		}
		t.Run(name, func(t *testing.T) {
			st := openStore(t, cached)
			k := history.Key{Tenant: "t", Conversation: "stale-" + name}
			meta := sixTurns(t, st, k)
			meta = landSummary(t, st, k, meta, 0, 4, "The user is Ada.")
			first := wantSummary(t, st, k, "The user is Ada.")
			if again := wantSummary(t, st, k, "The user is Ada."); &again[0] != &first[0] {
				t.Error("an unchanged summary was escaped again, want its message reused")
			}

			// A hard forget of a covered message erases the summary; the
			// next covers the same turns, as the first did.
			f := history.PlanForget(active(t, st, k), []uint64{1}, true)
			meta, err := st.Commit(context.Background(), k, history.Change{Version: meta.Version, Forget: f})
			if err != nil {
				t.Fatal(err)
			}
			wantSummary(t, st, k, "")
			meta = landSummary(t, st, k, meta, 0, 4, "The user is Eve.")
			wantSummary(t, st, k, "The user is Eve.")

			// Changed: a newer summary covers more.
			landSummary(t, st, k, meta, 4, 6, "The user is Bob.")
			wantSummary(t, st, k, "The user is Bob.")

			// Deleted and made again: the first summary of the new
			// conversation counts as the first of the old one did.
			k2 := history.Key{Tenant: "t", Conversation: "again-" + name}
			landSummary(t, st, k2, sixTurns(t, st, k2), 0, 4, "The user is Ada.")
			wantSummary(t, st, k2, "The user is Ada.")
			if err := st.Delete(context.Background(), k2); err != nil {
				t.Fatal(err)
			}
			landSummary(t, st, k2, sixTurns(t, st, k2), 0, 4, "The user is Zed.")
			wantSummary(t, st, k2, "The user is Zed.")
		})
	}
}

func openStore(t *testing.T, cached bool) history.Store {
	t.Helper()
	bs := diskStore(t)
	if cached {
		return history.NewCache(bs, 1<<20, 1<<20)
	}
	return bs
}

// sixTurns stores six turns of user and assistant text as conversation k.
func sixTurns(t *testing.T, st history.Store, k history.Key) history.Meta {
	t.Helper()
	var msgs []history.Message
	for i := range 6 {
		msgs = append(msgs, user("question "+strings.Repeat("q", i)), msg(`{"role":"assistant","content":"an answer"}`))
	}
	for i := range msgs {
		msgs[i].Tokens = (&tokens.Counter{}).Message(tokens.O200k, msgs[i].Raw)
	}
	meta, err := st.Commit(context.Background(), k, history.Change{Append: msgs})
	if err != nil {
		t.Fatal(err)
	}
	return meta
}

// landSummary lands a summary of text covering the messages through
// seq through, made from the summary covering base (0: none).
func landSummary(t *testing.T, st history.Store, k history.Key, meta history.Meta, base, through uint64, text string) history.Meta {
	t.Helper()
	sc := &history.SummaryChange{Base: base, Incarnation: meta.Incarnation, Epoch: meta.Epoch,
		Summary: history.Summary{Text: text, Through: through, Turns: int(through / 2), Tokens: 10}}
	meta, err := st.Commit(context.Background(), k, history.Change{Version: meta.Version, Summary: sc})
	if err != nil {
		t.Fatalf("land %q: %v", text, err)
	}
	return meta
}

func active(t *testing.T, st history.Store, k history.Key) []history.Message {
	t.Helper()
	var msgs []history.Message
	if err := st.Messages(context.Background(), k, 0, false, func(m history.Message) bool {
		msgs = append(msgs, m)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return msgs
}

// wantSummary plans the next request of k and checks the summary it
// injects: text, or none when text is "". It returns the summary's
// message.
func wantSummary(t *testing.T, st history.Store, k history.Key, text string) (raw []byte) {
	t.Helper()
	p, err := plan.Make(context.Background(), plan.Input{
		Store: st, Key: k, Model: "gpt-4o", Now: time.Now(),
		Policy:       plan.Policy{Mode: history.Auto, Budget: 16000},
		Instructions: []history.Message{msg(`{"role":"developer","content":"be brief"}`)},
		New:          []history.Message{user("and now?")},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := ""
	for _, m := range p.Messages {
		if m.Kind == plan.SummaryMessage {
			if role := gjson.GetBytes(m.Raw, "role").Str; role != "developer" {
				t.Errorf("got summary role %q, want developer", role)
			}
			got, raw = strings.TrimPrefix(gjson.GetBytes(m.Raw, "content").Str, plan.SummaryPrefix), m.Raw
		}
	}
	if got != text {
		t.Errorf("got summary %q injected, want %q", got, text)
	}
	return raw
}
