package history_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/recallproxy/recall/history"
	_ "github.com/recallproxy/recall/protocol/messages"
	_ "github.com/recallproxy/recall/protocol/responses"
	"github.com/recallproxy/recall/wire"
)

// held is one message as a client holds it: as the model sent it, and
// what the client may resend instead (its form without thinking, or
// nothing for a reasoning item), if anything.
type held struct {
	m       history.Message
	bare    *history.Message
	drop    bool // the client may leave it out
	current bool // of the turn in progress: a tool loop resends its thinking
}

// thinkingClient talks one protocol, and resends answers with or without
// their thinking or reasoning as it pleases.
type thinkingClient struct {
	r    *rand.Rand
	p    wire.Protocol
	n    int
	view []held
}

func protoMsg(p wire.Protocol, raw string) history.Message {
	c := wire.For(p)
	return history.Message{Role: c.Role([]byte(raw)), Protocol: p, Raw: []byte(raw), Hash: c.Hash([]byte(raw)), Tokens: 10}
}

func (c *thinkingClient) id() string { c.n++; return strconv.Itoa(c.n) }

func (c *thinkingClient) user() held {
	q := strconv.Quote("question " + c.id())
	if c.p == wire.Responses {
		return held{m: protoMsg(c.p, `{"type":"message","role":"user","content":[{"type":"input_text","text":`+q+`}]}`)}
	}
	return held{m: protoMsg(c.p, `{"role":"user","content":`+q+`}`)}
}

// answer is the model's answer, a text or a tool call, as stored: with
// thinking (Messages) or a reasoning item before it (Responses).
func (c *thinkingClient) answer(call bool) []held {
	id := c.id()
	switch c.p {
	case wire.Responses:
		item := `{"type":"message","id":"msg_` + id + `","role":"assistant","status":"completed","content":[{"type":"output_text","text":"answer ` + id + `","annotations":[]}]}`
		if call {
			item = `{"type":"function_call","id":"fc_` + id + `","call_id":"call_` + id + `","name":"f","arguments":"{}","status":"completed"}`
		}
		out := []held{{m: protoMsg(c.p, item)}}
		if c.r.IntN(4) > 0 {
			out = append([]held{{m: protoMsg(c.p, `{"type":"reasoning","id":"rs_`+id+`","summary":[],"encrypted_content":"enc`+id+`"}`), drop: true}}, out...)
		}
		return out
	case wire.Messages:
		block := `{"type":"text","text":"answer ` + id + `"}`
		if call {
			block = `{"type":"tool_use","id":"toolu_` + id + `","name":"f","input":{}}`
		}
		bare := protoMsg(c.p, `{"role":"assistant","content":[`+block+`]}`)
		switch c.r.IntN(4) {
		case 0:
			return []held{{m: bare}}
		case 1:
			return []held{{m: protoMsg(c.p, `{"role":"assistant","content":[{"type":"redacted_thinking","data":"r`+id+`"},{"type":"thinking","thinking":"t`+id+`","signature":"s`+id+`"},`+block+`]}`), bare: &bare}}
		}
		return []held{{m: protoMsg(c.p, `{"role":"assistant","content":[{"type":"thinking","thinking":"t`+id+`","signature":"s`+id+`"},`+block+`]}`), bare: &bare}}
	}
	raw := `{"role":"assistant","content":"answer ` + id + `"}`
	if call {
		raw = `{"role":"assistant","content":null,"tool_calls":[{"id":"call_` + id + `","type":"function","function":{"name":"f","arguments":"{}"}}]}`
	}
	return []held{{m: protoMsg(c.p, raw)}}
}

