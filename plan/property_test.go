package plan_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/tokens"
	"github.com/recallproxy/recall/wire"
)

// lenCounter counts a quarter token per byte: fast, and deterministic.
type lenCounter struct{}

func (lenCounter) Message(_ tokens.Encoding, raw []byte) int { return 3 + len(raw)/4 }
func (lenCounter) Tools(_ tokens.Encoding, raw []byte) int   { return len(raw) / 4 }

func msg(raw string) history.Message {
	b := []byte(raw)
	return history.Message{Role: gjson.Get(raw, "role").Str, Raw: b, Hash: chat.Hash(b)}
}

func user(text string) history.Message {
	return msg(`{"role":"user","content":` + strconv.Quote(text) + `}`)
}

// client plays one side of a random conversation (as the history
// package's property test does): text, tool calls answered in full, in
// part or not at all, edits and regenerations, whole resends or deltas.
type client struct {
	r      *rand.Rand
	resend bool
	view   []history.Message
	n      int
}

func (c *client) text(prefix string, size int) string {
	c.n++
	return prefix + " " + strconv.Itoa(c.n) + " " + string(bytes.Repeat([]byte("x"), c.r.IntN(size)))
}

func (c *client) next() []history.Message {
	var fresh []history.Message
	last := len(c.view) - 1
	edit := false
	switch {
	case c.resend && len(c.view) > 2 && c.r.IntN(10) == 0:
		var users []int
		for i, m := range c.view[1:] {
			if m.Role == wire.RoleUser {
				users = append(users, i+1)
			}
		}
		if len(users) > 0 && c.r.IntN(2) == 0 {
			c.view = c.view[:users[c.r.IntN(len(users))]]
			fresh = append(fresh, user(c.text("edited", 400)))
		} else if c.view[last].Role == wire.RoleAssistant {
			c.view = c.view[:last]
		}
		edit = true
	case last >= 0 && c.view[last].Role == wire.RoleAssistant && gjson.GetBytes(c.view[last].Raw, "tool_calls.0").Exists():
		var ids []string
		gjson.GetBytes(c.view[last].Raw, "tool_calls.#.id").ForEach(func(_, v gjson.Result) bool { ids = append(ids, v.Str); return true })
		switch k := c.r.IntN(10); {
		case k < 6:
			c.r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		case k < 8:
			ids = ids[:c.r.IntN(len(ids))]
		default:
			ids = nil
		}
		for _, id := range ids {
			fresh = append(fresh, msg(`{"role":"tool","tool_call_id":"`+id+`","content":`+strconv.Quote(c.text("result", 3000))+`}`))
		}
		if len(ids) == 0 {
			fresh = append(fresh, user(c.text("question", 400)))
		}
	default:
		fresh = append(fresh, user(c.text("question", 400)))
	}
	c.view = append(c.view, fresh...)
	if c.resend || edit {
		return slices.Clone(c.view)
	}
	return fresh
}

func (c *client) answer() history.Message {
	if c.r.IntN(2) == 0 {
		return msg(`{"role":"assistant","content":` + strconv.Quote(c.text("answer", 600)) + `}`)
	}
	var calls []string
	for range 1 + c.r.IntN(3) {
		calls = append(calls, `{"id":"call_`+strconv.Itoa(c.n)+`_`+strconv.Itoa(len(calls))+`","type":"function","function":{"name":"f","arguments":"{}"}}`)
		c.n++
	}
	return msg(`{"role":"assistant","content":null,"tool_calls":[` + string(bytes.Join(toBytes(calls), []byte(","))) + `]}`)
}

func toBytes(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// TestPlanPropertiesWithSummaries is the history package's random-trace
// property test run through plan.Make on real Badger with summaries
// landing at random points (as a summariser would: every turn after the
// summary but the newest 1-3, never ending on open tool calls): every
// context is valid for a strict upstream, within budget unless the
// current turn alone is over it, ends with the client's newest message,
// carries the summary right after the instructions, and never sends a
// message the summary covers.
func TestPlanPropertiesWithSummaries(t *testing.T) {
	ctx := context.Background()
	var stats struct{ requests, summaries, injected, dropped, overBudget, supersedes int }
	defer func() {
		t.Logf("%+v", stats)
		if stats.summaries == 0 || stats.injected == 0 || stats.dropped == 0 || stats.overBudget == 0 || stats.supersedes == 0 {
			t.Errorf("coverage %+v, want every count > 0", stats)
		}
	}()
	st := diskStore(t)
	for seed := range uint64(60) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 0x5eed))
			cl := &client{r: r, resend: r.IntN(2) == 0}
			k := history.Key{Tenant: "t", Conversation: fmt.Sprint("c", seed)}
			budget := 600 + r.IntN(3000)
			lowWater := []float64{0.5, 0.7, 1}[r.IntN(3)]
			pol := plan.Policy{Mode: history.Auto, Budget: budget,
				Strategy: history.Composed{history.ToolResultTruncator{MaxChars: 200}, history.TokenBudget{LowWater: lowWater}}}
			var instr []history.Message
			if r.IntN(2) == 0 {
				role := []string{"system", "developer"}[r.IntN(2)]
				instr = []history.Message{{Role: role, Raw: []byte(`{"role":"` + role + `","content":"be brief"}`)}}
			}
			for step := range 15 + r.IntN(30) {
				in := cl.next()
				p, err := plan.Make(ctx, plan.Input{Store: st, Key: k, Policy: pol, Model: "m", Instructions: instr,
					New: in, Counter: lenCounter{}, Now: time.Unix(0, int64(step+1))})
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				stats.requests++
				checkPlan(t, step, p, in, instr, budget)
				if p.Summary != nil {
					stats.injected++
				}
				if p.Report.OverBudget {
					stats.overBudget++
				}
				if p.Report.DroppedTurns > 0 {
					stats.dropped++
				}
				if p.Supersede != nil {
					stats.supersedes++
				}
				a := cl.answer()
				a.Tokens = lenCounter{}.Message("", a.Raw)
				cl.view = append(cl.view, a)
				_, err = st.Commit(ctx, k, history.Change{Version: p.Version, Supersede: p.Supersede,
					Append: append(slices.Clone(p.Fresh), a), Cut: p.Cut, Now: int64(step + 1)})
				if err != nil {
					t.Fatalf("step %d: commit: %v", step, err)
				}
				if r.IntN(3) == 0 && land(t, st, k, 1+r.IntN(3)) {
					stats.summaries++
				}
			}
		})
	}
}

