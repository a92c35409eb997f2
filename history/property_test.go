package history_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/wire"
)

// client plays one side of a random conversation: its own view of the
// messages, and how it talks to the proxy.
type client struct {
	r      *rand.Rand
	resend bool              // sends its whole view every time, else only what is new
	view   []history.Message // the conversation as the client knows it
	n      int               // a counter making every text unique
}

func (c *client) text(prefix string) string {
	c.n++
	return prefix + " " + strconv.Itoa(c.n)
}

func (c *client) tokens(lo, hi int) int { return lo + c.r.IntN(hi-lo+1) }

// next returns the messages of the client's next request and what it
// should send, and whether it edits the past (full-resend clients only).
func (c *client) next() (in []history.Message, edit bool) {
	var fresh []history.Message
	last := len(c.view) - 1
	switch {
	case c.resend && len(c.view) > 2 && c.r.IntN(8) == 0:
		// Edit an earlier user message (never the first: a resend whose
		// first message differs is a new conversation's) or regenerate.
		var users []int
		for i, m := range c.view[1:] {
			if m.Role == wire.RoleUser {
				users = append(users, i+1)
			}
		}
		if len(users) > 0 && c.r.IntN(2) == 0 {
			c.view = c.view[:users[c.r.IntN(len(users))]]
			fresh = append(fresh, history.Tok(history.User(c.text("edited question")), c.tokens(5, 200)))
		} else if c.view[last].Role == wire.RoleAssistant {
			c.view = c.view[:last] // regenerate the last answer
		}
		edit = true
	case last >= 0 && c.view[last].Role == wire.RoleAssistant && len(callsOf(c.view[last])) > 0:
		ids := callsOf(c.view[last])
		switch k := c.r.IntN(10); {
		case k < 6: // answer every call, in a random order
			c.r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		case k < 8: // answer some
			ids = ids[:c.r.IntN(len(ids))]
		default: // ignore the calls, ask something else
			ids = nil
		}
		for _, id := range ids {
			fresh = append(fresh, history.Tok(history.Tool(id, c.text("result")), c.tokens(20, 1500)))
		}
		if len(ids) == 0 {
			fresh = append(fresh, history.Tok(history.User(c.text("question")), c.tokens(5, 200)))
		}
	default:
		fresh = append(fresh, history.Tok(history.User(c.text("question")), c.tokens(5, 200)))
	}
	c.view = append(c.view, fresh...)
	if c.resend || edit {
		return slices.Clone(c.view), edit
	}
	return fresh, edit
}

// answer returns the upstream's reply: text, or one to three tool calls.
func (c *client) answer() history.Message {
	if c.r.IntN(2) == 0 {
		return history.Tok(history.Asst(c.text("answer")), c.tokens(5, 300))
	}
	ids := make([]string, 1+c.r.IntN(3))
	for i := range ids {
		ids[i] = c.text("call")
	}
	text := ""
	if c.r.IntN(3) == 0 {
		text = c.text("let me check")
	}
	return history.Tok(history.Calls(text, ids...), c.tokens(10, 80))
}

func callsOf(m history.Message) []string {
	var ids []string
	for i := 0; ; i++ {
		id := gjson.GetBytes(m.Raw, "tool_calls."+strconv.Itoa(i)+".id").String()
		if id == "" {
			return ids
		}
		ids = append(ids, id)
	}
}

// TestCurationProperties is issue 3's acceptance test: random conversations
// with tool calls, unanswered calls and edits, under random budgets, always
// produce a context a strict upstream accepts, that ends with the whole
// current turn, fits the budget, and drops only whole turns from the
// oldest end.
func TestCurationProperties(t *testing.T) {
	ctx := context.Background()
	k := history.Key{Tenant: "t", Conversation: "c"}
	var stats struct{ requests, tooLong, overBudget, edits, supersedes, dropped, cut, repaired int }
	defer func() {
		t.Logf("%+v", stats)
		// The generator must reach every case the properties are about.
		if stats.tooLong == 0 || stats.overBudget == 0 || stats.edits == 0 || stats.supersedes == 0 || stats.dropped == 0 || stats.cut == 0 || stats.repaired == 0 {
			t.Errorf("got coverage %+v, want every count > 0", stats)
		}
	}()
	for seed := range uint64(200) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 0x5eed))
			cl := &client{r: r, resend: r.IntN(2) == 0}
			st := &memStore{}
			lowWater := []float64{0, 0.5, 0.7, 0.9, 1}[r.IntN(5)]
			budget := 600 + r.IntN(5000)
			strategy := history.Composed{history.ToolResultTruncator{MaxChars: 5 + r.IntN(40)}, history.TokenBudget{LowWater: lowWater}}
			if r.IntN(4) == 0 {
				strategy = append(strategy, history.SlidingWindow{MaxTurns: 1 + r.IntN(12), LowWater: lowWater})
			}
			requests := 10 + r.IntN(40)
			for step := range requests {
				before := slices.Clone(cl.view)
				in, edit := cl.next()
				stats.requests++
				if edit {
					stats.edits++
				}
				// The model's window is unknown (0) or somewhat above the budget.
				window := 0
				if r.IntN(2) == 0 {
					window = budget + r.IntN(budget)
				}
				req := request{in: in, mode: history.Auto, budget: budget, window: window, fixed: r.IntN(300), strategy: strategy}
				o, err := curate(ctx, st, k, req)
				all := append(slices.Clone(o.merged.History), o.fresh...)
				current := all[currentStart(all):]
				repaired, _ := history.Repair(current, nil)
				need := req.fixed + sumTokens(repaired)
				if errors.Is(err, history.ErrContextLength) {
					if window == 0 || need <= window {
						t.Fatalf("step %d: got %v, but the current turn needs %d tokens of a window of %d", step, err, need, window)
					}
					stats.tooLong++
					cl.view = before // the client got a 400; it tries something else
					continue
				}
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				if window > 0 && need > window {
					t.Fatalf("step %d: got no error, want ErrContextLength (current turn %d tokens, window %d)", step, need, window)
				}
				if over := need > budget; over != o.window.Report.OverBudget {
					t.Fatalf("step %d: got OverBudget %v, want %v (current turn %d of %d tokens)", step, o.window.Report.OverBudget, over, need, budget)
				}
				if o.window.Report.OverBudget {
					// Sent alone: the budget bounds what Recall adds, not what
					// the client sends.
					stats.overBudget++
					if got, want := seqs(o.sent), seqs(repaired); !slices.Equal(got, want) {
						t.Fatalf("step %d: over budget: got seqs %v, want only the current turn's %v", step, got, want)
					}
				} else {
					check(t, step, o, all, req)
				}
				if o.merged.Supersede != nil {
					stats.supersedes++
				}
				if o.window.Report.DroppedTurns > 0 {
					stats.dropped++
				}
				if o.window.Report.TruncatedToolResults > 0 {
					stats.cut++
				}
				if o.window.Report.RepairedCalls > 0 {
					stats.repaired++
				}

				a := cl.answer()
				cl.view = append(cl.view, a)
				if _, err := commit(ctx, st, k, o, a, int64(step+1)); err != nil {
					t.Fatalf("step %d: commit: %v", step, err)
				}
				checkMeta(t, step, st)
			}
		})
	}
}

