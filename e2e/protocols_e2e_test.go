package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/wire"
)

// threeUpstreams are three tenants, one per kind of upstream, over the one
// fake upstream (it serves chat completions, Responses and Messages).
func threeUpstreams() e2etest.Options {
	return e2etest.Options{Tenants: map[string]string{
		"oa.yaml": tenantYAML("oa", "openai"),
		"ch.yaml": tenantYAML("ch", "chat"),
		"an.yaml": tenantYAML("an", "anthropic"),
	}}
}

// tenantYAML is the file of a tenant id whose clients' key is rk-<id>,
// over the fake upstream with key sk-up-<id> in its protocol.
func tenantYAML(id, protocol string) string {
	return "id: " + id + "\napi_keys: [\"rk-" + id + "\"]\nupstream:\n  base_url: \"{{UPSTREAM}}\"\n  api_key: \"sk-up-" + id + "\"\n  protocol: " + protocol + "\n"
}

// anthropicTenant is the one tenant an of threeUpstreams, over an
// Anthropic upstream.
func anthropicTenant() e2etest.Options {
	return e2etest.Options{Tenants: map[string]string{"an.yaml": tenantYAML("an", "anthropic")}}
}

// texts renders each message the upstream got as role: text, whatever its
// protocol (chat messages, Responses items, Anthropic messages).
func texts(msgs []json.RawMessage) []string {
	out := make([]string, 0, len(msgs))
	for _, raw := range msgs {
		m := gjson.ParseBytes(raw)
		role := m.Get("role").String()
		if role == "" {
			role = m.Get("type").String()
		}
		var text []string
		c := m.Get("content")
		if c.Type == gjson.String {
			text = append(text, c.Str)
		}
		c.ForEach(func(_, p gjson.Result) bool {
			if t := p.Get("text"); t.Exists() {
				text = append(text, t.String())
			}
			return true
		})
		out = append(out, role+": "+strings.Join(text, " "))
	}
	return out
}

// wantTexts fails t unless msgs read, through texts, as want; what names
// the messages.
func wantTexts(t *testing.T, what string, msgs []json.RawMessage, want []string) {
	t.Helper()
	if got := texts(msgs); !slices.Equal(got, want) {
		t.Errorf("%s: got %q, want %q", what, got, want)
	}
}

// streamResponse streams a Responses request with the OpenAI SDK and
// returns the response its response.completed event carries.
func streamResponse(t *testing.T, client openai.Client, p responses.ResponseNewParams) responses.Response {
	t.Helper()
	stream := client.Responses.NewStreaming(context.Background(), p)
	var final responses.Response
	for stream.Next() {
		if ev := stream.Current(); ev.Type == "response.completed" {
			final = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	return final
}

// userMessage is a Messages request of model (100 tokens at most) that
// sends one user message, text.
func userMessage(model, text string) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{Model: model, MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))}}
}

// sayMessages sends text as one user message to model through client's
// Messages API, checks that the answer is the fake's echo of it (what
// names the answer), and waits for conv's exchange to finish.
func sayMessages(t *testing.T, h *e2etest.Harness, client anthropic.Client, conv, model, text, what string) {
	t.Helper()
	msg, err := client.Messages.New(context.Background(), userMessage(model, text))
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "echo: "+text {
		t.Errorf("%s: got %+v, want echo: %s", what, msg.Content, text)
	}
	h.WaitDone(conv)
}

func anthropicClient(h *e2etest.Harness, key, conv string) anthropic.Client {
	return anthropic.NewClient(aoption.WithBaseURL(h.URL), aoption.WithAPIKey(key), aoption.WithMaxRetries(0),
		aoption.WithHeader("X-Conversation-ID", conv))
}

