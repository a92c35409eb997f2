package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// TestRandomForgetsKeepEveryContextValid drives random conversations with
// tool calls (answered in full, in part or not at all) through the real
// server and Badger, with random soft and hard forgets between requests:
// the strict fake upstream, which rejects tool messages as OpenAI does,
// must accept every context Recall sends.
func TestRandomForgetsKeepEveryContextValid(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{})
	ctx := context.Background()
	forgets, calls := 0, 0
	for seed := range uint64(12) {
		r := rand.New(rand.NewPCG(seed, 0xf0)) // deterministic per seed
		conv := fmt.Sprint("rf-", seed)
		c := h.Client(key, conv)
		var open []string // the newest answer's call ids, if it made calls
		for step := range 14 {
			if r.IntN(2) == 0 {
				tcs := make([]upstreamtest.ToolCall, 1+r.IntN(2))
				for i := range tcs {
					tcs[i] = upstreamtest.ToolCall{ID: fmt.Sprintf("call_%d_%d_%d", seed, step, i), Name: "f", Arguments: "{}"}
				}
				h.Up.Enqueue(upstreamtest.Reply{ToolCalls: tcs})
			} else {
				h.Up.Enqueue(upstreamtest.Reply{Content: fmt.Sprint("answer ", step)})
			}
			// Answer some or all of the open calls, or ask something else.
			var msgs []openai.ChatCompletionMessageParamUnion
			if len(open) > 0 && r.IntN(4) != 0 {
				calls += len(open)
				for _, id := range open[:1+r.IntN(len(open))] {
					msgs = append(msgs, openai.ToolMessage(fmt.Sprint("result ", step), id))
				}
			} else {
				msgs = append(msgs, openai.UserMessage(fmt.Sprint("question ", step)))
			}
			_, err := c.Chat.Completions.New(ctx, e2etest.ChatParams(msgs...))
			h.WaitDone(conv)
			if last := h.Up.Last(); last.Rejected != nil {
				t.Fatalf("seed %d step %d: upstream rejected %q: %v", seed, step, e2etest.RenderAll(last.Messages), last.Rejected)
			}
			if err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			if r.IntN(3) == 0 {
				instr := []string{"oldest", "position:" + fmt.Sprint(1+r.IntN(6)), "speaker:tool", "speaker:assistant",
					"before:turn_" + fmt.Sprint(1+r.IntN(4))}[r.IntN(5)]
				mode := []string{"soft", "hard"}[r.IntN(2)]
				before := activeOf(h, conv)
				a := h.API(key, "", "POST", convBase+conv+"/forget", `{"instruction":"`+instr+`","mode":"`+mode+`"}`)
				if a.Status != 200 {
					t.Fatalf("seed %d step %d: forget %s: %d %s", seed, step, instr, a.Status, a.Body)
				}
				forgets++
				// A call and the results answering it are forgotten together.
				after := activeOf(h, conv)
				for _, m := range before {
					_, kept := after[m.seq]
					for _, mate := range before {
						if _, mateKept := after[mate.seq]; mates(m, mate) && kept != mateKept {
							t.Fatalf("seed %d step %d: %s %s forgot seq %d but not seq %d of the same tool call", seed, step, mode, instr, m.seq, mate.seq)
						}
					}
				}
			}
			open = callIDsOf(h, conv) // a forgotten call has no results to send
		}
	}
	if forgets == 0 || calls == 0 {
		t.Errorf("got %d forgets and %d open calls: the generator does not reach the cases", forgets, calls)
	}
}

// stored is an active message, as the pairing check needs it.
type stored struct {
	seq        uint64
	role       string
	calls      []string
	toolCallID string
}

// mates reports whether a and b belong to one tool call: a call and a
// result answering it.
func mates(a, b stored) bool {
	if a.role == "tool" {
		a, b = b, a
	}
	return a.role == "assistant" && b.role == "tool" && slices.Contains(a.calls, b.toolCallID)
}

// activeOf returns the conversation's active messages by seq.
func activeOf(h *e2etest.Harness, conv string) map[uint64]stored {
	h.T.Helper()
	var l struct {
		Data []struct {
			Seq     uint64 `json:"seq"`
			Message struct {
				Role       string `json:"role"`
				ToolCallID string `json:"tool_call_id"`
				ToolCalls  []struct {
					ID string `json:"id"`
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"data"`
	}
	h.API(key, "", "GET", convBase+conv+"/messages?limit=1000", "").JSON(h.T, &l)
	out := map[uint64]stored{}
	for _, m := range l.Data {
		s := stored{seq: m.Seq, role: m.Message.Role, toolCallID: m.Message.ToolCallID}
		for _, c := range m.Message.ToolCalls {
			s.calls = append(s.calls, c.ID)
		}
		out[m.Seq] = s
	}
	return out
}

// callIDsOf returns the call ids of the conversation's newest active
// message if it is an assistant message with tool calls, else nil.
func callIDsOf(h *e2etest.Harness, conv string) []string {
	h.T.Helper()
	var l struct {
		Data []struct {
			Message struct {
				Role      string `json:"role"`
				ToolCalls []struct {
					ID string `json:"id"`
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"data"`
	}
	h.API(key, "", "GET", convBase+conv+"/messages?order=desc&limit=1", "").JSON(h.T, &l)
	if len(l.Data) == 0 || l.Data[0].Message.Role != "assistant" {
		return nil
	}
	var ids []string
	for _, c := range l.Data[0].Message.ToolCalls {
		ids = append(ids, c.ID)
	}
	return ids
}
