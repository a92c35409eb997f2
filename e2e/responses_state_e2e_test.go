package e2e

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/e2etest"
)

// ask sends input as a Responses request through the SDK, chained on
// previous (if not ""), and returns the response.
func ask(t *testing.T, client openai.Client, input, previous string, opts ...func(*responses.ResponseNewParams)) *responses.Response {
	t.Helper()
	p := responses.ResponseNewParams{Model: "gpt-4.1", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(input)}}
	if previous != "" {
		p.PreviousResponseID = openai.String(previous)
	}
	for _, o := range opts {
		o(&p)
	}
	r, err := client.Responses.New(context.Background(), p)
	if err != nil {
		t.Fatalf("ask %q: %v", input, err)
	}
	if want := "echo: " + input; r.OutputText() != want {
		t.Errorf("answer to %q: got %q, want %q", input, r.OutputText(), want)
	}
	return r
}

// apiError returns err's OpenAI error (failing the test if it is not
// one).
func apiError(t *testing.T, err error) *openai.Error {
	t.Helper()
	var e *openai.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want an API error", err)
	}
	return e
}

// Chaining by previous_response_id alone, no conversation header: Recall
// records the first exchange in a conversation of its own and each
// response id continues it. The upstream keeps no state (store false, no
// previous_response_id): its third request carries every turn.
func TestResponsesChainWithoutHeader(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	client := h.Client("rk-oa", "")
	r1 := ask(t, client, "one", "")
	if r1.Conversation.ID == "" || !strings.HasPrefix(r1.Conversation.ID, "conv_") {
		t.Fatalf("first response's conversation: got %q, want a conv_ id of Recall's", r1.Conversation.ID)
	}
	r2 := ask(t, client, "two", r1.ID)
	r3 := ask(t, client, "three", r2.ID)
	if r2.Conversation.ID != r1.Conversation.ID || r3.Conversation.ID != r1.Conversation.ID {
		t.Errorf("conversations: got %q, %q, %q; want one", r1.Conversation.ID, r2.Conversation.ID, r3.Conversation.ID)
	}
	if r1.ID == r2.ID || r2.ID == r3.ID {
		t.Errorf("response ids repeat: %q, %q, %q", r1.ID, r2.ID, r3.ID)
	}
	last := h.Up.Last()
	want := []string{"user: one", "assistant: echo: one", "user: two", "assistant: echo: two", "user: three"}
	if got := texts(last.Messages); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("third upstream input: got %q, want %q", got, want)
	}
	body := gjson.ParseBytes(last.Body)
	if body.Get("store").Type != gjson.False || body.Get("previous_response_id").Exists() || body.Get("conversation").Exists() {
		t.Errorf("upstream body keeps state: %s", last.Body)
	}
	if n := len(h.Stored("oa", r1.Conversation.ID)); n != 6 {
		t.Errorf("stored %d messages, want 6", n)
	}
}

var _ = http.StatusOK