// TestResponsesAPIRemembers: the Responses API through the official SDK,
// streamed and not, keeps a conversation over an OpenAI upstream that
// keeps no state: the second request carries the first turn as input
// items, with store false and no state of OpenAI's named.
func TestResponsesAPIRemembers(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	client := h.Client("rk-oa", "r1")
	first := ask(t, client, "my name is Ada", "")
	if !strings.HasPrefix(first.ID, "resp_") {
		t.Errorf("response id: got %q, want Recall's resp_ id", first.ID)
	}
	h.WaitDone("r1")

	final := streamResponse(t, client, responses.ResponseNewParams{Model: "gpt-4.1",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("what is my name?")}})
	if got := final.OutputText(); got != "echo: what is my name?" {
		t.Errorf("streamed answer: got %q, want %q", got, "echo: what is my name?")
	}
	h.WaitDone("r1")

	last := h.Up.Last()
	want := []string{"user: my name is Ada", "assistant: echo: my name is Ada", "user: what is my name?"}
	wantTexts(t, "second upstream input", last.Messages, want)
	body := gjson.ParseBytes(last.Body)
	if body.Get("store").Bool() || body.Get("previous_response_id").Exists() || body.Get("conversation").Exists() {
		t.Errorf("upstream body keeps state: %s", last.Body)
	}
	if last.Path != "/v1/responses" || last.Header.Get("Authorization") != "Bearer sk-up-oa" {
		t.Errorf("upstream call: got %s with %q, want /v1/responses with the tenant's key", last.Path, last.Header.Get("Authorization"))
	}
	stored := h.Stored("oa", "r1")
	if len(stored) != 4 {
		t.Fatalf("stored %d messages, want 4", len(stored))
	}
	for _, m := range stored {
		if m.Protocol != wire.Responses {
			t.Errorf("stored %s in protocol %v, want responses", m.Raw, m.Protocol)
		}
	}
}

// TestMessagesAPIRemembers: Anthropic's Messages API through the official
// SDK, streamed and not, over an Anthropic upstream: memory, the tenant's
// key as x-api-key, and answers the SDK reads.
func TestMessagesAPIRemembers(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	client := anthropicClient(h, "rk-an", "m1")
	sayMessages(t, h, client, "m1", "claude-sonnet-4-5", "my name is Ada", "first answer")

	acc := e2etest.StreamMessage(t, client, userMessage("claude-sonnet-4-5", "what is my name?"))
	if len(acc.Content) != 1 || acc.Content[0].Text != "echo: what is my name?" {
		t.Errorf("streamed answer: got %+v, want echo: what is my name?", acc.Content)
	}
	h.WaitDone("m1")

	last := h.Up.Last()
	want := []string{"user: my name is Ada", "assistant: echo: my name is Ada", "user: what is my name?"}
	wantTexts(t, "second upstream messages", gjsonArray(last.Body, "messages"), want)
	if last.Path != "/v1/messages" || last.Header.Get("X-Api-Key") != "sk-up-an" || last.Header.Get("Authorization") != "" {
		t.Errorf("upstream call: got %s with x-api-key %q, authorization %q; want /v1/messages with the tenant's key as x-api-key only",
			last.Path, last.Header.Get("X-Api-Key"), last.Header.Get("Authorization"))
	}
}

// TestOneHistoryAcrossProtocols: one conversation continued through chat
// completions, then Messages, then the Responses API, over a tenant whose
// upstream speaks only chat completions: every turn reaches the upstream
// translated, each client gets its own protocol's answer.
func TestOneHistoryAcrossProtocols(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	ctx := context.Background()
	chat := h.Client("rk-ch", "x1")
	if _, err := chat.Chat.Completions.New(ctx, e2etest.ChatParams(openai.UserMessage("one"))); err != nil {
		t.Fatal(err)
	}
	h.WaitDone("x1")
	ac := anthropicClient(h, "rk-ch", "x1")
	sayMessages(t, h, ac, "x1", "gpt-4o", "two", "Messages answer")
	oc := h.Client("rk-ch", "x1")
	ask(t, oc, "three", "", func(p *responses.ResponseNewParams) { p.Model = "gpt-4o" })
	h.WaitDone("x1")

	last := h.Up.Last()
	want := []string{"user: one", "assistant: echo: one", "user: two", "assistant: echo: two", "user: three"}
	if last.Path != "/v1/chat/completions" {
		t.Fatalf("upstream path: got %s, want /v1/chat/completions", last.Path)
	}
	wantTexts(t, "third upstream messages", last.Messages, want)
	var protos []wire.Protocol
	for _, m := range h.Stored("ch", "x1") {
		protos = append(protos, m.Protocol)
	}
	// Each answer is stored as its client received it.
	wantProtos := []wire.Protocol{wire.ChatCompletions, wire.ChatCompletions, wire.Messages, wire.Messages, wire.Responses, wire.Responses}
	if len(protos) != len(wantProtos) {
		t.Fatalf("stored protocols: got %v, want %v", protos, wantProtos)
	}
	for i := range protos {
		if protos[i] != wantProtos[i] {
			t.Errorf("stored message %d: got protocol %v, want %v", i, protos[i], wantProtos[i])
		}
	}
}

