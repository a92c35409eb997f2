package plan_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/store/pgstore"
)

// TestRestartedAgentWithSummary runs an agent that starts every process
// with the same opening message and then resends its process's whole
// conversation, over a conversation whose summary covers the earlier
// processes: a later process's resend begins with the conversation's
// first message but holds only its own turns. Nothing is superseded, and
// only the newest message of each request is stored: the opening message,
// a preamble (a user message follows it), is stored once and sent first
// in every context, once, though the summary covers it.
// It runs on Badger and on PostgreSQL: the stored preamble is read with
// the store's Messages when the tail stops at the summary.
func TestRestartedAgentWithSummary(t *testing.T) {
	t.Run("badger", func(t *testing.T) {
		restartedAgentWithSummary(t, memStore(t))
	})
	t.Run("postgres", func(t *testing.T) {
		st, err := pgstore.Open(context.Background(), pgtest.DB(t), pgstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		restartedAgentWithSummary(t, st)
	})
}

func restartedAgentWithSummary(t *testing.T, st history.Store) {
	ctx := context.Background()
	k := history.Key{Tenant: "t", Conversation: "agent"}
	pol := plan.Policy{Mode: history.Auto, Budget: 100000}
	opening := user("environment: /work, linux")
	asst := func(text string) history.Message {
		return msg(`{"role":"assistant","content":` + strconv.Quote(text) + `}`)
	}
	step := 0
	send := func(in []history.Message, answer history.Message) *plan.Plan {
		t.Helper()
		step++
		p, err := plan.Make(ctx, plan.Input{Store: st, Key: k, Policy: pol, Model: "m", New: in, Counter: lenCounter{}, Now: time.Unix(0, int64(step))})
		if err != nil {
			t.Fatalf("request %d: %v", step, err)
		}
		answer.Tokens = lenCounter{}.Message("", answer.Raw)
		if _, err := st.Commit(ctx, k, history.Change{Version: p.Version, Supersede: p.Supersede,
			Append: append(slices.Clone(p.Fresh), answer), Cut: p.Cut, Now: int64(step)}); err != nil {
			t.Fatalf("request %d: commit: %v", step, err)
		}
		return p
	}

	// Process A: two requests, the second a full resend.
	qa1, aa1, qa2 := user("A: first task"), asst("A: done first"), user("A: second task")
	send([]history.Message{opening, qa1}, aa1)
	send([]history.Message{opening, qa1, aa1, qa2}, asst("A: done second"))
	if !land(t, st, k, 1) {
		t.Fatal("no summary landed")
	}

	// Process B starts with the same opening message: new, not an edit.
	qb1, ab1 := user("B: what did A do?"), asst("B: A did two tasks")
	p := send([]history.Message{opening, qb1}, ab1)
	if p.Supersede != nil || len(p.Fresh) != 1 || p.Fresh[0].Hash != qb1.Hash {
		t.Fatalf("restart: got supersede %+v and %d new, want none and 1 (the preamble is stored)", p.Supersede, len(p.Fresh))
	}
	sentOnce(t, "restart", p, opening)
	if !land(t, st, k, 1) {
		t.Fatal("no summary landed after the restart")
	}

	// Process B resends its own turns: more than the tail after the
	// summary holds, from the conversation's first message.
	qb2 := user("B: and now?")
	p = send([]history.Message{opening, qb1, ab1, qb2}, asst("B: now this"))
	if p.Supersede != nil {
		t.Errorf("resend: got supersede %+v, want none", p.Supersede)
	}
	if len(p.Fresh) != 1 || p.Fresh[0].Hash != qb2.Hash {
		t.Errorf("resend: got %d new messages, want only %q", len(p.Fresh), qb2.Raw)
	}
	if p.Summary == nil {
		t.Error("resend: got no summary, want the one landed")
	}
	sentOnce(t, "resend", p, opening)

	var active []string
	err := st.Messages(ctx, k, 0, false, func(m history.Message) bool { active = append(active, string(m.Raw)); return true })
	if err != nil {
		t.Fatal(err)
	}
	if len(active) != 9 {
		t.Errorf("got %d active messages, want 9 (the preamble, 4 of process A's, 4 of B's): %q", len(active), active)
	}
}

// sentOnce checks that p sends pre once, first after the instructions
// and the summary.
func sentOnce(t *testing.T, what string, p *plan.Plan, pre history.Message) {
	t.Helper()
	at, n := -1, 0
	for i, m := range p.Messages {
		if m.Kind != plan.Instruction && m.Kind != plan.SummaryMessage && at < 0 {
			at = i
		}
		if string(m.Raw) == string(pre.Raw) {
			n++
			if i != at {
				t.Errorf("%s: the preamble is message %d of the plan, want %d (first after the summary)", what, i, at)
			}
		}
	}
	if n != 1 {
		t.Errorf("%s: the preamble is sent %d times, want once", what, n)
	}
}

// An agent's preamble outlives the budget: when old turns are dropped and
// the cache-stable cut passes the stored preamble, a later process's
// identical one is still not stored again, and every request sends the
// stored one once, first, counted in the prompt's estimate.
func TestPreambleOutlivesTheBudget(t *testing.T) {
	ctx := context.Background()
	st := memStore(t)
	k := history.Key{Tenant: "t", Conversation: "budget"}
	pol := plan.Policy{Mode: history.Auto, Budget: 120}
	opening := user("<environment_context>/work, linux</environment_context>")
	cut := false
	for i := 1; i <= 8; i++ {
		q := user(strconv.Itoa(i) + ": a question long enough to fill the budget in a few turns")
		p, err := plan.Make(ctx, plan.Input{Store: st, Key: k, Policy: pol, Model: "m", New: []history.Message{opening, q}, Counter: lenCounter{}, Now: time.Unix(0, int64(i))})
		if err != nil {
			t.Fatalf("process %d: %v", i, err)
		}
		if i > 1 {
			sentOnce(t, "process "+strconv.Itoa(i), p, opening)
			if len(p.Fresh) != 1 {
				t.Errorf("process %d: got %d new messages, want 1 (the preamble is stored)", i, len(p.Fresh))
			}
		}
		sum := 0
		for _, m := range p.Messages {
			sum += m.Tokens
		}
		if p.Report.Tokens < sum {
			t.Errorf("process %d: got a prompt estimate of %d, want at least the %d its messages hold", i, p.Report.Tokens, sum)
		}
		cut = cut || p.Meta.Cut > 1
		answer := msg(`{"role":"assistant","content":"done ` + strconv.Itoa(i) + `"}`)
		answer.Tokens = lenCounter{}.Message("", answer.Raw)
		if _, err := st.Commit(ctx, k, history.Change{Version: p.Version, Supersede: p.Supersede,
			Append: append(slices.Clone(p.Fresh), answer), Cut: p.Cut, Now: int64(i)}); err != nil {
			t.Fatalf("process %d: commit: %v", i, err)
		}
	}
	if !cut {
		t.Fatal("the cut never passed the preamble: the budget is too large for the test")
	}
	n := 0
	err := st.Messages(ctx, k, 0, false, func(m history.Message) bool {
		if m.Hash == opening.Hash {
			n++
		}
		return true
	})
	if err != nil || n != 1 {
		t.Errorf("stored the preamble %d times (%v), want once", n, err)
	}
}
