package e2e

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/proxy"
)

// failingCommits is a Store whose commits fail or hang while armed.
type failingCommits struct {
	history.Store
	armed atomic.Bool
	hang  bool          // hang (ignoring the context, as a stuck disk does) rather than fail
	stop  chan struct{} // releases hung commits at the end of the test
}

func (s *failingCommits) Commit(ctx context.Context, k history.Key, c history.Change) (history.Meta, error) {
	if s.armed.Load() {
		if s.hang {
			<-s.stop
			return history.Meta{}, errors.New("released at the end of the test")
		}
		return history.Meta{}, errors.New("disk on fire")
	}
	return s.Store.Commit(ctx, k, c)
}

// commitFaults are the two ways a commit goes wrong: it fails, or it hangs
// past the commit timeout.
var commitFaults = []string{"fails", "hangs"}

// commitFailureHarness is threeUpstreams over a store whose commits fail
// (or hang) once armed.
func commitFailureHarness(t *testing.T, fault string) (*e2etest.Harness, *failingCommits) {
	t.Helper()
	fc := &failingCommits{hang: fault == "hangs", stop: make(chan struct{})}
	t.Cleanup(func() { close(fc.stop) })
	o := threeUpstreams()
	o.Proxy = func(c *proxy.Config) {
		fc.Store = c.Store
		c.Store = fc
		// Past the timeout a hung commit fails the exchange; a working one
		// (the retry's) must come in well within it, even with -race on a
		// machine busy with the other suites' fsyncs.
		c.CommitTimeout = time.Second
	}
	return e2etest.New(t, o), fc
}

// runCommitFaults runs test over every commit fault and each of tenants,
// each a subtest (fault/tenant) with its own commitFailureHarness.
func runCommitFaults(t *testing.T, tenants []string, test func(t *testing.T, h *e2etest.Harness, fc *failingCommits, tenant string)) {
	for _, fault := range commitFaults {
		for _, tenant := range tenants {
			t.Run(fault+"/"+tenant, func(t *testing.T) {
				h, fc := commitFailureHarness(t, fault)
				test(t, h, fc, tenant)
			})
		}
	}
}

// checkNothingStored checks that the failed exchange on conv committed
// nothing, and that the conversation takes the next turn once the store
// works again.
func checkNothingStored(t *testing.T, h *e2etest.Harness, fc *failingCommits, tenant, conv string, retry func() error) {
	t.Helper()
	// The status is not checked: a stream whose commit timed out is
	// logged 504, not 500 as the client's history_write_failed says.
	if d := h.WaitDone(conv); d.Committed || d.Status != 500 {
		t.Errorf("exchange: got committed %v, status %d; want uncommitted, 500 as the client's history_write_failed says", d.Committed, d.Status)
	}
	if got := h.Stored(tenant, conv); len(got) != 0 {
		t.Errorf("stored %d messages, want none", len(got))
	}
	fc.armed.Store(false)
	if err := retry(); err != nil {
		// The SDKs' messages leave the error's body out: its code says
		// which error it was.
		var oe *openai.Error
		var ae *anthropic.Error
		switch {
		case errors.As(err, &oe):
			t.Fatalf("the retry once the store works: %v %s", err, oe.RawJSON())
		case errors.As(err, &ae):
			t.Fatalf("the retry once the store works: %v %s", err, ae.RawJSON())
		}
		t.Fatalf("the retry once the store works: %v", err)
	}
	h.WaitDone(conv)
	if got := len(h.Stored(tenant, conv)); got != 2 {
		t.Errorf("after the retry: stored %d messages, want 2 (its user message and answer)", got)
	}
}

