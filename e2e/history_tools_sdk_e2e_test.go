package e2e

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// TestHistoryToolsOpenAISDKNeverSeesThem: the official OpenAI SDK, a
// streamed chat completion read with its accumulator and a streamed
// Responses call, over a tenant whose model searches its history first:
// the SDK parses each stream cleanly, holds no call of Recall's tools,
// and its final text is the final round's. The test logs the transcript
// of the chat exchange.
func TestHistoryToolsOpenAISDKNeverSeesThem(t *testing.T) {
	h := e2etest.New(t, toolTenants())
	ctx := context.Background()
	h.Say("rk-oa", "trip", "we fly to Lisbon on the ninth")
	client := h.Client("rk-oa", "sdk")
	search := upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{toolCall("search_conversations", `{"query":"Lisbon"}`)}}

	h.Up.Enqueue(search, upstreamtest.Reply{Content: "You fly to Lisbon on the ninth."})
	before := len(h.Up.Requests())
	p := e2etest.ChatParams(openai.UserMessage("when do we fly?"))
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := client.Chat.Completions.NewStreaming(ctx, p)
	var acc openai.ChatCompletionAccumulator
	ids := map[string]bool{}
	var chunks []string
	for stream.Next() {
		ch := stream.Current()
		ids[ch.ID] = true
		chunks = append(chunks, ch.RawJSON())
		if !acc.AddChunk(ch) {
			t.Fatalf("the accumulator refused chunk %s", ch.RawJSON())
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	h.WaitDone("sdk")
	msg := acc.Choices[0].Message
	if msg.Content != "You fly to Lisbon on the ninth." || len(msg.ToolCalls) != 0 || acc.Choices[0].FinishReason != "stop" {
		t.Errorf("accumulated %q with %d calls, finish %q; want the final round's text, no calls, stop",
			msg.Content, len(msg.ToolCalls), acc.Choices[0].FinishReason)
	}
	if len(ids) != 1 || acc.Usage.TotalTokens == 0 {
		t.Errorf("got chunk ids %v and usage %+v, want one id and the usage chunk", ids, acc.Usage)
	}
	reqs := h.Up.Requests()[before:]
	if len(reqs) != 2 || !reqs[0].Stream || !reqs[1].Stream {
		t.Fatalf("got %d upstream calls, want 2 streamed rounds", len(reqs))
	}
	if !strings.Contains(gjson.GetBytes(reqs[1].Body, "messages.2.content").String(), `"conversation_id":"trip"`) {
		t.Errorf("round 2 got %s, want the search hit on trip", gjson.GetBytes(reqs[1].Body, "messages").Raw)
	}
	t.Log("client sent: user: when do we fly? (stream, include_usage)")
	for i, q := range reqs {
		t.Logf("upstream round %d got messages: %s", i+1, gjson.GetBytes(q.Body, "messages").Raw)
	}
	for _, c := range chunks {
		t.Logf("client stream chunk: %s", c)
	}

	h.Up.Enqueue(search, upstreamtest.Reply{Content: "The ninth."})
	rs := client.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "gpt-4o",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("which day again?")}})
	var final responses.Response
	created := 0
	for rs.Next() {
		switch ev := rs.Current(); ev.Type {
		case "response.created":
			created++
		case "response.completed":
			final = ev.Response
		}
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	h.WaitDone("sdk")
	if final.OutputText() != "The ninth." || created != 1 || len(final.Output) != 1 || final.Output[0].Type != "message" {
		t.Errorf("Responses: got %q in %d output items (created %d times), want the final round's text in one message",
			final.OutputText(), len(final.Output), created)
	}
}

// TestHistoryToolsStreamIsLive: the client reads the first round's text
// while Recall's tool round is still upstream; the final round's text
// and the closing events follow in the same stream.
func TestHistoryToolsStreamIsLive(t *testing.T) {
	h := e2etest.New(t, toolTenants())
	h.Up.Enqueue(upstreamtest.Reply{Content: "Let me look. ", ToolCalls: []upstreamtest.ToolCall{toolCall("search_conversations", `{"query":"x"}`)}},
		upstreamtest.Reply{Content: "Found it.", Hold: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", h.URL+"/v1/chat/completions", strings.NewReader(chatClient.body([]string{chatClient.user("find x")}, true)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer rk-oa")
	req.Header.Set("X-Conversation-ID", "live")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var text, rest strings.Builder
	for text.String() != "Let me look. " && sc.Scan() {
		text.WriteString(gjson.Get(strings.TrimPrefix(sc.Text(), "data: "), "choices.0.delta.content").String())
	}
	if text.String() != "Let me look. " {
		t.Fatalf("got %q before the second round was answered (%v), want the first round's text", text.String(), sc.Err())
	}
	if err := h.Up.WaitStalled(ctx, 1); err != nil {
		t.Fatalf("the second round is not upstream: %v", err)
	}
	h.Up.Release()
	for sc.Scan() {
		rest.WriteString(sc.Text() + "\n")
	}
	_, data := sseEvents(rest.String())
	for _, d := range data {
		text.WriteString(gjson.Get(d, "choices.0.delta.content").String())
	}
	if text.String() != "Let me look. Found it." || data[len(data)-1] != "[DONE]" {
		t.Errorf("got %q ending %q, want both rounds' text and [DONE]", text.String(), data[len(data)-1])
	}
	if d := h.WaitDone("live"); !d.Committed {
		t.Errorf("the turn was not committed: %v", d.Err)
	}
}

// TestHistoryToolsAnthropicSDKNeverSeesThem: Anthropic's Go SDK streaming
// a Messages call over an Anthropic upstream whose model searches its
// history first accumulates one message: the final round's text, no
// tool_use, stop reason end_turn.
func TestHistoryToolsAnthropicSDKNeverSeesThem(t *testing.T) {
	h := e2etest.New(t, toolTenants())
	h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{toolCall("search_conversations", `{"query":"pelican"}`)}},
		upstreamtest.Reply{Content: "It was pelican."})
	client := anthropicClient(h, "rk-an", "asdk")
	acc := e2etest.StreamMessage(t, client, userMessage("claude-sonnet-4-5", "what was the code word?"))
	h.WaitDone("asdk")
	if len(acc.Content) != 1 || acc.Content[0].Type != "text" || acc.Content[0].Text != "It was pelican." || acc.StopReason != "end_turn" {
		t.Errorf("accumulated %+v (stop %q), want the final round's text alone, end_turn", acc.Content, acc.StopReason)
	}
	if n := len(h.Up.Requests()); n != 2 {
		t.Errorf("got %d upstream calls, want 2", n)
	}
}
