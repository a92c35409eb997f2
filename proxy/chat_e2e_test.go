package proxy_test

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
)

const key = "sk-client-1"

func params(msgs ...openai.ChatCompletionMessageParamUnion) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: msgs}
}

func TestDeltaClientSeesEarlierTurns(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	c := h.client(key, "delta-1")
	ctx := context.Background()
	if _, err := c.Chat.Completions.New(ctx, params(openai.SystemMessage("be brief"), openai.UserMessage("hello"))); err != nil {
		t.Fatal(err)
	}
	resp, err := c.Chat.Completions.New(ctx, params(openai.SystemMessage("be brief"), openai.UserMessage("and again")))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := resp.Choices[0].Message.Content, "echo: and again"; got != want {
		t.Errorf("got answer %q, want %q", got, want)
	}
	got := renderAll(h.up.Last().Messages)
	want := []string{"system:be brief", "user:hello", "assistant:echo: hello", "user:and again"}
	if !equalStrings(got, want) {
		t.Errorf("upstream got %q, want %q", got, want)
	}
	stored := active(h.stored(h.passNamespace(key), "delta-1"))
	want = []string{"user:hello", "assistant:echo: hello", "user:and again", "assistant:echo: and again"}
	if !equalStrings(stored, want) {
		t.Errorf("stored %q, want %q (instructions are never stored)", stored, want)
	}
}

func TestFullResendIsNotDuplicated(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	c := h.client(key, "resend-1")
	ctx := context.Background()
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("one")}
	for _, next := range []string{"two", "three"} {
		resp, err := c.Chat.Completions.New(ctx, params(msgs...))
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, resp.Choices[0].Message.ToParam(), openai.UserMessage(next))
	}
	if _, err := c.Chat.Completions.New(ctx, params(msgs...)); err != nil {
		t.Fatal(err)
	}
	got := renderAll(h.up.Last().Messages)
	want := []string{"user:one", "assistant:echo: one", "user:two", "assistant:echo: two", "user:three"}
	if !equalStrings(got, want) {
		t.Errorf("upstream got %q, want %q", got, want)
	}
	stored := h.stored(h.passNamespace(key), "resend-1")
	if len(stored) != 6 {
		t.Errorf("stored %d messages, want 6: %q", len(stored), active(stored))
	}
}

func TestEditSupersedesStoredTail(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	c := h.client(key, "edit-1")
	ctx := context.Background()
	first, err := c.Chat.Completions.New(ctx, params(openai.UserMessage("one")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Chat.Completions.New(ctx, params(openai.UserMessage("two"))); err != nil {
		t.Fatal(err)
	}
	// The client edits its second message: it resends from the start.
	edited := params(openai.UserMessage("one"), first.Choices[0].Message.ToParam(), openai.UserMessage("two, edited"))
	if _, err := c.Chat.Completions.New(ctx, edited); err != nil {
		t.Fatal(err)
	}
	got := renderAll(h.up.Last().Messages)
	want := []string{"user:one", "assistant:echo: one", "user:two, edited"}
	if !equalStrings(got, want) {
		t.Errorf("upstream got %q, want %q", got, want)
	}
	all := h.stored(h.passNamespace(key), "edit-1")
	if got := active(all); !equalStrings(got, []string{"user:one", "assistant:echo: one", "user:two, edited", "assistant:echo: two, edited"}) {
		t.Errorf("active history %q", got)
	}
	superseded := 0
	for _, m := range all {
		if !m.Active() {
			superseded++
		}
	}
	if superseded != 2 {
		t.Errorf("got %d superseded messages, want 2 (kept, recoverable)", superseded)
	}
}

func TestPathPrefixNamesConversation(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	c := h.client(key, "")
	ctx := context.Background()
	for _, m := range []string{"a", "b"} {
		_, err := c.Chat.Completions.New(ctx, params(openai.UserMessage(m)), optionBase(h.url+"/c/prefixed.conv:1/v1"))
		if err != nil {
			t.Fatal(err)
		}
	}
	got := renderAll(h.up.Last().Messages)
	if want := []string{"user:a", "assistant:echo: a", "user:b"}; !equalStrings(got, want) {
		t.Errorf("upstream got %q, want %q", got, want)
	}
}

func TestNoConversationIsPlainProxy(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	c := h.client(key, "")
	ctx := context.Background()
	for _, m := range []string{"a", "b"} {
		if _, err := c.Chat.Completions.New(ctx, params(openai.UserMessage(m))); err != nil {
			t.Fatal(err)
		}
	}
	if got := renderAll(h.up.Last().Messages); !equalStrings(got, []string{"user:b"}) {
		t.Errorf("upstream got %q, want only the message sent", got)
	}
}

func TestOtherFieldsPassUntouched(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	body := `{"model":"gpt-4o",  "temperature":0.25,"messages":[{"role":"user","content":"hi"}],"x_unknown":{"a":[1,2]},"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`
	resp := h.post("/v1/chat/completions", key, "fields-1", body)
	if resp.status != 200 {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	got := string(h.up.Last().Body)
	want := `{"model":"gpt-4o",  "temperature":0.25,"messages":[{"role":"user","content":"hi"}],"x_unknown":{"a":[1,2]},"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`
	if got != want {
		t.Errorf("upstream body\n got %s\nwant %s", got, want)
	}
}