// A streamed Responses answer whose turn cannot be committed (the store
// fails, or hangs past the commit timeout) ends with the Responses error
// event, history_write_failed, never with response.completed: the client
// never holds an acknowledged turn that is not stored, and nothing is
// stored; the error event's sequence_number is the next after the events
// before it. Over every upstream: native Responses (openai), and bridged
// from chat completions (chat) and Messages (anthropic).
func TestResponsesStreamCommitFailureIsNotAcknowledged(t *testing.T) {
	runCommitFaults(t, []string{"oa", "ch", "an"}, func(t *testing.T, h *e2etest.Harness, fc *failingCommits, tenant string) {
		conv := "rf-" + tenant
		client := h.Client("rk-"+tenant, conv)
		params := func(text string) responses.ResponseNewParams {
			return responses.ResponseNewParams{Model: "gpt-4.1",
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(text)}}
		}
		h.Up.Enqueue(upstreamtest.Reply{Content: "one two three", Chunks: 3})
		fc.armed.Store(true)
		stream := client.Responses.NewStreaming(context.Background(), params("remember this"))
		var types []string
		var last responses.ResponseStreamEventUnion
		for stream.Next() {
			last = stream.Current()
			// Every event, the error event too, is numbered in
			// order from 0.
			if got, want := last.SequenceNumber, int64(len(types)); got != want || !last.JSON.SequenceNumber.Valid() {
				t.Errorf("event %d (%s): sequence_number %d, want %d", len(types), last.Type, got, want)
			}
			types = append(types, last.Type)
		}
		if err := stream.Err(); err != nil {
			t.Fatalf("stream: %v, want it read to its end", err)
		}
		for _, typ := range types {
			if typ == "response.completed" || typ == "response.incomplete" {
				t.Fatalf("got events %v, want no %s: the turn was not committed", types, typ)
			}
		}
		if e := last.AsError(); last.Type != "error" || e.Code != "history_write_failed" || e.Message == "" {
			t.Fatalf("got events %v ending with %s, want an error event with code history_write_failed", types, last.RawJSON())
		}
		if !strings.Contains(strings.Join(types, " "), "response.output_text.delta") {
			t.Errorf("got events %v, want the deltas relayed before the commit", types)
		}
		checkNothingStored(t, h, fc, tenant, conv, func() error {
			r, err := client.Responses.New(context.Background(), params("remember this"))
			if err == nil && r.OutputText() != "echo: remember this" {
				return errors.New("answer " + r.OutputText())
			}
			return err
		})
	})
}

// A streamed Messages answer whose turn cannot be committed ends with
// Anthropic's error event (the SDK's stream ends with an api_error),
// never with the message_delta that carries stop_reason nor
// message_stop, and nothing is stored. Over every upstream: native
// (anthropic) and bridged from chat completions (openai, chat).
func TestMessagesStreamCommitFailureIsNotAcknowledged(t *testing.T) {
	runCommitFaults(t, []string{"an", "oa", "ch"}, func(t *testing.T, h *e2etest.Harness, fc *failingCommits, tenant string) {
		conv := "mf-" + tenant
		client := anthropicClient(h, "rk-"+tenant, conv)
		params := userMessage("claude-sonnet-4-5", "remember this")
		h.Up.Enqueue(upstreamtest.Reply{Content: "one two three", Chunks: 3})
		fc.armed.Store(true)
		stream := client.Messages.NewStreaming(context.Background(), params)
		var types []string
		for stream.Next() {
			ev := stream.Current()
			types = append(types, ev.Type)
			if ev.Type == "message_stop" || (ev.Type == "message_delta" && ev.Delta.StopReason != "") {
				t.Fatalf("got events %v: the turn was acknowledged, but it was not committed", types)
			}
		}
		var apiErr *anthropic.Error
		if err := stream.Err(); !errors.As(err, &apiErr) || !strings.Contains(apiErr.RawJSON(), `"api_error"`) {
			t.Fatalf("got events %v and stream error %v, want the stream to end with an api_error event", types, err)
		}
		if !strings.Contains(strings.Join(types, " "), "content_block_delta") {
			t.Errorf("got events %v, want the deltas relayed before the commit", types)
		}
		checkNothingStored(t, h, fc, tenant, conv, func() error {
			m, err := client.Messages.New(context.Background(), params)
			if err == nil && (len(m.Content) != 1 || m.Content[0].Text != "echo: remember this") {
				return errors.New("answer " + m.RawJSON())
			}
			return err
		})
	})
}
