package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// inputTexts renders the input items an upstream request carried as
// role: text.
func inputTexts(msgs []json.RawMessage) string {
	out := make([]string, 0, len(msgs))
	for _, raw := range msgs {
		m := gjson.ParseBytes(raw)
		text := m.Get("content").Str
		m.Get("content").ForEach(func(_, p gjson.Result) bool {
			text += p.Get("text").Str
			return true
		})
		out = append(out, m.Get("role").Str+": "+text)
	}
	return strings.Join(out, " | ")
}

// postResponses sends a Responses request from any goroutine and returns
// its status and body.
func postResponses(url, body string) (int, string, error) {
	req, err := http.NewRequest("POST", url+"/v1/responses", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// TestConcurrentChainsOnOneResponse: requests chained on one response at
// once decide fork or continue under the conversation's lock. The first
// continues the conversation; the others, which find the response no
// longer its conversation's latest once the first committed, fork from
// it: each upstream request carries the history up to the response and
// its own input, never another's turn.
func TestConcurrentChainsOnOneResponse(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	r1 := h.Post("/v1/responses", key, "", `{"model":"gpt-4.1","input":"one"}`)
	id, conv := gjson.Get(r1.Body, "id").Str, gjson.Get(r1.Body, "conversation.id").Str
	if r1.Status != 200 || id == "" || conv == "" {
		t.Fatalf("first response: %d %s", r1.Status, r1.Body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h.Up.Enqueue(upstreamtest.Reply{Hold: true})
	const n = 3
	type outcome struct {
		text, body string
		status     int
		err        error
	}
	results := make(chan outcome, n)
	post := func(text string) {
		st, body, err := postResponses(h.URL, `{"model":"gpt-4.1","previous_response_id":"`+id+`","input":"`+text+`"}`)
		results <- outcome{text, body, st, err}
	}
	go post("first")
	if err := h.Up.WaitStalled(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < n; i++ {
		go post(fmt.Sprintf("other %d", i))
	}
	// The others wait on the conversation's lock, which the first holds
	// until its commit.
	if err := h.Server.WaitLockRefs(ctx, history.Key{Tenant: h.PassNamespace(key), Conversation: conv}, n); err != nil {
		t.Fatal(err)
	}
	h.Up.Release()
	forks := map[string]bool{}
	for range n {
		o := <-results
		if o.err != nil || o.status != 200 {
			t.Fatalf("%s: %d %s %v", o.text, o.status, o.body, o.err)
		}
		got := gjson.Get(o.body, "conversation.id").Str
		if o.text == "first" && got != conv {
			t.Errorf("first: in %q, want %q (it continues)", got, conv)
		}
		if o.text != "first" && (got == conv || forks[got]) {
			t.Errorf("%s: in %q, want a fork of its own", o.text, got)
		}
		forks[got] = true
	}
	for _, r := range h.Up.Requests()[1:] {
		in := inputTexts(r.Messages)
		text := in[strings.LastIndex(in, ": ")+2:]
		if want := "user: one | assistant: echo: one | user: " + text; in != want {
			t.Errorf("upstream input: got %q, want %q", in, want)
		}
	}
}