// result answers the call of the last answer.
func (c *thinkingClient) result() held {
	last := c.view[len(c.view)-1].m
	id := last.Codec().Calls(nil, last.Raw)[0]
	switch c.p {
	case wire.Responses:
		return held{m: protoMsg(c.p, `{"type":"function_call_output","call_id":"`+id+`","output":"out `+c.id()+`"}`)}
	case wire.Messages:
		return held{m: protoMsg(c.p, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"`+id+`","content":"out `+c.id()+`"}]}`)}
	}
	return held{m: protoMsg(c.p, `{"role":"tool","tool_call_id":"`+id+`","content":"out `+c.id()+`"}`)}
}

// resend is what the client sends of its view: every message, each
// answer with or without its thinking (dropped from earlier turns, from
// all, from none, or at random), or only the new ones.
func (c *thinkingClient) resend(news int) []history.Message {
	if c.r.IntN(5) == 0 {
		var out []history.Message
		for _, h := range c.view[len(c.view)-news:] {
			out = append(out, h.m)
		}
		return out
	}
	style := c.r.IntN(4)
	var out []history.Message
	for _, h := range c.view {
		leave := false
		switch style {
		case 0: // the Anthropic SDK's habit: earlier turns' thinking left out
			leave = !h.current
		case 1:
			leave = true
		case 2:
			leave = c.r.IntN(2) == 0
		}
		switch {
		case !leave:
			out = append(out, h.m)
		case h.drop:
		case h.bare != nil:
			out = append(out, *h.bare)
		default:
			out = append(out, h.m)
		}
	}
	return out
}

// Resends of every protocol, with and without the model's thinking or
// reasoning in any mix, never store a message twice: after each turn the
// stored active messages are the client's conversation as the model sent
// it, thinking and reasoning included, once each.
func TestMergeSeesThroughDroppedThinking(t *testing.T) {
	ctx := context.Background()
	k := history.Key{Tenant: "t", Conversation: "c"}
	var resends, thin int
	for seed := range uint64(150) {
		r := rand.New(rand.NewPCG(seed, 0x7417))
		p := []wire.Protocol{wire.ChatCompletions, wire.Responses, wire.Messages}[seed%3]
		t.Run(fmt.Sprint(p, "/", seed), func(t *testing.T) {
			c := &thinkingClient{r: r, p: p}
			st := &memStore{}
			budget := []int{60, 200, 1 << 30}[r.IntN(3)]
			news := 0
			c.view = append(c.view, c.user())
			news = 1
			for step := range 6 + r.IntN(10) {
				in := c.resend(news)
				if len(in) > news {
					resends++
				}
				o, err := curate(ctx, st, k, request{in: in, mode: history.Auto, budget: budget, strategy: history.Passthrough{}})
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				call := r.IntN(3) == 0
				answer := c.answer(call)
				for i := range c.view {
					c.view[i].current = false
				}
				chg := history.Change{Version: o.snap.Meta.Version, Supersede: o.merged.Supersede, Now: int64(step + 1),
					Append: slices.Clone(o.merged.New)}
				for _, h := range answer {
					chg.Append = append(chg.Append, h.m)
					if h.bare != nil || h.drop {
						thin++
					}
				}
				if _, err := st.Commit(ctx, k, chg); err != nil {
					t.Fatalf("step %d: commit: %v", step, err)
				}
				c.view = append(c.view, answer...)
				var active []uint64
				for _, m := range st.msgs {
					if m.Active() {
						active = append(active, m.Hash)
					}
				}
				var want []uint64
				for _, h := range c.view {
					want = append(want, h.m.Hash)
				}
				if !slices.Equal(active, want) {
					t.Fatalf("step %d: stored %d active messages, want the client's %d once each (sent %d, %d new)",
						step, len(active), len(want), len(in), len(o.merged.New))
				}
				if call {
					for i := len(c.view) - len(answer); i < len(c.view); i++ {
						c.view[i].current = true
					}
					c.view = append(c.view, c.result())
				} else {
					c.view = append(c.view, c.user())
				}
				news = 1
			}
		})
	}
	if resends == 0 || thin == 0 {
		t.Errorf("got %d resends and %d answers with thinking, want both", resends, thin)
	}
}