// TestChatClientOverAnthropic: a chat-completions client of a tenant whose
// upstream is Anthropic gets chat completions back, streamed and not,
// with memory.
func TestChatClientOverAnthropic(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	ctx := context.Background()
	client := h.Client("rk-an", "c1")
	got, err := client.Chat.Completions.New(ctx, e2etest.ChatParams(openai.UserMessage("hello")))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Choices) != 1 || got.Choices[0].Message.Content != "echo: hello" || got.Choices[0].FinishReason != "stop" {
		t.Errorf("answer: got %+v, want one choice echo: hello, stop", got.Choices)
	}
	h.WaitDone("c1")
	acc := e2etest.StreamChat(t, client, e2etest.ChatParams(openai.UserMessage("again")))
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "echo: again" {
		t.Errorf("streamed answer: got %+v, want echo: again", acc.Choices)
	}
	h.WaitDone("c1")
	last := h.Up.Last()
	want := []string{"user: hello", "assistant: echo: hello", "user: again"}
	wantTexts(t, "upstream messages", gjsonArray(last.Body, "messages"), want)
	if gjson.GetBytes(last.Body, "max_tokens").Int() != 4096 {
		t.Errorf("max_tokens: got %s, want 4096 filled in", gjson.GetBytes(last.Body, "max_tokens").Raw)
	}
}

func gjsonArray(body []byte, path string) []json.RawMessage {
	var out []json.RawMessage
	gjson.GetBytes(body, path).ForEach(func(_, v gjson.Result) bool {
		out = append(out, json.RawMessage(v.Raw))
		return true
	})
	return out
}

// TestMessagesCountTokens: count_tokens with a conversation counts what
// the next request would send (the stored turn included), without one the
// request alone; it calls no upstream and stores nothing.
func TestMessagesCountTokens(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	ctx := context.Background()
	client := anthropicClient(h, "rk-an", "k1")
	long := strings.Repeat("remember this sentence well. ", 40)
	if _, err := client.Messages.New(ctx, userMessage("claude-sonnet-4-5", long)); err != nil {
		t.Fatal(err)
	}
	h.WaitDone("k1")
	calls := h.Up.Count()
	params := anthropic.MessageCountTokensParams{Model: "claude-sonnet-4-5",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("and now?"))}}
	with, err := client.Messages.CountTokens(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	h.WaitDone("k1")
	bare := anthropic.NewClient(aoption.WithBaseURL(h.URL), aoption.WithAPIKey("rk-an"), aoption.WithMaxRetries(0))
	without, err := bare.Messages.CountTokens(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	h.WaitDone("")
	if without.InputTokens <= 0 || with.InputTokens < without.InputTokens+200 {
		t.Errorf("got %d tokens with the conversation and %d without, want the stored turn's 400-odd more",
			with.InputTokens, without.InputTokens)
	}
	if h.Up.Count() != calls {
		t.Errorf("count_tokens called the upstream: %d calls, want %d", h.Up.Count(), calls)
	}
	if n := len(h.Stored("an", "k1")); n != 2 {
		t.Errorf("stored %d messages, want the 2 of the first turn", n)
	}

	// X-Recall-History: off counts the request without the conversation.
	off, err := client.Messages.CountTokens(ctx, params, aoption.WithHeader("X-Recall-History", "off"))
	if err != nil {
		t.Fatal(err)
	}
	h.WaitDone("k1")
	if off.InputTokens != without.InputTokens {
		t.Errorf("X-Recall-History: off: got %d tokens, want the %d of the request alone", off.InputTokens, without.InputTokens)
	}
	// A request over the model's window is counted, not refused.
	huge := anthropic.MessageCountTokensParams{Model: "claude-sonnet-4-5",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(strings.Repeat("word ", 210000)))}}
	over, err := client.Messages.CountTokens(ctx, huge)
	if err != nil {
		t.Fatalf("counting a request over the window: %v", err)
	}
	h.WaitDone("k1")
	if over.InputTokens <= 200000 {
		t.Errorf("counting a request over the window: got %d tokens, want over 200,000", over.InputTokens)
	}
}

