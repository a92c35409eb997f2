package upstreamtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// sdkClient is the official Go SDK pointed at the fake. The SDK appends
// /v1/messages to its base URL, as to Anthropic's root.
func sdkClient(s *upstreamtest.Server, opts ...option.RequestOption) anthropic.Client {
	base := strings.TrimSuffix(s.URL(), "/v1")
	return anthropic.NewClient(append([]option.RequestOption{option.WithBaseURL(base), option.WithAPIKey("sk-ant-test"), option.WithMaxRetries(0)}, opts...)...)
}

func userParams(text string) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 256,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))},
	}
}

// The SDK reads the fake's Message, streamed or not, and the request is
// recorded with its headers.
func TestMessagesEchoSDK(t *testing.T) {
	s := upstreamtest.NewTB(t)
	c := sdkClient(s)
	m, err := c.Messages.New(context.Background(), userParams("hello there"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Content) != 1 || m.Content[0].Text != "echo: hello there" || m.StopReason != anthropic.StopReasonEndTurn || !strings.HasPrefix(m.ID, "msg_") {
		t.Errorf("got %+v", m)
	}
	rec := s.Last()
	if rec.Path != "/v1/messages" || rec.Header.Get("X-Api-Key") != "sk-ant-test" || rec.Header.Get("Anthropic-Version") == "" ||
		rec.Model != "claude-sonnet-4-5" || len(rec.Messages) != 1 || rec.Rejected != nil {
		t.Errorf("recorded %+v", rec)
	}

	acc := e2etest.StreamMessage(t, c, userParams("stream me"))
	if len(acc.Content) != 1 || acc.Content[0].Text != "echo: stream me" || acc.StopReason != anthropic.StopReasonEndTurn || !s.Last().Stream {
		t.Errorf("streamed: got %+v", acc)
	}
}

// Scripted tool calls come back as tool_use blocks, with thinking first
// when the request enables it, signed as ThinkingSignature says.
func TestMessagesToolUseAndThinkingSDK(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		s := upstreamtest.NewTB(t)
		s.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{{Name: "get_weather", Arguments: `{"city":"Paris"}`}}})
		c := sdkClient(s)
		p := userParams("weather?")
		p.Thinking = anthropic.ThinkingConfigParamOfEnabled(1024)
		var m anthropic.Message
		if streamed {
			stream := c.Messages.NewStreaming(context.Background(), p)
			for stream.Next() {
				if err := m.Accumulate(stream.Current()); err != nil {
					t.Fatal(err)
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
		} else {
			got, err := c.Messages.New(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			m = *got
		}
		if len(m.Content) != 2 || m.Content[0].Type != "thinking" || m.Content[1].Type != "tool_use" {
			t.Fatalf("streamed %v: got %+v", streamed, m.Content)
		}
		if got, want := m.Content[0].Signature, upstreamtest.ThinkingSignature(m.Content[0].Thinking); got != want || got == "" {
			t.Errorf("streamed %v: signature got %q, want %q", streamed, got, want)
		}
		var in struct{ City string }
		if err := json.Unmarshal(m.Content[1].Input, &in); err != nil || in.City != "Paris" || m.StopReason != anthropic.StopReasonToolUse {
			t.Errorf("streamed %v: got input %s stop %q", streamed, m.Content[1].Input, m.StopReason)
		}

		// Sent back as they came, the thinking and tool_use blocks are
		// accepted with the tool's result.
		next := userParams("weather?")
		next.Messages = append(next.Messages, m.ToParam(),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock(m.Content[1].ID, "15C", false)))
		if _, err := c.Messages.New(context.Background(), next); err != nil {
			t.Errorf("streamed %v: sending the answer back: %v", streamed, err)
		}
	}
}

func post(t *testing.T, s *upstreamtest.Server, header map[string]string, body string) (int, gjson.Result) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/messages", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", "k")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, gjson.ParseBytes(b)
}

