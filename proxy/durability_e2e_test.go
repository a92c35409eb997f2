package proxy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/proxy"
)

// hookStore is a Store whose commits pass through a hook first: the hook
// may block (a gated or hanging store) or fail them.
type hookStore struct {
	history.Store
	before func(ctx context.Context) error
}

func (s *hookStore) Commit(ctx context.Context, k history.Key, c history.Change) (history.Meta, error) {
	if err := s.before(ctx); err != nil {
		return history.Meta{}, err
	}
	return s.Store.Commit(ctx, k, c)
}

// withCommitHook wraps the harness's store in a hookStore.
func withCommitHook(before func(ctx context.Context) error) func(*proxy.Config) {
	return func(c *proxy.Config) { c.Store = &hookStore{Store: c.Store, before: before} }
}

// newHarnessWithOneRacingWriter is a harness whose first commit meets
// another writer: just before it, a user message "elsewhere" lands in
// conv (under key's namespace) straight in the store.
func newHarnessWithOneRacingWriter(t *testing.T, conv string) *harness {
	var h *harness
	var once atomic.Bool
	h = newHarness(t, e2etest.Options{Proxy: withCommitHook(func(ctx context.Context) error {
		if !once.CompareAndSwap(false, true) {
			return nil
		}
		k := history.Key{Tenant: h.PassNamespace(key), Conversation: conv}
		snap, err := h.Store.Load(ctx, k, history.Query{})
		if err != nil {
			return err
		}
		_, err = h.Store.Commit(ctx, k, history.Change{Version: snap.Meta.Version, Now: 1,
			Append: []history.Message{{Role: "user", Raw: []byte(`{"role":"user","content":"elsewhere"}`)}}})
		return err
	})})
	return h
}