// TestMessagesToolLoopAndThinking: over an Anthropic upstream, an answer
// with signed thinking and a tool_use is stored whole; the client then
// sends only its tool_result, and the upstream (which checks that every
// tool_result answers the previous message's tool_use, and each thinking
// block's signature) gets the stored assistant message back, thinking and
// all (proxy's TestEncodePlanForAnotherProtocol: never to another
// provider).
func TestMessagesToolLoopAndThinking(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	ctx := context.Background()
	client := anthropicClient(h, "rk-an", "tl1")
	h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{{ID: "toolu_1", Name: "lookup", Arguments: `{"q":"x"}`}}})
	tool := anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{Name: "lookup",
		InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"q": map[string]any{"type": "string"}}}}}
	first, err := client.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 2000,
		Thinking: anthropic.ThinkingConfigParamOfEnabled(1024), Tools: []anthropic.ToolUnionParam{tool},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("look it up"))}})
	if err != nil {
		t.Fatal(err)
	}
	h.WaitDone("tl1")
	if first.StopReason != "tool_use" || len(first.Content) != 2 || first.Content[0].Type != "thinking" || first.Content[1].Type != "tool_use" {
		t.Fatalf("first answer: got %s with %+v, want thinking then tool_use", first.StopReason, first.Content)
	}
	result := anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_1", "42", false))
	second, err := client.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 2000,
		Thinking: anthropic.ThinkingConfigParamOfEnabled(1024), Tools: []anthropic.ToolUnionParam{tool},
		Messages: []anthropic.MessageParam{result}})
	if err != nil {
		t.Fatalf("tool_result alone: %v", err)
	}
	h.WaitDone("tl1")
	if second.StopReason != "end_turn" {
		t.Errorf("second answer: got %s, want end_turn", second.StopReason)
	}
	msgs := gjsonArray(h.Up.Last().Body, "messages")
	if len(msgs) != 3 {
		t.Fatalf("second upstream request: got %d messages %s, want user, assistant, tool_result", len(msgs), msgs)
	}
	assistant := gjson.ParseBytes(msgs[1])
	if assistant.Get("content.0.type").String() != "thinking" || assistant.Get("content.0.signature").String() == "" ||
		assistant.Get("content.1.id").String() != "toolu_1" {
		t.Errorf("replayed assistant message: got %s, want its signed thinking and its tool_use", msgs[1])
	}

	var sawThinking bool
	for _, m := range h.Stored("an", "tl1") {
		sawThinking = sawThinking || strings.Contains(string(m.Raw), `"thinking"`)
	}
	if !sawThinking {
		t.Error("the stored answer lost its thinking block")
	}
}

