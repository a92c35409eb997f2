package proxy_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/e2etest"
)

// The path without history recycles its exchange and the buffer its body
// was read into (and a stream's relay keeps its exchange): concurrent
// plain requests of different sizes, streamed and not, each still reach
// the upstream with their own body and get their own answer.
func TestPlainPathRecyclingKeepsRequestsApart(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	const workers, each = 8, 40
	errs := make(chan error, workers*each)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				// Sizes vary so that a recycled buffer is sometimes
				// larger than the body read into it.
				text := fmt.Sprintf("w%d-r%d-%s", w, i, strings.Repeat("x", (w*each+i)%7*300))
				stream := i%3 == 0
				got, err := postPlain(h.URL, e2etest.ChatBody(text, stream))
				if stream {
					got = streamedText(got)
				} else {
					got = gjson.Get(got, "choices.0.message.content").Str
				}
				if err == nil && got != "echo: "+text {
					err = fmt.Errorf("request %q (stream %v): got answer %.200q, want its own echo", text[:min(len(text), 12)], stream, got)
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// streamedText joins the content deltas of an event stream.
func streamedText(sse string) string {
	var b strings.Builder
	for line := range strings.Lines(sse) {
		if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
			b.WriteString(gjson.Get(data, "choices.0.delta.content").Str)
		}
	}
	return b.String()
}

// postPlain posts body to Recall's chat completions without naming a
// conversation and returns the answer's body, or why it failed.
func postPlain(base, body string) (string, error) { return postIn(base, "", body) }

// postIn is postPlain in conversation conv (none when empty).
func postIn(base, conv, body string) (string, error) {
	req, err := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if conv != "" {
		req.Header.Set("X-Conversation-ID", conv)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return string(b), nil
}
