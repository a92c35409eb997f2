package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// toolTenants are two tenants with every history tool and two tool
// rounds: oa over an OpenAI upstream (chat and Responses go as they
// came, Messages as chat completions), an over an Anthropic one.
func toolTenants() e2etest.Options {
	tenant := func(id, protocol string) string {
		return tenantYAML(id, protocol) + "history:\n  tools: [end_conversation, get_conversation, search_conversations]\n  tool_rounds: 2\n"
	}
	return e2etest.Options{Tenants: map[string]string{"oa.yaml": tenant("oa", "openai"), "an.yaml": tenant("an", "anthropic")}}
}

// toolPairs are the ingress and upstream pairs the tests run over.
var toolPairs = []struct {
	client *toolClient
	tenant string
}{
	{&chatClient, "oa"},
	{&responsesClient, "oa"},
	{&messagesClient, "oa"},
	{&messagesClient, "an"},
	{&chatClient, "an"},
	{&responsesClient, "an"},
}

// toolRun is one subtest's client of one pair over its own harness.
type toolRun struct {
	t      *testing.T
	h      *e2etest.Harness
	c      *toolClient
	tenant string
	conv   string
	stream bool
}

// send sends msgs and reads the answer, which must be a 200 without a
// word of Recall's tools.
func (r *toolRun) send(msgs []string) heard {
	r.t.Helper()
	headers := map[string]string{"Content-Type": "application/json", "X-Conversation-ID": r.conv}
	if r.c == &messagesClient {
		headers["x-api-key"] = "rk-" + r.tenant
	} else {
		headers["Authorization"] = "Bearer rk-" + r.tenant
	}
	res := r.h.PostHeaders(r.c.path, headers, r.c.body(msgs, r.stream))
	d := r.h.WaitDone(r.conv)
	if res.Status != 200 || !d.Committed {
		r.t.Fatalf("got %d %s (committed %v)", res.Status, res.Body, d.Committed)
	}
	for _, name := range []string{"search_conversations", "get_conversation", "end_conversation"} {
		if strings.Contains(res.Body, name) {
			r.t.Fatalf("the client saw Recall's tool %s: %s", name, res.Body)
		}
	}
	return r.c.read(r.t, res.Body, r.stream)
}

// wantCalls checks the upstream saw n calls, and names each call when
// it did not, so that a failure says where the others came from.
func (r *toolRun) wantCalls(n int) {
	r.t.Helper()
	reqs := r.h.Up.Requests()
	if len(reqs) == n {
		return
	}
	var b strings.Builder
	for i, q := range reqs {
		body := string(q.Body)
		if len(body) > 300 {
			body = "..." + body[len(body)-300:] // the messages' end
		}
		fmt.Fprintf(&b, "\n  %d: %s %s %s", i, q.Method, q.RequestURI, body)
	}
	r.t.Errorf("got %d upstream calls, want %d:%s", len(reqs), n, b.String())
}

// resend sends msgs, the whole conversation as the client holds it and
// one new message, and checks the answer is want and that two messages
// more are stored: the new one and the answer.
func (r *toolRun) resend(msgs []string, want string) {
	r.t.Helper()
	n := r.stored()
	if got := r.send(msgs); got.text != want {
		r.t.Errorf("after the resend: got %q, want %q", got.text, want)
	}
	if m := r.stored(); m != n+2 {
		r.t.Errorf("after the resend: stored %d messages, want %d (%d, the new message and the answer)", m, n+2, n)
	}
}

// stored is how many messages the conversation has stored.
func (r *toolRun) stored() int { return len(r.h.Stored(r.tenant, r.conv)) }

// eachToolPair runs f for every pair, streamed and not.
func eachToolPair(t *testing.T, f func(r *toolRun)) {
	for _, p := range toolPairs {
		for _, stream := range []bool{false, true} {
			name := p.client.name + "_over_" + p.tenant
			if stream {
				name += "_streamed"
			}
			t.Run(name, func(t *testing.T) {
				f(&toolRun{t: t, h: e2etest.New(t, toolTenants()), c: p.client, tenant: p.tenant, conv: "c1", stream: stream})
			})
		}
	}
}

// ended are the stop reasons of a finished answer; calling those of an
// answer that asks for tools.
var (
	ended   = []string{"stop", "end_turn", "completed"}
	calling = []string{"tool_calls", "tool_use", "completed"}
)

// TestHistoryToolsSearchEveryProtocol: a round that says something and
// calls search_conversations, then the final answer. Unstreamed, the
// client gets the final answer only; streamed, the first round's text
// stays relayed and the final round's follows it in the same text, in
// one well-formed stream. A client that then resends the whole history,
// the answer as it holds it, is not doubled.
func TestHistoryToolsSearchEveryProtocol(t *testing.T) {
	eachToolPair(t, func(r *toolRun) {
		r.h.Up.Enqueue(upstreamtest.Reply{Content: "Let me look. ", ToolCalls: []upstreamtest.ToolCall{toolCall("search_conversations", `{"query":"fly"}`)}},
			upstreamtest.Reply{Content: "Found it."})
		msgs := []string{r.c.user("when do we fly?")}
		got := r.send(msgs)
		want := "Found it."
		if r.stream {
			want = "Let me look. Found it."
		}
		if got.text != want || !slices.Contains(ended, got.stop) || len(got.calls) != 0 {
			r.t.Errorf("got text %q, stop %q, calls %v; want %q, a finished answer, no calls", got.text, got.stop, got.calls, want)
		}
		r.wantCalls(2)
		r.resend(append(append(msgs, got.resend...), r.c.user("thanks")), "echo: thanks")
		if c := strings.Count(string(r.h.Up.Last().Body), "when do we fly?"); c != 1 {
			r.t.Errorf("the first question went upstream %d times, want once: %s", c, r.h.Up.Last().Body)
		}
	})
}