// check asserts the properties of one curated context.
func check(t *testing.T, step int, o outcome, all []history.Message, req request) {
	t.Helper()
	sent := o.sent
	if e := upstreamtest.ValidateMessages(history.Raws(sent)); e != nil {
		t.Fatalf("step %d: strict upstream rejects the context %v: %s", step, history.Roles(sent), e.Message)
	}
	if got := req.fixed + sumTokens(sent); got > req.budget {
		t.Fatalf("step %d: got %d tokens, want at most the budget %d", step, got, req.budget)
	}
	if got := o.window.Report.Tokens; got != req.fixed+sumTokens(sent) {
		t.Errorf("step %d: got Report.Tokens %d, want %d", step, got, req.fixed+sumTokens(sent))
	}
	// The context ends with the whole current turn, repaired, uncut.
	cur := all[currentStart(all):]
	wantCur, _ := history.Repair(cur, nil)
	if len(sent) < len(wantCur) {
		t.Fatalf("step %d: got %d messages, want at least the current turn's %d", step, len(sent), len(wantCur))
	}
	for i, m := range sent[len(sent)-len(wantCur):] {
		if !bytes.Equal(m.Raw, wantCur[i].Raw) {
			t.Fatalf("step %d: current turn message %d: got %s, want %s", step, i, m.Raw, wantCur[i].Raw)
		}
	}
	// The rest is a suffix of whole turns: everything from a turn start on,
	// less what repair removes.
	first := slices.IndexFunc(all, func(m history.Message) bool { return m.Seq == sent[0].Seq })
	if first < 0 {
		t.Fatalf("step %d: sent message %s is not in history or new", step, sent[0].Raw)
	}
	if first > 0 && all[first].Role != wire.RoleUser {
		t.Fatalf("step %d: context starts mid-turn with a %s message", step, all[first].Role)
	}
	want, _ := history.Repair(all[first:], nil)
	if got, wantSeqs := seqs(sent), seqs(want); !slices.Equal(got, wantSeqs) {
		t.Fatalf("step %d: got seqs %v, want %v (a suffix of whole turns)", step, got, wantSeqs)
	}
	// Messages behind a cut point are never sent, except the current turn.
	if c := o.window.Cut; c > 0 && len(sent) > len(wantCur) && sent[0].Seq < c {
		t.Fatalf("step %d: got first seq %d, before the cut %d", step, sent[0].Seq, c)
	}
}

// checkMeta asserts that the metadata counters describe the stored messages.
func checkMeta(t *testing.T, step int, st *memStore) {
	t.Helper()
	var want history.Meta
	for i := range st.msgs {
		m := st.at(i) // which messages are active is the metadata's gaps
		if !m.Active() {
			continue
		}
		if want.Messages == 0 {
			want.FirstHash = m.Hash
		}
		want.Messages++
		want.Tokens += m.Tokens
		if m.Role == wire.RoleUser {
			want.Turns++
		}
		want.LastTurn = m.Turn
	}
	got := st.meta
	if got.Messages != want.Messages || got.Tokens != want.Tokens || got.Turns != want.Turns ||
		got.FirstHash != want.FirstHash || got.LastTurn != want.LastTurn {
		t.Fatalf("step %d: got meta messages/tokens/turns/first/last %d/%d/%d/%x/%d, want %d/%d/%d/%x/%d", step,
			got.Messages, got.Tokens, got.Turns, got.FirstHash, got.LastTurn,
			want.Messages, want.Tokens, want.Turns, want.FirstHash, want.LastTurn)
	}
	if got.NextSeq != uint64(len(st.msgs))+1 {
		t.Fatalf("step %d: got NextSeq %d, want %d", step, got.NextSeq, len(st.msgs)+1)
	}
}

// currentStart returns the index of the current turn's first message: the
// last user message.
func currentStart(msgs []history.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == wire.RoleUser {
			return i
		}
	}
	return 0
}

func sumTokens(msgs []history.Message) int {
	n := 0
	for i := range msgs {
		n += msgs[i].Tokens
	}
	return n
}

func seqs(msgs []history.Message) []uint64 {
	out := make([]uint64, len(msgs))
	for i := range msgs {
		out[i] = msgs[i].Seq
	}
	return out
}