func TestMessagesValidation(t *testing.T) {
	sig := upstreamtest.ThinkingSignature("hm")
	ok := `{"role":"user","content":"hi"}`
	call := `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{}}]}`
	result := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"r"}]}`
	cc := `,"cache_control":{"type":"ephemeral"}`
	body := func(msgs ...string) string {
		return `{"model":"claude","max_tokens":10,"messages":[` + strings.Join(msgs, ",") + `]}`
	}
	tests := []struct {
		name   string
		header map[string]string
		body   string
		status int
		want   string // in the error message
	}{
		{"valid", nil, body(ok), 200, ""},
		{"no api key", map[string]string{"X-Api-Key": ""}, body(ok), 401, "x-api-key"},
		{"no version", map[string]string{"Anthropic-Version": ""}, body(ok), 400, "anthropic-version"},
		{"no max_tokens", nil, `{"model":"claude","messages":[` + ok + `]}`, 400, "max_tokens: Field required"},
		{"no model", nil, `{"max_tokens":10,"messages":[` + ok + `]}`, 400, "model: Field required"},
		{"no messages", nil, `{"model":"claude","max_tokens":10}`, 400, "messages: Field required"},
		{"first is assistant", nil, body(`{"role":"assistant","content":"x"}`, ok), 400, "first message"},
		{"two users", nil, body(ok, ok), 400, "alternate"},
		{"tool use answered", nil, body(ok, call, result), 200, ""},
		{"tool use unanswered", nil, body(ok, call, ok), 400, "without `tool_result`"},
		{"tool use last", nil, body(ok, call), 400, "without `tool_result`"},
		{"orphan tool result", nil, body(ok, `{"role":"assistant","content":"x"}`, result), 400, "unexpected `tool_use_id`"},
		{"four breakpoints", nil, `{"model":"c","max_tokens":1,"system":[{"type":"text","text":"s"` + cc + `}],"messages":[{"role":"user","content":[{"type":"text","text":"a"` + cc + `},{"type":"text","text":"b"` + cc + `},{"type":"text","text":"c"` + cc + `}]}]}`, 200, ""},
		{"five breakpoints", nil, `{"model":"c","max_tokens":1,"system":[{"type":"text","text":"s"` + cc + `}],"tools":[{"name":"f","input_schema":{"type":"object"}` + cc + `}],"messages":[{"role":"user","content":[{"type":"text","text":"a"` + cc + `},{"type":"text","text":"b"` + cc + `},{"type":"text","text":"c"` + cc + `}]}]}`, 400, "Found 5"},
		{"top-level and three breakpoints", nil, `{"model":"c","max_tokens":1` + cc + `,"system":[{"type":"text","text":"s"` + cc + `}],"messages":[{"role":"user","content":[{"type":"text","text":"a"` + cc + `},{"type":"text","text":"b"` + cc + `}]}]}`, 200, ""},
		{"top-level and four breakpoints", nil, `{"model":"c","max_tokens":1` + cc + `,"system":[{"type":"text","text":"s"` + cc + `}],"messages":[{"role":"user","content":[{"type":"text","text":"a"` + cc + `},{"type":"text","text":"b"` + cc + `},{"type":"text","text":"c"` + cc + `}]}]}`, 400, "A maximum of 4 blocks with cache_control may be provided. Found 5."},
		{"top-level null", nil, `{"model":"c","max_tokens":1,"cache_control":null,"system":[{"type":"text","text":"s"` + cc + `}],"messages":[{"role":"user","content":[{"type":"text","text":"a"` + cc + `},{"type":"text","text":"b"` + cc + `},{"type":"text","text":"c"` + cc + `}]}]}`, 200, ""},
		{"system message without beta", nil, body(ok, `{"role":"system","content":"brief"}`, `{"role":"assistant","content":"x"}`), 400, `Unexpected role "system". The Messages API accepts a top-level ` + "`system`" + ` parameter, not "system" as an input message role.`},
		{"unknown role", nil, body(ok, `{"role":"tool","content":"x"}`), 400, "messages.1.role: Input should be 'user' or 'assistant'"},
		{"system message with beta", map[string]string{"Anthropic-Beta": "other-beta, " + upstreamtest.SystemMessagesBeta}, body(ok, `{"role":"system","content":"brief"}`, `{"role":"assistant","content":"x"}`, ok), 200, ""},
		{"good signature", nil, body(ok, `{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"`+sig+`"},{"type":"text","text":"x"}]}`, ok), 200, ""},
		{"wrong signature", nil, body(ok, `{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"forged"},{"type":"text","text":"x"}]}`, ok), 400, "signature"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := upstreamtest.NewTB(t)
			status, got := post(t, s, tt.header, tt.body)
			if status != tt.status {
				t.Fatalf("got %d %s, want %d", status, got.Raw, tt.status)
			}
			if tt.status == 200 {
				if got.Get("type").Str != "message" {
					t.Errorf("got %s, want a message", got.Raw)
				}
				return
			}
			if got.Get("type").Str != "error" || !strings.Contains(got.Get("error.message").Str, tt.want) {
				t.Errorf("got %s, want an Anthropic error saying %q", got.Raw, tt.want)
			}
			wantType := "invalid_request_error"
			if tt.status == 401 {
				wantType = "authentication_error"
			}
			if got.Get("error.type").Str != wantType {
				t.Errorf("error type: got %q, want %q", got.Get("error.type").Str, wantType)
			}
			if s.Last().Rejected == nil {
				t.Error("the rejection is not recorded")
			}
		})
	}
}

// Scripted faults reach the SDK as Anthropic's errors.
func TestMessagesFaults(t *testing.T) {
	s := upstreamtest.NewTB(t)
	c := sdkClient(s)
	s.Enqueue(upstreamtest.Reply{Status: 529})
	_, err := c.Messages.New(context.Background(), userParams("x"))
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 529 || !strings.Contains(apiErr.RawJSON(), "overloaded_error") {
		t.Errorf("529: got %v", err)
	}
	s.Enqueue(upstreamtest.Reply{Fault: upstreamtest.FaultErrorEvent, Content: "a long enough answer to cut"})
	stream := c.Messages.NewStreaming(context.Background(), userParams("x"))
	for stream.Next() {
	}
	if err := stream.Err(); err == nil || !strings.Contains(err.Error(), "overloaded") {
		t.Errorf("error event: got %v, want the overloaded error", err)
	}
}

// Adaptive thinking (what Claude Code asks for) is answered with a signed
// thinking block too; a request without thinking gets none.
func TestMessagesAdaptiveThinking(t *testing.T) {
	tests := []struct {
		name, thinking string
		want           []string
	}{
		{"adaptive", `,"thinking":{"type":"adaptive"}`, []string{"thinking", "text"}},
		{"enabled", `,"thinking":{"type":"enabled","budget_tokens":1024}`, []string{"thinking", "text"}},
		{"none", ``, []string{"text"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := upstreamtest.NewTB(t)
			status, got := post(t, s, nil, `{"model":"claude","max_tokens":10`+tt.thinking+`,"messages":[{"role":"user","content":"hi"}]}`)
			if status != 200 {
				t.Fatalf("got %d %s, want 200", status, got.Raw)
			}
			var types []string
			for _, b := range got.Get("content").Array() {
				types = append(types, b.Get("type").Str)
			}
			if strings.Join(types, ",") != strings.Join(tt.want, ",") {
				t.Errorf("content: got %v, want %v", types, tt.want)
			}
			if th := got.Get("content.0"); th.Get("type").Str == "thinking" && th.Get("signature").Str != upstreamtest.ThinkingSignature(th.Get("thinking").Str) {
				t.Errorf("signature: got %s, want ThinkingSignature of its text", th.Raw)
			}
		})
	}
}