// TestResendAcrossProtocolsIsNotDoubled: a client that resends its whole
// history each call (as coding agents do) in another protocol than its
// upstream's is deduplicated: the answer is stored as the client got it.
// A client that switches protocol mid-conversation and resends everything
// is recognised too (plain messages hash alike in every protocol).
func TestResendAcrossProtocolsIsNotDoubled(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	ctx := context.Background()
	ac := anthropicClient(h, "rk-ch", "rs1")
	user := func(s string) anthropic.MessageParam { return anthropic.NewUserMessage(anthropic.NewTextBlock(s)) }
	asst := func(s string) anthropic.MessageParam { return anthropic.NewAssistantMessage(anthropic.NewTextBlock(s)) }
	send := func(msgs ...anthropic.MessageParam) {
		t.Helper()
		if _, err := ac.Messages.New(ctx, anthropic.MessageNewParams{Model: "gpt-4o", MaxTokens: 100, Messages: msgs}); err != nil {
			t.Fatal(err)
		}
		h.WaitDone("rs1")
	}
	send(user("one"))
	send(user("one"), asst("echo: one"), user("two"))
	want := []string{"user: one", "assistant: echo: one", "user: two"}
	wantTexts(t, "Messages over chat, full resend: upstream", h.Up.Last().Messages, want)
	if n := len(h.Stored("ch", "rs1")); n != 4 {
		t.Errorf("Messages over chat, full resend: stored %d messages, want 4", n)
	}

	// Switching to chat completions with the whole history resent.
	oc := h.Client("rk-ch", "rs1")
	if _, err := oc.Chat.Completions.New(ctx, e2etest.ChatParams(openai.UserMessage("one"), openai.AssistantMessage("echo: one"),
		openai.UserMessage("two"), openai.AssistantMessage("echo: two"), openai.UserMessage("three"))); err != nil {
		t.Fatal(err)
	}
	h.WaitDone("rs1")
	if n := len(h.Stored("ch", "rs1")); n != 6 {
		t.Errorf("switched to chat, full resend: stored %d messages, want 6", n)
	}
	if got := len(h.Up.Last().Messages); got != 5 {
		t.Errorf("switched to chat, full resend: upstream got %d messages, want 5", got)
	}
}

// TestResponsesAgentOverChatResendsParallelCalls: a Responses client over a
// chat upstream gets two parallel calls as two function_call items, runs
// them and resends every item with both outputs (as agents with store
// false do): nothing is stored twice and the upstream gets one assistant
// message with both calls, then both results.
func TestResponsesAgentOverChatResendsParallelCalls(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{{ID: "call_a", Name: "f", Arguments: `{"x":1}`}, {ID: "call_b", Name: "g", Arguments: `{}`}}})
	headers := map[string]string{"Authorization": "Bearer rk-ch", "X-Conversation-ID": "pc1", "Content-Type": "application/json"}
	tools := `"tools":[{"type":"function","name":"f","parameters":{"type":"object"}},{"type":"function","name":"g","parameters":{"type":"object"}}]`
	first := h.PostHeaders("/v1/responses", headers, `{"model":"gpt-4o",`+tools+`,"input":[{"role":"user","content":"do both"}]}`)
	if first.Status != 200 {
		t.Fatalf("first call: %d %s", first.Status, first.Body)
	}
	h.WaitDone("pc1")
	var calls []string
	gjson.Get(first.Body, "output").ForEach(func(_, it gjson.Result) bool {
		if it.Get("type").String() == "function_call" {
			calls = append(calls, it.Raw)
		}
		return true
	})
	if len(calls) != 2 {
		t.Fatalf("first answer: got %d function calls in %s, want 2", len(calls), first.Body)
	}
	resend := `{"model":"gpt-4o",` + tools + `,"input":[{"role":"user","content":"do both"},` + calls[0] + `,` + calls[1] +
		`,{"type":"function_call_output","call_id":"call_a","output":"1"},{"type":"function_call_output","call_id":"call_b","output":"2"}]}`
	second := h.PostHeaders("/v1/responses", headers, resend)
	if second.Status != 200 {
		t.Fatalf("resend: %d %s", second.Status, second.Body)
	}
	h.WaitDone("pc1")
	if n := len(h.Stored("ch", "pc1")); n != 6 {
		t.Errorf("stored %d messages, want 6 (user, two calls, two outputs, answer)", n)
	}
	got := h.Up.Last().Messages
	if len(got) != 4 || gjson.GetBytes(got[1], "tool_calls.#").Int() != 2 ||
		gjson.GetBytes(got[2], "tool_call_id").String() != "call_a" || gjson.GetBytes(got[3], "tool_call_id").String() != "call_b" {
		t.Errorf("upstream messages: got %s, want user, one assistant message with both calls, both results", got)
	}
}

