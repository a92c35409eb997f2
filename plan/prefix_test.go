package plan_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/plan"
)

// sized returns a message of role with about n tokens (lenCounter).
func sized(role, text string, n int) history.Message {
	pad := strings.Repeat("x", max(0, 4*(n-3)-len(text)-40))
	return msg(`{"role":"` + role + `","content":"` + text + " " + pad + `"}`)
}

// prefixStability is history's prefix-stability simulation (300 turns,
// every fourth with a tool call, a budget of 20 average turns, low water
// 0.7) through plan.Make, with summaries landing as soon as the trigger
// calls for them (trigger 0: never). It returns the fraction of
// consecutive requests whose context starts with the previous request's
// whole context, and the number of summaries.
func prefixStability(t *testing.T, trigger, keep int) (float64, int) {
	t.Helper()
	ctx := context.Background()
	st := memStore(t)
	k := history.Key{Tenant: "t", Conversation: "long"}
	r := rand.New(rand.NewPCG(7, 7))
	const turns, turnTokens = 300, 250
	pol := plan.Policy{Mode: history.Auto, Budget: 20 * turnTokens, Strategy: history.TokenBudget{LowWater: 0.7}}
	instr := []history.Message{{Role: "system", Raw: []byte(`{"role":"system","content":"` + strings.Repeat("y", 380) + `"}`)}}
	var prev [][]byte
	stable, pairs, summaries := 0, 0, 0
	send := func(in []history.Message, answer history.Message) {
		p, err := plan.Make(ctx, plan.Input{Store: st, Key: k, Policy: pol, Model: "m", Instructions: instr, New: in, Counter: lenCounter{}, Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		sent := make([][]byte, len(p.Messages))
		for i, m := range p.Messages {
			sent[i] = m.Raw
		}
		if prev != nil {
			pairs++
			if len(prev) <= len(sent) && slices.EqualFunc(prev, sent[:len(prev)], bytes.Equal) {
				stable++
			}
		}
		prev = sent
		answer.Tokens = lenCounter{}.Message("", answer.Raw)
		if _, err := st.Commit(ctx, k, history.Change{Version: p.Version, Supersede: p.Supersede,
			Append: append(slices.Clone(p.Fresh), answer), Cut: p.Cut, Now: int64(pairs + 1)}); err != nil {
			t.Fatal(err)
		}
		if trigger > 0 && p.Pending > trigger && land(t, st, k, keep) {
			summaries++
		}
	}
	for i := range turns {
		n := strconv.Itoa(i)
		u := sized("user", "question "+n, 20+r.IntN(60))
		if i%4 == 3 {
			id := "call_" + n
			send([]history.Message{u}, msg(`{"role":"assistant","content":null,"tool_calls":[{"id":"`+id+`","type":"function","function":{"name":"f","arguments":"{}"}}]}`))
			tool := msg(`{"role":"tool","tool_call_id":"` + id + `","content":"result ` + n + strings.Repeat(" r", 100+r.IntN(200)) + `"}`)
			send([]history.Message{tool}, sized("assistant", "answer "+n, 40+r.IntN(80)))
			continue
		}
		send([]history.Message{u}, sized("assistant", "answer "+n, 100+r.IntN(200)))
	}
	return float64(stable) / float64(pairs), summaries
}

// TestPrefixStabilityWithSummaries prints the prefix stability of a long
// conversation without summaries (the budget cuts) and with the default
// summary settings (trigger 10, keep 3), and checks that summaries do not
// make it worse: the prefix changes only when a summary lands or the
// budget cuts.
func TestPrefixStabilityWithSummaries(t *testing.T) {
	without, _ := prefixStability(t, 0, 0)
	with, n := prefixStability(t, 10, 3)
	t.Logf("requests whose context extends the previous one: without summaries %.3f, with summaries (trigger 10, keep 3) %.3f, %d summaries", without, with, n)
	if n == 0 {
		t.Fatal("no summary landed")
	}
	if with < without {
		t.Errorf("prefix stability with summaries %.3f, below %.3f without", with, without)
	}
}
