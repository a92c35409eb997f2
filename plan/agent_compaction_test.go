package plan_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/thread"
)

// restartText opens Claude Code's context restarted from its own summary.
const restartText = "This session is being continued from a previous conversation that ran out of context. Summary: "

// agentDay is an agent's conversation on a real Badger store, one request
// at a time: each planned as the proxy plans an agent's turn (its thread
// read, tools sent), committed with its answer.
type agentDay struct {
	t    *testing.T
	st   history.Store
	k    history.Key
	pol  plan.Policy
	step int
}

func newAgentDay(t *testing.T, budget int) *agentDay {
	t.Helper()
	st := memStore(t)
	return &agentDay{t: t, st: st, k: history.Key{Tenant: "t", Conversation: "day"}, pol: plan.Policy{Mode: history.Auto, Budget: budget}}
}

// send plans in, checks that it fits what the upstream accepts, and
// commits it with answer; it returns the plan.
func (d *agentDay) send(in []history.Message, answer history.Message) *plan.Plan {
	d.t.Helper()
	d.step++
	p, err := plan.Make(context.Background(), plan.Input{Store: d.st, Key: d.k, Policy: d.pol, Model: "m", New: in,
		Counter: lenCounter{}, Now: time.Unix(0, int64(d.step)), Thread: &thread.Request{Tools: true, Last: in[len(in)-1].Raw}})
	if err != nil {
		d.t.Fatalf("request %d: %v", d.step, err)
	}
	answer.Tokens = lenCounter{}.Message("", answer.Raw)
	if _, err := d.st.Commit(context.Background(), d.k, history.Change{Version: p.Version, Supersede: p.Supersede,
		Append: append(slices.Clone(p.Fresh), answer), Cut: p.Cut, Now: int64(d.step)}); err != nil {
		d.t.Fatalf("request %d: commit: %v", d.step, err)
	}
	return p
}

// active is the texts of the conversation's active messages, in order.
func (d *agentDay) active() []string {
	d.t.Helper()
	var out []string
	err := d.st.Messages(context.Background(), d.k, 0, false, func(m history.Message) bool {
		out = append(out, texts(m.Raw))
		return true
	})
	if err != nil {
		d.t.Fatal(err)
	}
	return out
}

// texts is a chat message's text, or its tool call's id.
func texts(raw []byte) string {
	if id := gjson.GetBytes(raw, "tool_calls.0.id"); id.Exists() {
		return "call " + id.Str
	}
	return gjson.GetBytes(raw, "content").Str
}

// sent is the texts of the messages p sends of kind k.
func sent(p *plan.Plan, k plan.Kind) []string {
	var out []string
	for _, m := range p.Messages {
		if m.Kind == k {
			out = append(out, texts(m.Raw))
		}
	}
	return out
}

func asst(text string) history.Message {
	return msg(`{"role":"assistant","content":` + strconv.Quote(text) + `}`)
}

func toolCall(id string) history.Message {
	return msg(`{"role":"assistant","content":null,"tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"read","arguments":"{}"}}]}`)
}

func toolResult(id, text string) history.Message {
	return msg(`{"role":"tool","tool_call_id":"` + id + `","content":` + strconv.Quote(text) + `}`)
}