// TestAnthropicPromptCacheHits: over an Anthropic upstream, Recall marks
// the end of the curated history with a cache breakpoint, so from the
// third turn on the upstream reads the stable prefix from its prompt cache
// (the fake plays Anthropic's cache), and /metrics counts the cached
// tokens. The client set no breakpoint of its own.
func TestAnthropicPromptCacheHits(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	ctx := context.Background()
	client := anthropicClient(h, "rk-an", "pc-1")
	var cached []int64
	for _, q := range []string{"first question " + strings.Repeat("x ", 200), "second", "third", "fourth"} {
		msg, err := client.Messages.New(ctx, userMessage("claude-sonnet-4-5", q))
		if err != nil {
			t.Fatal(err)
		}
		h.WaitDone("pc-1")
		cached = append(cached, msg.Usage.CacheReadInputTokens)
	}
	if cached[0] != 0 || cached[1] != 0 || cached[2] < 100 || cached[3] <= cached[2] {
		t.Errorf("cache_read_input_tokens per turn: got %v, want 0, 0, then a growing cached prefix", cached)
	}
	if got := h.Metric(`recall_upstream_tokens_total{kind="cached",tenant="an",upstream="messages"}`); got != float64(cached[2]+cached[3]) {
		t.Errorf("recall_upstream_tokens_total cached: got %v, want %d", got, cached[2]+cached[3])
	}
}

// TestMessagesPlainPathSendsTheBodyAsItCame: a Messages request that
// names no conversation goes to an Anthropic upstream byte for byte as
// the client sent it (white space, member order, members Recall does not
// read); one whose tool results came split over two user messages goes
// with them joined into one, as Anthropic wants them.
func TestMessagesPlainPathSendsTheBodyAsItCame(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	headers := map[string]string{"Content-Type": "application/json", "X-Api-Key": "rk-an", "Anthropic-Version": "2023-06-01"}
	body := "{ \"max_tokens\" : 100,\n \"x_unknown\": {\"a\": [1, 2]},\n\t\"model\": \"claude-sonnet-4-5\", \"messages\": [ {\"role\": \"user\", \"content\": \"hi\"} ] }"
	if r := h.PostHeaders("/v1/messages", headers, body); r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	if got := string(h.Up.Last().Body); got != body {
		t.Errorf("upstream body\n got %s\nwant %s", got, body)
	}

	split := `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"look"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_a","name":"f","input":{}},{"type":"tool_use","id":"toolu_b","name":"f","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_a","content":"ra"}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_b","content":"rb"}]}]}`
	if r := h.PostHeaders("/v1/messages", headers, split); r.Status != 200 {
		t.Fatalf("split results: status %d: %s", r.Status, r.Body)
	}
	msgs := gjsonArray(h.Up.Last().Body, "messages")
	if len(msgs) != 3 || gjson.GetBytes(msgs[2], "content.#").Int() != 2 {
		t.Errorf("split results: upstream got %d messages, want 3, the last with both results: %s", len(msgs), h.Up.Last().Body)
	}
}

// TestStreamedAnswersKeepTheUpstreamConnection: a streamed answer read to
// its last event leaves the upstream connection reusable, in every
// protocol: a client's requests one after another reach the upstream
// over the connection the first opened.
func TestStreamedAnswersKeepTheUpstreamConnection(t *testing.T) {
	for _, c := range []struct{ name, path, key, body string }{
		{"chat", "/v1/chat/completions", "rk-ch", `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi %d"}]}`},
		{"responses", "/v1/responses", "rk-oa", `{"model":"gpt-4o-mini","stream":true,"input":"hi %d"}`},
		{"messages", "/v1/messages", "rk-an", `{"model":"claude-sonnet-4-5","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi %d"}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := e2etest.New(t, threeUpstreams())
			headers := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + c.key,
				"X-Api-Key": c.key, "Anthropic-Version": "2023-06-01", "X-Conversation-ID": "keep-" + c.name}
			conns := 0
			for i := range 4 {
				if r := h.PostHeaders(c.path, headers, fmt.Sprintf(c.body, i)); r.Status != 200 {
					t.Fatalf("request %d: status %d: %s", i, r.Status, r.Body)
				}
				h.WaitDone("keep-" + c.name)
				if i == 0 {
					conns = h.Up.Conns()
				}
			}
			if got := h.Up.Conns(); got != conns {
				t.Errorf("upstream connections: %d after the first request, %d after four", conns, got)
			}
		})
	}
}
