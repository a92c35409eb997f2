package proxy_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// A recorded stream stops at its first [DONE]: whatever a hostile upstream
// sends after it is neither relayed nor stored, so memory holds exactly
// what the client was shown, and the next turn does not replay it.
func TestStreamStopsAtTheFirstDone(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	conv := "after-done"
	h.Up.Enqueue(upstreamtest.Reply{Content: "the answer", Fault: upstreamtest.FaultEventsAfterDone})
	body := readAll(t, h.send(key, conv, e2etest.ChatBody("question", true)))
	if !strings.HasSuffix(body, "data: [DONE]\n\n") || strings.Count(body, "[DONE]") != 1 {
		t.Errorf("got a stream ending %q, want it to end at its first [DONE]", body[max(0, len(body)-200):])
	}
	if strings.Contains(body, upstreamtest.AfterDoneText) {
		t.Errorf("relayed %q, sent after [DONE]", upstreamtest.AfterDoneText)
	}
	if d := h.WaitDone(conv); !d.Committed || d.Err != nil {
		t.Fatalf("got %+v, want a committed turn", d)
	}
	want := []string{"user:question", "assistant:the answer"}
	if got := e2etest.Active(h.Stored(h.PassNamespace(key), conv)); !slices.Equal(got, want) {
		t.Errorf("stored %q, want %q", got, want)
	}
	h.Say(key, conv, "next")
	for _, m := range h.Up.Last().Messages {
		if strings.Contains(string(m), upstreamtest.AfterDoneText) {
			t.Errorf("the next turn sent %s upstream", m)
		}
	}
}

// A stream that ends cleanly after finish_reason without [DONE] (some
// compatible servers send none) is a complete answer: committed, and the
// client gets every event, finish_reason and usage included, as the
// upstream sent them (Recall adds no [DONE]). The official SDK reads it
// without error.
func TestStreamWithoutDoneAfterFinishIsComplete(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	conv := "no-done"
	h.Up.Enqueue(upstreamtest.Reply{Content: "all of it", Fault: upstreamtest.FaultNoDone})
	c := h.Client(key, conv)
	acc := e2etest.StreamChat(t, c, openai.ChatCompletionNewParams{ // the SDK's stream must end without an error
		Model:         "gpt-4o",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("question")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "all of it" || acc.Choices[0].FinishReason != "stop" {
		t.Errorf("the SDK assembled %+v, want the whole answer with finish_reason stop", acc.Choices)
	}
	if acc.Usage.TotalTokens == 0 {
		t.Errorf("the SDK got no usage chunk, want the upstream's")
	}
	if d := h.WaitDone(conv); !d.Committed || d.Err != nil || d.Status != 200 {
		t.Fatalf("got %+v, want a committed turn with status 200", d)
	}
	want := []string{"user:question", "assistant:all of it"}
	if got := e2etest.Active(h.Stored(h.PassNamespace(key), conv)); !slices.Equal(got, want) {
		t.Errorf("stored %q, want %q", got, want)
	}

	// Byte for byte: what the upstream sent, no error event, no [DONE].
	h.Up.Enqueue(upstreamtest.Reply{Content: "again", Fault: upstreamtest.FaultNoDone})
	body := readAll(t, h.send(key, conv, e2etest.ChatBody("raw", true)))
	if strings.Contains(body, "[DONE]") || strings.Contains(body, `"error"`) || !strings.Contains(body, `"finish_reason":"stop"`) {
		t.Errorf("got stream %q, want the finish chunk and neither [DONE] nor an error", body)
	}
	if d := h.WaitDone(conv); !d.Committed {
		t.Fatalf("got %+v, want a committed turn", d)
	}
}