// TestHistoryToolsRoundBoundEveryProtocol: the last allowed round still
// calling only Recall's tools ends with a well-formed final answer
// saying so; the next request, resending everything, is valid for the
// strict upstream and not doubled.
func TestHistoryToolsRoundBoundEveryProtocol(t *testing.T) {
	eachToolPair(t, func(r *toolRun) {
		for range 2 {
			r.h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{toolCall("get_conversation", `{"list_recent":true}`)}})
		}
		msgs := []string{r.c.user("hi")}
		got := r.send(msgs)
		if !strings.Contains(got.text, "tool rounds") || !slices.Contains(ended, got.stop) || len(got.calls) != 0 {
			r.t.Errorf("got text %q, stop %q, calls %v; want a finished answer about the round limit", got.text, got.stop, got.calls)
		}
		r.wantCalls(2)
		r.resend(append(append(msgs, got.resend...), r.c.user("again")), "echo: again")
	})
}

// TestHistoryToolsMixedEveryProtocol: one answer calling Recall's tool and
// the client's gives the client only its own call; the client's result,
// sent with the whole history, makes a request the strict upstream
// accepts (to Anthropic: both results in one user message, right after
// the calls), and nothing is doubled.
func TestHistoryToolsMixedEveryProtocol(t *testing.T) {
	eachToolPair(t, func(r *toolRun) {
		r.h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{
			{ID: "call_r", Name: "search_conversations", Arguments: `{"query":"x"}`},
			{ID: "call_w", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
			upstreamtest.Reply{Content: "Sunny."})
		msgs := []string{r.c.user("weather?")}
		got := r.send(msgs)
		if !slices.Equal(got.calls, []string{"call_w"}) || !slices.Contains(calling, got.stop) {
			r.t.Fatalf("got calls %v, stop %q; want the client's call only", got.calls, got.stop)
		}
		r.resend(append(append(msgs, got.resend...), r.c.result("call_w", "sunny")), "Sunny.")
		last := r.h.Up.Last()
		if r.tenant == "an" {
			msgs := gjson.GetBytes(last.Body, "messages").Array()
			end := msgs[len(msgs)-1]
			ids := end.Get("content.#.tool_use_id").String()
			if len(msgs) != 3 || end.Get("role").String() != "user" || ids != `["call_r","call_w"]` {
				r.t.Errorf("to Anthropic: got messages %s, want user, the calls, one user message with both results", gjson.GetBytes(last.Body, "messages").Raw)
			}
		}
	})
}

// TestHistoryToolsLaterRoundFailsEveryProtocol: when the upstream fails
// the round after Recall's tool round, a streamed client's stream (begun
// already) ends with an error event in its protocol's shape and no
// closing events, an unstreamed client gets the error, and nothing of
// the turn is stored.
func TestHistoryToolsLaterRoundFailsEveryProtocol(t *testing.T) {
	eachToolPair(t, func(r *toolRun) {
		r.h.Up.Enqueue(upstreamtest.Reply{Content: "Let me look. ", ToolCalls: []upstreamtest.ToolCall{toolCall("search_conversations", `{"query":"x"}`)}},
			upstreamtest.Reply{Status: 500})
		headers := map[string]string{"Content-Type": "application/json", "X-Conversation-ID": r.conv,
			"x-api-key": "rk-" + r.tenant, "Authorization": "Bearer rk-" + r.tenant}
		res := r.h.PostHeaders(r.c.path, headers, r.c.body([]string{r.c.user("find x")}, r.stream))
		if d := r.h.WaitDone(r.conv); d.Committed {
			r.t.Errorf("the turn was committed")
		}
		if n := r.stored(); n != 0 {
			r.t.Errorf("stored %d messages, want none", n)
		}
		if !r.stream {
			if res.Status != 500 {
				r.t.Errorf("got %d %s, want the upstream's 500", res.Status, res.Body)
			}
			return
		}
		names, data := sseEvents(res.Body)
		if len(data) == 0 {
			r.t.Fatalf("got %d %s, want a stream", res.Status, res.Body)
		}
		last, name := data[len(data)-1], names[len(names)-1]
		isError := gjson.Get(last, "error").Exists() || gjson.Get(last, "type").String() == "error"
		if res.Status != 200 || !strings.Contains(res.Body, `"Let`) || !isError {
			r.t.Errorf("got %d ending with %s %s, want the first round's text then an error event", res.Status, name, last)
		}
		for _, closing := range []string{"[DONE]", "finish_reason\":\"", "message_stop", "response.completed"} {
			if strings.Contains(res.Body, closing) {
				r.t.Errorf("the failed stream carries %s: %s", closing, res.Body)
			}
		}
	})
}
