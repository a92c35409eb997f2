package proxy_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// noSummaries keeps background summaries out of tests that count the
// upstream's requests.
func noSummaries(g *config.Global) { g.Defaults.Summary.Enabled = false }

// TestConcurrentTurnsOnOneConversationAreSerialised sends 30 requests at
// once on one conversation, each carrying only its new message: every one
// must see all the turns committed before it, and every turn must be
// stored whole.
func TestConcurrentTurnsOnOneConversationAreSerialised(t *testing.T) {
	const n = 30
	h := newHarness(t, e2etest.Options{Global: noSummaries})
	// Runs before the harness's Shutdown: see the report on keep-alive
	// connections that go idle after Shutdown started.
	t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)
	c := h.Client(key, "busy-1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			msg := fmt.Sprintf("message %d", i)
			resp, err := c.Chat.Completions.New(ctx, e2etest.ChatParams(openai.UserMessage(msg)))
			if err == nil && resp.Choices[0].Message.Content != "echo: "+msg {
				err = fmt.Errorf("got answer %q, want %q", resp.Choices[0].Message.Content, "echo: "+msg)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("request %d: %v", i, err)
		}
	}

	stored := e2etest.Active(h.Stored(h.PassNamespace(key), "busy-1"))
	if len(stored) != 2*n {
		t.Fatalf("got %d stored messages, want %d: %q", len(stored), 2*n, stored)
	}
	seen := map[string]bool{}
	for turn := range n {
		u, a := stored[2*turn], stored[2*turn+1]
		text, ok := strings.CutPrefix(u, "user:")
		if !ok || a != "assistant:echo: "+text {
			t.Errorf("turn %d: got %q then %q, want a user message then its answer", turn+1, u, a)
		}
		if seen[text] {
			t.Errorf("turn %d: %q stored twice", turn+1, text)
		}
		seen[text] = true
	}

	reqs := h.Up.Requests()
	if len(reqs) != n {
		t.Fatalf("upstream got %d requests, want %d", len(reqs), n)
	}
	for pos, r := range reqs {
		got := e2etest.RenderAll(r.Messages)
		if len(got) != 2*pos+1 {
			t.Errorf("upstream request %d: got %d messages, want %d (every earlier turn)", pos, len(got), 2*pos+1)
			continue
		}
		// What it saw is exactly the stored history before its own turn.
		if !slices.Equal(got, stored[:2*pos+1]) {
			t.Errorf("upstream request %d: got %q, want %q", pos, got, stored[:2*pos+1])
		}
	}
}

// TestConversationsDoNotWaitOnEachOther stalls a stream on conversation A
// and completes a request on conversation B meanwhile.
func TestConversationsDoNotWaitOnEachOther(t *testing.T) {
	h := newHarness(t, e2etest.Options{Global: noSummaries})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	h.Up.Enqueue(upstreamtest.Reply{Fault: upstreamtest.FaultStallMidStream})
	a := h.send(key, "conv-a", e2etest.ChatBody("A stalls", true))
	defer a.Body.Close()
	if a.StatusCode != 200 {
		t.Fatalf("A: got status %d, want 200", a.StatusCode)
	}
	if err := h.Up.WaitStalled(ctx, 1); err != nil {
		t.Fatal(err)
	}

	// B completes while A holds its conversation's lock; if B waited on A
	// it would hang until the context's deadline and fail.
	cb := h.Client(key, "conv-b")
	b, err := cb.Chat.Completions.New(ctx, e2etest.ChatParams(openai.UserMessage("B goes")))
	if err != nil {
		t.Fatalf("B: %v", err)
	}
	if got, want := b.Choices[0].Message.Content, "echo: B goes"; got != want {
		t.Errorf("B: got %q, want %q", got, want)
	}
	if got := h.Up.Stalled(); got != 1 {
		t.Errorf("got %d stalled answers once B returned, want 1 (A still stalled)", got)
	}
	if got := len(h.Stored(h.PassNamespace(key), "conv-a")); got != 0 {
		t.Errorf("A: got %d stored messages while stalled, want 0", got)
	}

	h.Up.Release()
	body, err := io.ReadAll(a.Body)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(body), "data: [DONE]\n\n") {
		t.Errorf("A: got stream %q, want it whole", body)
	}
	if d := h.WaitDone("conv-a"); !d.Committed {
		t.Fatalf("A not committed: %v", d.Err)
	}
	if got, want := e2etest.Active(h.Stored(h.PassNamespace(key), "conv-a")), []string{"user:A stalls", "assistant:echo: A stalls"}; !slices.Equal(got, want) {
		t.Errorf("A: stored %q, want %q", got, want)
	}
}