// readEvents reads SSE events from r (data payloads), sending each on the
// returned channel, closed at the end of the body.
func readEvents(r *bufio.Reader) <-chan string {
	ch := make(chan string, 64)
	go func() {
		defer close(ch)
		for {
			line, err := r.ReadString('\n')
			if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
				ch <- data
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// nextEvent returns the next event, failing the test after a deadline.
func nextEvent(t *testing.T, events <-chan string) (string, bool) {
	t.Helper()
	select {
	case ev, ok := <-events:
		return ev, ok
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
		return "", false
	}
}

// A client that has read finish_reason holds a durable turn: the event
// that carries it, and every one after it, is relayed only once the turn is
// committed; the deltas before it are relayed as they come. (Those that
// came together with it, read without waiting on the upstream, go with
// it: here the upstream pauses mid-answer, and what it sent before the
// pause reaches the client before the commit begins.)
func TestStreamHoldsFinishReasonUntilCommitted(t *testing.T) {
	gate := make(chan struct{})
	entered := make(chan struct{}, 1)
	var gated atomic.Bool
	h := newHarness(t, e2etest.Options{Proxy: withCommitHook(func(ctx context.Context) error {
		if !gated.Load() {
			return nil
		}
		entered <- struct{}{}
		select {
		case <-gate:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})})
	gated.Store(true)
	h.Up.Enqueue(upstreamtest.Reply{Content: "one two three four", Chunks: 4, Fault: upstreamtest.FaultStallMidStream})
	resp := h.send(key, "hold-1", e2etest.ChatBody("count", true))
	defer resp.Body.Close()
	events := readEvents(bufio.NewReader(resp.Body))

	// The deltas before the pause arrive while the upstream pauses.
	var content strings.Builder
	for content.Len() == 0 {
		ev, ok := nextEvent(t, events)
		if !ok {
			t.Fatal("stream ended before the upstream's pause")
		}
		if strings.Contains(ev, `"finish_reason":"`) || ev == "[DONE]" {
			t.Fatalf("got %s before the turn was committed", ev)
		}
		content.WriteString(deltaContent(t, ev))
	}
	h.Up.Release()
	// The rest comes with the finish: of what the client has while the
	// commit is blocked, no finish and no [DONE] (the deltas sent before
	// the pause may still be on their way).
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the commit never started")
	}
	for drained := false; !drained; {
		select {
		case ev := <-events:
			if strings.Contains(ev, `"finish_reason":"`) || ev == "[DONE]" {
				t.Fatalf("got %s while the commit is blocked", ev)
			}
			content.WriteString(deltaContent(t, ev))
		default:
			drained = true
		}
	}
	close(gate)
	finished := false
	var rest []string
	for ev := range events {
		rest = append(rest, ev)
		switch {
		case strings.Contains(ev, `"finish_reason":"stop"`):
			finished = true
		case ev != "[DONE]" && !finished:
			content.WriteString(deltaContent(t, ev))
		}
	}
	if !finished || rest[len(rest)-1] != "[DONE]" || content.String() != "one two three four" {
		t.Fatalf("after the commit got %q (content %q in all), want the rest of the content, the finish chunk ... [DONE]", rest, content.String())
	}
	if d := h.WaitDone("hold-1"); !d.Committed || d.Status != 200 {
		t.Fatalf("got %+v, want a committed exchange", d)
	}
}

// deltaContent returns a chunk's choice 0 delta content.
func deltaContent(t *testing.T, ev string) string {
	t.Helper()
	var c struct {
		Choices []struct {
			Delta struct {
				Content string `json:"content"`
			} `json:"delta"`
		} `json:"choices"`
	}
	if err := jsonUnmarshal(ev, &c); err != nil {
		t.Fatalf("chunk %q: %v", ev, err)
	}
	if len(c.Choices) == 0 {
		return ""
	}
	return c.Choices[0].Delta.Content
}

// A stream whose turn cannot be committed ends with an error event: no
// finish_reason, no [DONE], an ERROR log line with the real status.
func TestStreamCommitFailureEndsWithErrorEvent(t *testing.T) {
	h := newHarness(t, e2etest.Options{Proxy: withCommitHook(func(context.Context) error {
		return errors.New("disk on fire")
	})})
	resp := h.send(key, "fail-1", e2etest.ChatBody("remember this", true))
	body := readAll(t, resp)
	if resp.StatusCode != 200 {
		t.Fatalf("got status %d, want 200 (the stream had started)", resp.StatusCode)
	}
	if strings.Contains(body, `"finish_reason":"`) || strings.Contains(body, "[DONE]") {
		t.Errorf("got %q, want neither finish_reason nor [DONE]", body)
	}
	events := strings.Split(strings.TrimSpace(body), "\n\n")
	checkErrorShape(t, []byte(strings.TrimPrefix(events[len(events)-1], "data: ")), "server_error", "history_write_failed")
	d := h.WaitDone("fail-1")
	if d.Committed || d.Status != 500 {
		t.Fatalf("got %+v, want an uncommitted exchange with status 500", d)
	}
	if logs := h.Logs.String(); !strings.Contains(logs, `"level":"ERROR","msg":"request"`) || !strings.Contains(logs, `"status":500`) {
		t.Errorf("got logs %s, want an ERROR request line with status 500", logs)
	}
	if got := h.Stored(h.PassNamespace(key), "fail-1"); len(got) != 0 {
		t.Errorf("stored %d messages, want none", len(got))
	}
	if got := h.Metric(`recall_commit_failures_total{reason="error",tenant="default"}`); got != 1 {
		t.Errorf("recall_commit_failures_total{reason=error} %v, want 1", got)
	}
}

// A commit that hangs is abandoned at the commit timeout: the client is
// told, the conversation is released, and the next request goes through.
func TestHungCommitReleasesTheConversation(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			var hang atomic.Bool
			hang.Store(true)
			stop := make(chan struct{})
			t.Cleanup(func() { close(stop) })
			h := newHarness(t, e2etest.Options{Proxy: func(c *proxy.Config) {
				// The hung commit fails at it; the next request's working one
				// must come in well within it, even with -race on a busy machine.
				c.CommitTimeout = time.Second
				withCommitHook(func(context.Context) error {
					if hang.CompareAndSwap(true, false) {
						<-stop // ignores its context, as a stuck disk would
						return errors.New("released at the end of the test")
					}
					return nil
				})(c)
			}})
			conv := "hang-1"
			r := h.Post("/v1/chat/completions", key, conv, e2etest.ChatBody("first", stream))
			if stream {
				if r.Status != 200 || !strings.Contains(r.Body, "history_write_failed") || strings.Contains(r.Body, "[DONE]") {
					t.Fatalf("got %d %q, want a stream ended by an error event", r.Status, r.Body)
				}
			} else if r.Status != 500 || !strings.Contains(r.Body, "history_write_failed") {
				t.Fatalf("got %d %s, want 500 history_write_failed", r.Status, r.Body)
			}
			if d := h.WaitDone(conv); d.Committed {
				t.Fatalf("got %+v, want an uncommitted exchange", d)
			}
			if r := h.Post("/v1/chat/completions", key, conv, e2etest.ChatBody("second", false)); r.Status != 200 {
				t.Fatalf("next request: got %d %s, want 200", r.Status, r.Body)
			}
			h.WaitDone(conv)
			if got := h.Metric(`recall_commit_failures_total{reason="timeout",tenant="default"}`); got != 1 {
				t.Errorf("recall_commit_failures_total{reason=timeout} %v, want 1", got)
			}
		})
	}
}

