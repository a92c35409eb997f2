package proxy_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// TestTraceOfAnthropicCacheCreation: the tokens an Anthropic upstream
// says it wrote to its prompt cache (cache_creation_input_tokens) reach
// the exchange's span (gen_ai.usage.cache_creation.input_tokens, counted
// in gen_ai.usage.input_tokens), its record (tokens.cache_creation, as the
// API answers it, checked against the OpenAPI document) and the Anthropic
// client's answer: relayed as the upstream sent it, and rendered by
// Recall after a history tool's rounds (their sum), streamed and not.
func TestTraceOfAnthropicCacheCreation(t *testing.T) {
	for _, tc := range []struct {
		name          string
		stream, tools bool
	}{
		{"relayed", false, false},
		{"relayed stream", true, false},
		{"history tools", false, true},
		{"history tools stream", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) { testTraceOfAnthropicCacheCreation(t, tc.stream, tc.tools) })
	}
}

func testTraceOfAnthropicCacheCreation(t *testing.T, stream, tools bool) {
	o := e2etest.Options{Tenants: map[string]string{"an.yaml": "id: an\napi_keys: [\"rk-an\"]\nupstream:\n  base_url: \"{{UPSTREAM}}\"\n" +
		"  api_key: \"sk-up-an\"\n  protocol: anthropic\n"}}
	if tools {
		o.Global = func(g *config.Global) { g.Defaults.History.Tools = []string{"search_conversations"} }
	}
	h, flush := tracedHarness(t, o)
	const conv = "traced-cache"
	// The first round writes 40 tokens to the cache; after a history
	// tool's call a second round writes 8.
	wantCreated := int64(40)
	if tools {
		h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{{Name: "search_conversations", Arguments: `{"query":"friday"}`}}, CacheCreation: 40},
			upstreamtest.Reply{Content: "Found it.", CacheCreation: 8})
		wantCreated = 48
	} else {
		h.Up.Enqueue(upstreamtest.Reply{Content: "Noted.", CacheCreation: 40})
	}
	client := anthropic.NewClient(aoption.WithBaseURL(h.URL), aoption.WithAPIKey("rk-an"), aoption.WithMaxRetries(0),
		aoption.WithHeader("X-Conversation-ID", conv))
	params := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("when do we fly on friday? " + strings.Repeat("the long part of the prompt ", 20)))}}
	ctx := context.Background()
	var msg anthropic.Message
	if stream {
		msg = e2etest.StreamMessage(t, client, params)
	} else {
		m, err := client.Messages.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		msg = *m
	}
	h.WaitDone(conv)
	if msg.StopReason != anthropic.StopReasonEndTurn {
		t.Fatalf("the client's answer: got stop reason %q, want end_turn (a whole answer)", msg.StopReason)
	}
	u := msg.Usage
	if u.CacheCreationInputTokens != wantCreated {
		t.Errorf("the client's usage: got cache_creation_input_tokens %d, want %d (%+v)", u.CacheCreationInputTokens, wantCreated, u)
	}
	if u.InputTokens <= 0 {
		t.Errorf("the client's usage: got input_tokens %d, want the uncached input, above 0", u.InputTokens)
	}
	all := u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens

	ctxFlush, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Exchanges.Flush(ctxFlush); err != nil {
		t.Fatalf("exchange records not written: %v", err)
	}
	var list struct {
		Data []struct {
			Kind   string `json:"kind"`
			Tokens struct {
				ReportedInput int64 `json:"reported_input"`
				Cached        int64 `json:"cached"`
				CacheCreation int64 `json:"cache_creation"`
			} `json:"tokens"`
		} `json:"data"`
	}
	h.API("rk-an", "", "GET", "/recall/v1/conversations/"+conv+"/exchanges", "").JSON(t, &list)
	var created, reported []int64
	for _, r := range list.Data { // newest first
		created = append([]int64{r.Tokens.CacheCreation}, created...)
		reported = append([]int64{r.Tokens.ReportedInput}, reported...)
	}
	wantRecords := []int64{40}
	if tools {
		wantRecords = []int64{40, 8} // the exchange's record is its first round's, a tool_round record the second's
	}
	if len(created) != len(wantRecords) || created[0] != wantRecords[0] || len(created) > 1 && created[1] != wantRecords[1] {
		t.Errorf("the records' tokens.cache_creation: got %v, want %v", created, wantRecords)
	}
	if !tools && (len(reported) != 1 || reported[0] != all) {
		t.Errorf("the record's tokens.reported_input: got %v, want %d (every input token the client was told of)", reported, all)
	}

	st := newSpanTree(flush())
	ex := st.exchange(conv, "gen_ai.provider.name", "anthropic")
	if ex == nil {
		t.Fatalf("no exchange span of %s among %d spans", conv, len(st.all))
	}
	want := map[string]any{"gen_ai.usage.cache_creation.input_tokens": int64(40)}
	if !tools {
		want["gen_ai.usage.input_tokens"] = all
		want["gen_ai.usage.cache_read.input_tokens"] = u.CacheReadInputTokens
	}
	wantAttrs(t, ex, want)
}
