package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/store/badgerstore"
)

// TestSIGTERMFinishesInFlightStream sends SIGTERM to a child serving a
// stalled stream: the child stops taking new work at once, finishes the
// stream once the upstream resumes, commits its turn and exits 0.
func TestSIGTERMFinishesInFlightStream(t *testing.T) {
	up := upstreamtest.NewTB(t)
	dir := t.TempDir()
	c := newChild(t, dir, up.URL())
	c.start()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	up.Enqueue(upstreamtest.Reply{Fault: upstreamtest.FaultStallMidStream, Chunks: 8})
	body := `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"finish me"}]}`
	req, err := http.NewRequestWithContext(ctx, "POST", c.url()+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+crashKey)
	req.Header.Set("X-Conversation-ID", "graceful-1")
	client := &http.Client{Transport: &http.Transport{}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("got status %d, want 200", resp.StatusCode)
	}
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(first, "data: ") {
		t.Fatalf("first event: got %q, %v; want a data line", first, err)
	}
	if err := up.WaitStalled(ctx, 1); err != nil {
		t.Fatal(err)
	}

	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// New work is turned away: /readyz says 503 or the listener is closed.
	probe := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	for refused := false; !refused; {
		r, err := probe.Get(c.url() + "/readyz")
		if err != nil {
			refused = true
		} else {
			r.Body.Close()
			refused = r.StatusCode == http.StatusServiceUnavailable
		}
		if !refused {
			select {
			case <-ctx.Done():
				t.Fatal("still ready long after SIGTERM")
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	if !c.running() {
		t.Fatal("child exited with a stream in flight")
	}

	up.Release()
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("rest of the stream: %v", err)
	}
	if !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Errorf("got the rest of the stream %q, want it whole", rest)
	}
	if code := c.wait(ctx); code != 0 {
		t.Errorf("child exited %d after SIGTERM, want 0", code)
	}

	store, err := badgerstore.Open(dir, badgerstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var got []string
	err = store.Messages(ctx, history.Key{Tenant: passNamespace(crashKey), Conversation: "graceful-1"}, 0, true,
		func(m history.Message) bool { got = append(got, storedMsg(m.Raw).String()); return true })
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"user:finish me", "assistant:echo: finish me"}; !slices.Equal(got, want) {
		t.Errorf("stored %q, want %q", got, want)
	}
}
