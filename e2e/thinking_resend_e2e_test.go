package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/e2etest"
)

// TestThinkingLeftOutIsNotStoredTwice: the official Anthropic SDK with
// thinking on, over an Anthropic upstream, holds its conversation as
// Anthropic allows: every earlier answer resent without its thinking
// (Message.ToParam, thinking blocks taken out), the latest one whole.
// After 6 turns the client holds 12 messages and Recall has stored 12
// (issue 48: it stored 42, and sent them all upstream), each answer with
// its signed thinking, which the upstream gets back intact.
func TestThinkingLeftOutIsNotStoredTwice(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	ctx := context.Background()
	client := anthropicClient(h, "rk-an", "think")
	var held []anthropic.MessageParam
	for turn := 1; turn <= 6; turn++ {
		// Earlier answers without their thinking: what the client may
		// leave out, and what agents do.
		for i := range held {
			if held[i].Role != anthropic.MessageParamRoleAssistant {
				continue
			}
			var kept []anthropic.ContentBlockParamUnion
			for _, b := range held[i].Content {
				if b.OfThinking == nil && b.OfRedactedThinking == nil {
					kept = append(kept, b)
				}
			}
			held[i].Content = kept
		}
		held = append(held, anthropic.NewUserMessage(anthropic.NewTextBlock("question "+strconv.Itoa(turn))))
		msg, err := client.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 2000,
			Thinking: anthropic.ThinkingConfigParamOfEnabled(1024), Messages: held})
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		if d := h.WaitDone("think"); !d.Committed {
			t.Fatalf("turn %d: not committed", turn)
		}
		if len(msg.Content) == 0 || msg.Content[0].Type != "thinking" {
			t.Fatalf("turn %d: got %+v, want an answer with thinking", turn, msg.Content)
		}
		held = append(held, msg.ToParam())
		sent := gjsonArray(h.Up.Last().Body, "messages")
		if len(sent) != 2*turn-1 {
			t.Errorf("turn %d: the upstream got %d messages, want %d", turn, len(sent), 2*turn-1)
		}
		for i, raw := range sent {
			if m := gjson.ParseBytes(raw); m.Get("role").Str == "assistant" && m.Get("content.0.type").Str != "thinking" {
				t.Errorf("turn %d: message %d went upstream without its thinking: %s", turn, i, raw)
			}
		}
	}
	stored := h.Stored("an", "think")
	if len(held) != 12 || len(stored) != 12 {
		t.Fatalf("the client holds %d messages, Recall stored %d; want 12 and 12", len(held), len(stored))
	}
	for i, m := range stored {
		if (i%2 == 1) != strings.Contains(string(m.Raw), `"signature"`) {
			t.Errorf("stored message %d: %s; want answers stored with their signed thinking", i+1, m.Raw)
		}
	}
}

// TestReasoningLeftOutIsNotStoredTwice: a Responses client that keeps no
// state resends its whole conversation each turn without the reasoning
// items (as it may): after 4 turns it holds 8 items, and Recall has
// stored those and the 4 reasoning items once each, and sends each
// reasoning item back upstream once.
func TestReasoningLeftOutIsNotStoredTwice(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	var held []string
	headers := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer rk-oa", "X-Conversation-ID": "reason"}
	for turn := 1; turn <= 4; turn++ {
		held = append(held, `{"type":"message","role":"user","content":[{"type":"input_text","text":"question `+strconv.Itoa(turn)+`"}]}`)
		res := h.PostHeaders("/v1/responses", headers, `{"model":"gpt-5","store":false,"include":["reasoning.encrypted_content"],"input":[`+strings.Join(held, ",")+`]}`)
		if d := h.WaitDone("reason"); res.Status != 200 || !d.Committed {
			t.Fatalf("turn %d: got %d %s", turn, res.Status, res.Body)
		}
		reasoning := 0
		gjson.Get(res.Body, "output").ForEach(func(_, item gjson.Result) bool {
			if item.Get("type").Str == "reasoning" {
				reasoning++
			} else {
				held = append(held, item.Raw)
			}
			return true
		})
		if reasoning != 1 {
			t.Fatalf("turn %d: got %d reasoning items in %s, want one", turn, reasoning, res.Body)
		}
		if n := strings.Count(string(h.Up.Last().Body), `"type":"reasoning"`); n != turn-1 {
			t.Errorf("turn %d: the upstream got %d reasoning items, want %d", turn, n, turn-1)
		}
	}
	if stored := h.Stored("oa", "reason"); len(held) != 8 || len(stored) != 12 {
		t.Fatalf("the client holds %d items, Recall stored %d; want 8, and 12 with the reasoning", len(held), len(stored))
	}
}