// A non-streamed request whose client left before the answer came commits
// nothing: the client will retry, and its retry must not find a turn it
// never saw.
func TestClientGoneBeforeCommitStoresNothing(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	conv := "gone-1"
	h.Up.Enqueue(upstreamtest.Reply{Content: "too late", Fault: upstreamtest.FaultStallMidStream})
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	body := e2etest.ChatBody("are you there?", false)
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: recall\r\nAuthorization: Bearer %s\r\n"+
		"X-Conversation-ID: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", key, conv, len(body), body)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Up.WaitStalled(ctx, 1); err != nil {
		t.Fatal(err)
	}
	conn.Close() // the client gives up while the upstream is still answering
	h.Up.Release()
	d := h.WaitDone(conv)
	if d.Committed || d.Status != 499 {
		t.Fatalf("got %+v, want an uncommitted exchange with status 499", d)
	}
	if got := h.Stored(h.PassNamespace(key), conv); len(got) != 0 {
		t.Errorf("stored %q, want nothing", e2etest.Active(got))
	}
}

// A retry of the last exchange replaces its turn instead of adding a
// second copy: marked by the SDKs' x-stainless-retry-count with the same
// new messages, or by the same Idempotency-Key. Anything else appends.
func TestRetryReplacesTheLastTurn(t *testing.T) {
	tests := []struct {
		name          string
		first, second map[string]string // extra headers
		secondText    string
		want          []string // active stored messages after both
		wantUpstream  []string // what the upstream saw the second time
	}{
		{name: "sdk retry", second: map[string]string{"X-Stainless-Retry-Count": "1"}, secondText: "q",
			want: []string{"user:q", "assistant:echo: q (2)"}, wantUpstream: []string{"user:q"}},
		{name: "idempotency key", first: map[string]string{"Idempotency-Key": "k1"},
			second: map[string]string{"Idempotency-Key": "k1"}, secondText: "q",
			want: []string{"user:q", "assistant:echo: q (2)"}, wantUpstream: []string{"user:q"}},
		{name: "other idempotency key", first: map[string]string{"Idempotency-Key": "k1"},
			second: map[string]string{"Idempotency-Key": "k2"}, secondText: "q",
			want:         []string{"user:q", "assistant:echo: q (1)", "user:q", "assistant:echo: q (2)"},
			wantUpstream: []string{"user:q", "assistant:echo: q (1)", "user:q"}},
		{name: "sdk retry of other messages", second: map[string]string{"X-Stainless-Retry-Count": "2"}, secondText: "r",
			want:         []string{"user:q", "assistant:echo: q (1)", "user:r", "assistant:echo: r (2)"},
			wantUpstream: []string{"user:q", "assistant:echo: q (1)", "user:r"}},
		{name: "no marker", secondText: "q",
			want:         []string{"user:q", "assistant:echo: q (1)", "user:q", "assistant:echo: q (2)"},
			wantUpstream: []string{"user:q", "assistant:echo: q (1)", "user:q"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, e2etest.Options{})
			conv := "retry-1"
			send := func(text string, extra map[string]string, n int) {
				headers := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + key, "X-Conversation-ID": conv}
				for k, v := range extra {
					headers[k] = v
				}
				h.Up.Enqueue(upstreamtest.Reply{Content: fmt.Sprintf("echo: %s (%d)", text, n)})
				if r := h.PostHeaders("/v1/chat/completions", headers, e2etest.ChatBody(text, false)); r.Status != 200 {
					t.Fatalf("request %d: got %d %s", n, r.Status, r.Body)
				}
				h.WaitDone(conv)
			}
			send("q", tt.first, 1)
			send(tt.secondText, tt.second, 2)
			if got := e2etest.Active(h.Stored(h.PassNamespace(key), conv)); !slices.Equal(got, tt.want) {
				t.Errorf("stored %q, want %q", got, tt.want)
			}
			if got := e2etest.RenderAll(h.Up.Last().Messages); !slices.Equal(got, tt.wantUpstream) {
				t.Errorf("upstream got %q, want %q", got, tt.wantUpstream)
			}
		})
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// readAll reads and closes a response body.
func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return string(b)
}

