package proxy_test

import (
	"context"
	"slices"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/recallproxy/recall/internal/e2etest"
)

const key = "sk-client-1"

func optionBase(url string) option.RequestOption { return option.WithBaseURL(url) }

func TestDeltaClientSeesEarlierTurns(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	c := h.Client(key, "delta-1")
	ctx := context.Background()
	if _, err := c.Chat.Completions.New(ctx, e2etest.ChatParams(openai.SystemMessage("be brief"), openai.UserMessage("hello"))); err != nil {
		t.Fatal(err)
	}
	resp, err := c.Chat.Completions.New(ctx, e2etest.ChatParams(openai.SystemMessage("be brief"), openai.UserMessage("and again")))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := resp.Choices[0].Message.Content, "echo: and again"; got != want {
		t.Errorf("got answer %q, want %q", got, want)
	}
	got := e2etest.RenderAll(h.Up.Last().Messages)
	want := []string{"system:be brief", "user:hello", "assistant:echo: hello", "user:and again"}
	if !slices.Equal(got, want) {
		t.Errorf("upstream got %q, want %q", got, want)
	}
	stored := e2etest.Active(h.Stored(h.PassNamespace(key), "delta-1"))
	want = []string{"user:hello", "assistant:echo: hello", "user:and again", "assistant:echo: and again"}
	if !slices.Equal(stored, want) {
		t.Errorf("stored %q, want %q (instructions are never stored)", stored, want)
	}
}

func TestFullResendIsNotDuplicated(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	c := h.Client(key, "resend-1")
	ctx := context.Background()
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("one")}
	for _, next := range []string{"two", "three"} {
		resp, err := c.Chat.Completions.New(ctx, e2etest.ChatParams(msgs...))
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, resp.Choices[0].Message.ToParam(), openai.UserMessage(next))
	}
	if _, err := c.Chat.Completions.New(ctx, e2etest.ChatParams(msgs...)); err != nil {
		t.Fatal(err)
	}
	got := e2etest.RenderAll(h.Up.Last().Messages)
	want := []string{"user:one", "assistant:echo: one", "user:two", "assistant:echo: two", "user:three"}
	if !slices.Equal(got, want) {
		t.Errorf("upstream got %q, want %q", got, want)
	}
	stored := h.Stored(h.PassNamespace(key), "resend-1")
	if len(stored) != 6 {
		t.Errorf("stored %d messages, want 6: %q", len(stored), e2etest.Active(stored))
	}
}

func TestEditSupersedesStoredTail(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	c := h.Client(key, "edit-1")
	ctx := context.Background()
	first, err := c.Chat.Completions.New(ctx, e2etest.ChatParams(openai.UserMessage("one")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Chat.Completions.New(ctx, e2etest.ChatParams(openai.UserMessage("two"))); err != nil {
		t.Fatal(err)
	}
	// The client edits its second message: it resends from the start.
	edited := e2etest.ChatParams(openai.UserMessage("one"), first.Choices[0].Message.ToParam(), openai.UserMessage("two, edited"))
	if _, err := c.Chat.Completions.New(ctx, edited); err != nil {
		t.Fatal(err)
	}
	got := e2etest.RenderAll(h.Up.Last().Messages)
	want := []string{"user:one", "assistant:echo: one", "user:two, edited"}
	if !slices.Equal(got, want) {
		t.Errorf("upstream got %q, want %q", got, want)
	}
	all := h.Stored(h.PassNamespace(key), "edit-1")
	if got := e2etest.Active(all); !slices.Equal(got, []string{"user:one", "assistant:echo: one", "user:two, edited", "assistant:echo: two, edited"}) {
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
	h := newHarness(t, e2etest.Options{})
	c := h.Client(key, "")
	ctx := context.Background()
	for _, m := range []string{"a", "b"} {
		_, err := c.Chat.Completions.New(ctx, e2etest.ChatParams(openai.UserMessage(m)), optionBase(h.URL+"/c/prefixed.conv:1/v1"))
		if err != nil {
			t.Fatal(err)
		}
	}
	got := e2etest.RenderAll(h.Up.Last().Messages)
	if want := []string{"user:a", "assistant:echo: a", "user:b"}; !slices.Equal(got, want) {
		t.Errorf("upstream got %q, want %q", got, want)
	}
}

func TestNoConversationIsPlainProxy(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	c := h.Client(key, "")
	ctx := context.Background()
	for _, m := range []string{"a", "b"} {
		if _, err := c.Chat.Completions.New(ctx, e2etest.ChatParams(openai.UserMessage(m))); err != nil {
			t.Fatal(err)
		}
	}
	if got := e2etest.RenderAll(h.Up.Last().Messages); !slices.Equal(got, []string{"user:b"}) {
		t.Errorf("upstream got %q, want only the message sent", got)
	}
}

func TestOtherFieldsPassUntouched(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	body := `{"model":"gpt-4o",  "temperature":0.25,"messages":[{"role":"user","content":"hi"}],"x_unknown":{"a":[1,2]},"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`
	resp := h.Post("/v1/chat/completions", key, "fields-1", body)
	if resp.Status != 200 {
		t.Fatalf("status %d: %s", resp.Status, resp.Body)
	}
	got := string(h.Up.Last().Body)
	want := `{"model":"gpt-4o",  "temperature":0.25,"messages":[{"role":"user","content":"hi"}],"x_unknown":{"a":[1,2]},"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`
	if got != want {
		t.Errorf("upstream body\n got %s\nwant %s", got, want)
	}
}
