package pgstore_test

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/store/pgstore"
)

// TestConcurrentChainsOnOneResponseAcrossReplicas: two replicas on one
// database get a request each chained on the same response at once. The
// one that takes the conversation's lease first continues the
// conversation; the other decides under the lease, once the first
// committed, and forks from the response: the upstream request of each
// carries the history up to the response and its own input only.
func TestConcurrentChainsOnOneResponseAcrossReplicas(t *testing.T) {
	url := pgtest.DB(t)
	up, tenants := defaultTenants(t)
	entered := make(chan string, 64)
	addrs := serveReplicas(t, url, tenants, func(i int) pgstore.Options {
		o := pgstore.Options{}
		if i == 1 { // reports each time it finds the lease held
			o.OnLeaseWait = sendWaits(entered)
		}
		return o
	})
	postResponses := func(addr, body string) (int, gjson.Result, error) {
		st, b, err := post(addr, "/v1/responses", "sk-chain", "", body)
		return st, gjson.ParseBytes(b), err
	}
	st, r1, err := postResponses(addrs[0], `{"model":"gpt-4.1","input":"one"}`)
	if err != nil || st != 200 {
		t.Fatalf("first response: %d %s %v", st, r1.Raw, err)
	}
	id, conv := r1.Get("id").Str, r1.Get("conversation.id").Str

	up.Enqueue(upstreamtest.Reply{Hold: true})
	type outcome struct {
		text   string
		status int
		body   gjson.Result
		err    error
	}
	results := make(chan outcome, 2)
	ask := func(addr, text string) {
		st, body, err := postResponses(addr, `{"model":"gpt-4.1","previous_response_id":"`+id+`","input":"`+text+`"}`)
		results <- outcome{text, st, body, err}
	}
	go ask(addrs[0], "first")
	if err := up.WaitStalled(testCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	go ask(addrs[1], "other")
	waited(t, testCtx(t), entered, "the other replica") // it waits for the lease the first holds
	up.Release()
	for range 2 {
		o := <-results
		if o.err != nil || o.status != 200 {
			t.Fatalf("%s: %d %s %v", o.text, o.status, o.body.Raw, o.err)
		}
		got := o.body.Get("conversation.id").Str
		if (o.text == "first") != (got == conv) {
			t.Errorf("%s: in %q, want the first in %q and the other in a fork", o.text, got, conv)
		}
	}
	for _, r := range up.Requests()[1:] {
		var in []string
		for _, raw := range r.Messages {
			m := gjson.ParseBytes(raw)
			text := m.Get("content").Str
			m.Get("content").ForEach(func(_, p gjson.Result) bool {
				text += p.Get("text").Str
				return true
			})
			in = append(in, m.Get("role").Str+": "+text)
		}
		got := strings.Join(in, " | ")
		if want := "user: one | assistant: echo: one | " + in[len(in)-1]; got != want {
			t.Errorf("upstream input: got %q, want %q", got, want)
		}
	}
}