// checkPlan asserts the properties of one plan.
func checkPlan(t *testing.T, step int, p *plan.Plan, in []history.Message, instr []history.Message, budget int) {
	t.Helper()
	raws := make([]json.RawMessage, len(p.Messages))
	sum := tokens.ReplyPriming
	for i, m := range p.Messages {
		raws[i] = m.Raw
		sum += m.Tokens
	}
	if e := upstreamtest.ValidateMessages(raws); e != nil {
		t.Fatalf("step %d: a strict upstream rejects the context: %s", step, e.Message)
	}
	if p.Report.Tokens != sum {
		t.Errorf("step %d: Report.Tokens %d, want the sum %d", step, p.Report.Tokens, sum)
	}
	if !p.Report.OverBudget && sum > budget {
		t.Fatalf("step %d: %d tokens sent, over the budget %d", step, sum, budget)
	}
	if last := p.Messages[len(p.Messages)-1]; !bytes.Equal(last.Raw, in[len(in)-1].Raw) {
		t.Fatalf("step %d: the context ends with %s, want the client's newest message %s", step, last.Raw, in[len(in)-1].Raw)
	}
	for i, m := range p.Messages[:len(instr)] {
		if m.Kind != plan.Instruction {
			t.Fatalf("step %d: message %d is not the client's instruction", step, i)
		}
	}
	rest := p.Messages[len(instr):]
	if s := p.Summary; s != nil {
		if rest[0].Kind != plan.SummaryMessage || !bytes.Contains(rest[0].Raw, []byte(strconv.Quote(plan.SummaryPrefix)[1:10])) {
			t.Fatalf("step %d: no summary message after the instructions: %s", step, rest[0].Raw)
		}
		if len(instr) > 0 && rest[0].Role != instr[0].Role {
			t.Errorf("step %d: summary role %s, want the instructions' %s", step, rest[0].Role, instr[0].Role)
		}
		for _, m := range rest[1:] {
			if m.Kind == plan.History && m.Seq <= s.Through {
				t.Fatalf("step %d: message %d is sent though the summary covers it (through %d)", step, m.Seq, s.Through)
			}
		}
	}
	var prev uint64
	for _, m := range rest {
		if m.Kind == plan.History || m.Kind == plan.New {
			if m.Seq <= prev {
				t.Fatalf("step %d: seqs out of order (%d after %d)", step, m.Seq, prev)
			}
			prev = m.Seq
		}
	}
}

// land lands a summary of every turn after the stored one but the newest
// keep, as the summariser would; it reports whether it did.
func land(t *testing.T, st history.Store, k history.Key, keep int) bool {
	t.Helper()
	ctx := context.Background()
	snap, err := st.Load(ctx, k, history.Query{After: ^uint64(0)})
	if err != nil {
		t.Fatal(err)
	}
	var base uint64
	turns := 0
	if s := snap.Meta.Summary; s != nil {
		base, turns = s.Through, s.Turns
	}
	var msgs []history.Message
	if err := st.Messages(ctx, k, base, false, func(m history.Message) bool { msgs = append(msgs, m); return true }); err != nil {
		t.Fatal(err)
	}
	var ends []int // index of each turn's last message
	for i := range msgs {
		if i == len(msgs)-1 || msgs[i+1].Turn != msgs[i].Turn {
			ends = append(ends, i)
		}
	}
	n := len(ends) - keep
	for n > 0 {
		last := msgs[ends[n-1]]
		if last.Role != wire.RoleAssistant || !gjson.GetBytes(last.Raw, "tool_calls.0").Exists() {
			break
		}
		n--
	}
	if n <= 0 {
		return false
	}
	through := msgs[ends[n-1]].Seq
	_, err = st.Commit(ctx, k, history.Change{Summary: &history.SummaryChange{Base: base, Incarnation: snap.Meta.Incarnation, Epoch: snap.Meta.Epoch,
		Summary: history.Summary{Text: fmt.Sprintf("through %d", through), Through: through, Turns: turns + n}}})
	if err != nil {
		t.Fatalf("land summary through %d: %v", through, err)
	}
	return true
}