// TestRestartKeepsTheTurnsItsSummaryNeverSaw: an agent that holds only
// its own context (a process per session, each given the earlier ones'
// turns by Recall) compacts a session and restarts from its own summary.
// The summary replaced that session's stored turns, and only those: the
// earlier processes' turns stay history, sent with the restart and every
// request after it; the next compaction, of the restarted context,
// replaces that context from its restart on.
func TestRestartKeepsTheTurnsItsSummaryNeverSaw(t *testing.T) {
	d := newAgentDay(t, 100000)
	u1, a1, u2, a2 := user("p1: note w01"), asst("a1"), user("p2: note w02"), asst("a2")
	d.send([]history.Message{u1}, a1)
	if p := d.send([]history.Message{u2}, a2); !slices.Equal(sent(p, plan.History), []string{"p1: note w01", "a1"}) {
		t.Fatalf("process 2 got history %q, want process 1's turn", sent(p, plan.History))
	}
	// Process 3, a session with a tool round, which the agent compacts.
	u3, call, result, a3 := user("p3: read notes"), toolCall("c3"), toolResult("c3", "the notes"), asst("a3")
	d.send([]history.Message{u3}, call)
	d.send([]history.Message{u3, call, result}, a3)

	// The restart: the agent's summary of process 3's session, its last
	// answer, the next prompt.
	r1, u4, a4 := user(restartText+"the user asked p3"), user("p4: note w04"), asst("a4")
	p := d.send([]history.Message{r1, a3, u4}, a4)
	if p.Supersede == nil || p.Supersede.Seq != 4 {
		t.Errorf("restart: got supersede %+v, want after seq 4 (process 2's answer)", p.Supersede)
	}
	if got, want := sent(p, plan.History), []string{"p1: note w01", "a1", "p2: note w02", "a2"}; !slices.Equal(got, want) {
		t.Errorf("restart: got history %q, want %q (the turns before the compacted session)", got, want)
	}
	if got, want := sent(p, plan.New), []string{r1Text(), "a3", "p4: note w04"}; !slices.Equal(got, want) {
		t.Errorf("restart: got new %q, want %q", got, want)
	}
	want := []string{"p1: note w01", "a1", "p2: note w02", "a2", r1Text(), "a3", "p4: note w04", "a4"}
	if got := d.active(); !slices.Equal(got, want) {
		t.Errorf("stored after the restart: %q, want %q", got, want)
	}

	// The restarted context's next request resends it from the restart.
	u5, a5 := user("p5: note w05"), asst("a5")
	p = d.send([]history.Message{r1, a3, u4, a4, u5}, a5)
	if p.Supersede != nil || len(p.Fresh) != 1 || texts(p.Fresh[0].Raw) != "p5: note w05" {
		t.Errorf("in the restarted context: got supersede %+v and %d new, want none and the prompt", p.Supersede, len(p.Fresh))
	}
	if got := sent(p, plan.History); len(got) == 0 || got[0] != "p1: note w01" {
		t.Errorf("in the restarted context: got history %q, want it from process 1's turn", got)
	}

	// The agent compacts the restarted context: its summary replaces the
	// context from the first restart on.
	r2, u6, a6 := user(restartText+"the user asked p3 to p5"), user("p6: note w06"), asst("a6")
	p = d.send([]history.Message{r2, u6}, a6)
	if p.Supersede == nil || p.Supersede.Seq != 4 {
		t.Errorf("second restart: got supersede %+v, want after seq 4", p.Supersede)
	}
	want = []string{"p1: note w01", "a1", "p2: note w02", "a2", restartText + "the user asked p3 to p5", "p6: note w06", "a6"}
	if got := d.active(); !slices.Equal(got, want) {
		t.Errorf("stored after the second restart: %q, want %q", got, want)
	}
}

func r1Text() string { return restartText + "the user asked p3" }

// TestRestartWithoutKnownStart: where the restarted context began is not
// known (a conversation stored before Recall kept it: no commit carried
// history.Opening), the restart's summary is taken to replace everything
// stored, as X-Recall-History: sync takes it.
func TestRestartWithoutKnownStart(t *testing.T) {
	d := newAgentDay(t, 100000)
	old := []history.Message{user("p1"), asst("a1"), user("p2"), asst("a2")}
	for i := range old {
		old[i].Tokens = lenCounter{}.Message("", old[i].Raw)
	}
	if _, err := d.st.Commit(context.Background(), d.k, history.Change{Append: old, Now: 1}); err != nil {
		t.Fatal(err)
	}
	p := d.send([]history.Message{user(restartText + "p2"), user("p3")}, asst("a3"))
	if p.Supersede == nil || p.Supersede.Seq != 0 {
		t.Errorf("got supersede %+v, want all of it", p.Supersede)
	}
	if got := sent(p, plan.History); len(got) != 0 {
		t.Errorf("got history %q, want none", got)
	}
}

// TestRestartReadsPastALongSession: the compacted session's own messages
// fill more than the budget; the restart still gets the budget's worth of
// the turns before the session, read past the session's messages.
func TestRestartReadsPastALongSession(t *testing.T) {
	d := newAgentDay(t, 1000)
	d.send([]history.Message{user("p1: note w01")}, asst("a1"))
	d.send([]history.Message{user("p2: note w02")}, asst("a2"))
	long := strings.Repeat("x", 800) // 200 tokens by lenCounter
	var session []history.Message
	for i := range 12 {
		u, a := user("s"+strconv.Itoa(i)+" "+long), asst("s"+strconv.Itoa(i)+" done "+long)
		d.send(append(slices.Clone(session), u), a)
		session = append(session, u, a)
	}
	p := d.send([]history.Message{user(restartText + "the session"), user("p3: note w03")}, asst("a3"))
	if got, want := sent(p, plan.History), []string{"p1: note w01", "a1", "p2: note w02", "a2"}; !slices.Equal(got, want) {
		t.Errorf("restart: got history %q, want %q", got, want)
	}
	if p.Supersede == nil || p.Supersede.Seq != 4 {
		t.Errorf("restart: got supersede %+v, want after seq 4", p.Supersede)
	}
}