// A store that cannot take commits (out of room, or opened read-only)
// refuses recorded requests with 507 before the upstream is called, and
// /readyz says so; requests without a conversation still pass.
func TestNoRoomRefusesRecordedRequests(t *testing.T) {
	var full atomic.Bool
	h := newHarness(t, e2etest.Options{Proxy: func(c *proxy.Config) {
		c.CanCommit = func() error {
			if full.Load() {
				return errors.New("12 MiB free, below the 64 MiB floor")
			}
			return nil
		}
	}})
	if r := h.Post("/v1/chat/completions", key, "room-1", e2etest.ChatBody("before", false)); r.Status != 200 {
		t.Fatalf("got %d %s, want 200", r.Status, r.Body)
	}
	h.WaitDone("room-1")
	full.Store(true)
	before := h.Up.Count()
	r := h.Post("/v1/chat/completions", key, "room-1", e2etest.ChatBody("after", false))
	if r.Status != 507 {
		t.Fatalf("got %d %s, want 507", r.Status, r.Body)
	}
	checkErrorShape(t, []byte(r.Body), "server_error", "insufficient_storage")
	if got := h.Up.Count(); got != before {
		t.Errorf("the upstream got %d requests, want none", got-before)
	}
	if d := h.WaitDone("room-1"); d.Status != 507 || d.Committed {
		t.Errorf("got %+v, want an uncommitted 507", d)
	}
	if r := h.Post("/v1/chat/completions", key, "", e2etest.ChatBody("no memory", false)); r.Status != 200 {
		t.Errorf("without a conversation: got %d %s, want 200", r.Status, r.Body)
	}
	resp, err := http.Get(h.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 503 {
		t.Errorf("/readyz: got %d %s, want 503", resp.StatusCode, body)
	}
	if got := e2etest.Active(h.Stored(h.PassNamespace(key), "room-1")); len(got) != 2 {
		t.Errorf("stored %q, want only the first turn", got)
	}
}

// A commit that meets a concurrent change (another writer committed since
// the load) is rebased and retried, not answered 500.
func TestCommitConflictIsRebased(t *testing.T) {
	h := newHarnessWithOneRacingWriter(t, "rebase-1")
	for _, text := range []string{"one", "two"} {
		if r := h.Post("/v1/chat/completions", key, "rebase-1", e2etest.ChatBody(text, text == "two")); r.Status != 200 || strings.Contains(r.Body, "error") {
			t.Fatalf("%s: got %d %s", text, r.Status, r.Body)
		}
		if d := h.WaitDone("rebase-1"); !d.Committed {
			t.Fatalf("%s: got %+v, want committed", text, d)
		}
	}
	want := []string{"user:elsewhere", "user:one", "assistant:echo: one", "user:two", "assistant:echo: two"}
	if got := e2etest.Active(h.Stored(h.PassNamespace(key), "rebase-1")); !slices.Equal(got, want) {
		t.Errorf("stored %q, want %q", got, want)
	}
}

// A streamed answer is bounded as a whole by MaxResponseBytes, not only
// per event: past it the stream ends with an error event and nothing is
// committed.
func TestStreamedAnswerBoundedAsAWhole(t *testing.T) {
	h := newHarness(t, e2etest.Options{Proxy: func(c *proxy.Config) { c.MaxResponseBytes = 8 << 10 }})
	// 64 events of about 400 bytes each: every one under the bound, the
	// answer far over it.
	h.Up.Enqueue(upstreamtest.Reply{Content: strings.Repeat("0123456789", 64*30), Chunks: 64})
	resp := h.send(key, "bound-1", e2etest.ChatBody("a long answer", true))
	body := readAll(t, resp)
	if strings.Contains(body, `"finish_reason":"`) || strings.Contains(body, "[DONE]") {
		t.Errorf("got the end of the stream, want it cut: %q", body[max(0, len(body)-300):])
	}
	events := strings.Split(strings.TrimSpace(body), "\n\n")
	checkErrorShape(t, []byte(strings.TrimPrefix(events[len(events)-1], "data: ")), "upstream_error", "upstream_response_too_large")
	if d := h.WaitDone("bound-1"); d.Committed {
		t.Fatalf("got %+v, want nothing committed", d)
	}
	if got := h.Stored(h.PassNamespace(key), "bound-1"); len(got) != 0 {
		t.Errorf("stored %d messages, want none", len(got))
	}
}

// A stream that is not recorded is relayed byte for byte; an upstream that
// cuts it is reported as the upstream's failure (502), not as a client
// that left (499).
func TestUnrecordedStreamCutIsTheUpstreams(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	h.Up.Enqueue(upstreamtest.Reply{Fault: upstreamtest.FaultCutMidStream, Chunks: 8})
	resp := h.send(key, "", e2etest.ChatBody("no memory", true))
	body := readAll(t, resp)
	if strings.Contains(body, `"error"`) {
		t.Errorf("got an error event in an unrecorded stream, want the bytes as the upstream sent them: %q", body)
	}
	if d := h.WaitDone(""); d.Status != 502 || d.Err == nil {
		t.Errorf("got %+v, want status 502 with its reason", d)
	}
}

// An answer not asked to stream is read whole (the buffering client):
// chunked, and cut by the upstream where the next chunk's size should
// come, it is the upstream's failure, not a shorter answer.
func TestUnrecordedAnswerCutAtAChunkIsTheUpstreams(t *testing.T) {
	addr := upstreamtest.ServeRaw(t, func(c net.Conn) {
		var req fasthttp.Request
		if err := req.Read(bufio.NewReader(c)); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"+
			"d\r\n{\"id\":\"cut\",\"\r\n")
	})
	h := newHarness(t, e2etest.Options{Global: func(g *config.Global) {
		g.Defaults.Upstream.BaseURL = "http://" + addr + "/v1"
	}})
	resp := h.send(key, "", e2etest.ChatBody("no memory", false))
	body := readAll(t, resp)
	if resp.StatusCode != 502 || strings.Contains(body, `"cut"`) {
		t.Errorf("got %d %q, want a 502 and none of the cut answer", resp.StatusCode, body)
	}
	if d := h.WaitDone(""); d.Status != 502 || d.Err == nil {
		t.Errorf("got %+v, want status 502 with its reason", d)
	}
}
