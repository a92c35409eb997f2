package e2e

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/summary"
)

var _ proxy.Compactor = (*summary.Manager)(nil)

// compactUpstreams are threeUpstreams with summaries on, their trigger
// out of reach (no background job) and two turns kept: a compaction
// covers those too.
func compactUpstreams() e2etest.Options {
	o := threeUpstreams()
	o.Global = func(g *config.Global) {
		g.Defaults.Summary.Enabled = true
		g.Defaults.Summary.TriggerTurns = 100
		g.Defaults.Summary.KeepTurns = 2
	}
	o.Summary = func(*summary.Config) {}
	return o
}

// waitAny waits for the next finished exchange, whatever its
// conversation.
func waitAny(t *testing.T, h *e2etest.Harness) proxy.ExchangeDone {
	t.Helper()
	select {
	case d := <-h.Done:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("no exchange finished within 10s")
	}
	return proxy.ExchangeDone{}
}

// item is a Responses message item of role with text.
func item(role, text string) string {
	return `{"type":"message","role":"` + role + `","content":` + strconv.Quote(text) + `}`
}

// compactBody is a compaction's body with the given items.
func compactBody(items ...string) string {
	return `{"model":"gpt-4.1","prompt_cache_key":"k","input":[` + strings.Join(items, ",") + `]}`
}

// compactedOutput checks a compaction's answer as the Open Responses
// suite's compact-response does, and returns its output items.
func compactedOutput(t *testing.T, r e2etest.Result) []gjson.Result {
	t.Helper()
	if r.Status != 200 {
		t.Fatalf("compact: got %d %s, want 200", r.Status, r.Body)
	}
	b := gjson.Parse(r.Body)
	for _, k := range []string{"id", "object", "output", "created_at", "usage.input_tokens", "usage.output_tokens", "usage.total_tokens",
		"usage.input_tokens_details.cached_tokens", "usage.output_tokens_details.reasoning_tokens"} {
		if !b.Get(k).Exists() {
			t.Errorf("compact answer lacks %s: %s", k, r.Body)
		}
	}
	if b.Get("object").Str != "response.compaction" {
		t.Errorf("object: got %q, want response.compaction", b.Get("object").Str)
	}
	out := b.Get("output").Array()
	if n := len(out); n == 0 || out[n-1].Get("type").Str != "compaction" || out[n-1].Get("id").Str == "" ||
		!strings.HasPrefix(out[n-1].Get("encrypted_content").Str, "recall_cmp_") {
		t.Fatalf("output: got %s, want a compaction item of Recall's last", b.Get("output").Raw)
	}
	for _, it := range out[:len(out)-1] {
		if it.Get("type").Str != "message" || it.Get("role").Str != "user" || it.Get("status").Str != "completed" ||
			!strings.HasPrefix(it.Get("id").Str, "msg_") || !it.Get("content").IsArray() {
			t.Errorf("kept item: got %s, want a completed user message item", it.Raw)
		}
	}
	return out
}

// raws are items' JSON.
func raws(items []gjson.Result) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Raw
	}
	return out
}

// A compaction on each upstream: Recall records the window the client
// sent (its resent turns recognised, not stored twice), makes its summary
// cover every turn (keep_turns too) by one call in the upstream's own
// protocol, and answers the user messages and a compaction item. The next
// request that sends that window back gets the summary in its place: the
// upstream sees the summary and the new message, none of the turns the
// summary covers, and the store holds each message once.
func TestCompactOnEveryUpstream(t *testing.T) {
	for _, tenant := range []string{"oa", "ch", "an"} {
		t.Run(tenant, func(t *testing.T) {
			h := e2etest.New(t, compactUpstreams())
			conv := "cmp-" + tenant
			path := "/c/" + conv + "/v1/responses"
			key := "rk-" + tenant
			window := []string{item("user", "turn one: the code word is KIWI")}
			for _, next := range []string{"turn two"} {
				if r := h.Post(path, key, "", `{"model":"gpt-4.1","store":false,"input":[`+strings.Join(window, ",")+`]}`); r.Status != 200 {
					t.Fatalf("%d %s", r.Status, r.Body)
				}
				h.WaitDone(conv)
				window = append(window, item("assistant", "echo: "+gjson.Get(window[len(window)-1], "content").Str), item("user", next))
			}
			if r := h.Post(path, key, "", `{"model":"gpt-4.1","store":false,"input":[`+strings.Join(window, ",")+`]}`); r.Status != 200 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			h.WaitDone(conv)
			window = append(window, item("assistant", "echo: turn two"))

			out := compactedOutput(t, h.Post(path+"/compact", key, "", compactBody(window...)))
			h.WaitDone(conv)
			if len(out) != 3 || texts([]json.RawMessage{json.RawMessage(out[0].Raw), json.RawMessage(out[1].Raw)})[1] != "user: turn two" {
				t.Errorf("compacted window: got %s, want the two user messages and the compaction", raws(out))
			}
			calls := h.Up.SummaryCalls()
			if len(calls) != 1 {
				t.Fatalf("summariser calls: got %d, want 1", len(calls))
			}
			if want := map[string]string{"oa": "/v1/chat/completions", "ch": "/v1/chat/completions", "an": "/v1/messages"}[tenant]; calls[0].Path != want {
				t.Errorf("summariser call on %s, want %s (the upstream's protocol)", calls[0].Path, want)
			}
			if in := string(calls[0].Body); !strings.Contains(in, "KIWI") || !strings.Contains(in, "echo: turn two") {
				t.Errorf("summariser input lacks the turns, the newest too: %s", in)
			}
			if n := len(e2etest.Active(h.Stored(tenant, conv))); n != 4 {
				t.Errorf("stored after the compaction: %d active messages, want the 4 of the window, once each", n)
			}

			next := append(raws(out), item("user", "turn three"))
			if r := h.Post(path, key, "", `{"model":"gpt-4.1","store":false,"input":[`+strings.Join(next, ",")+`]}`); r.Status != 200 {
				t.Fatalf("after the compaction: %d %s", r.Status, r.Body)
			}
			h.WaitDone(conv)
			last := h.Up.Last()
			if !strings.Contains(string(last.Body), strings.TrimSuffix(plan.SummaryPrefix, "\n")) {
				t.Errorf("the request after the compaction lacks the summary: %s", last.Body)
			}
			got := texts(last.Messages)
			for _, m := range got {
				if strings.Contains(m, plan.SummaryPrefix) {
					continue // the summary, which stands for them
				}
				if strings.Contains(m, "turn one") || strings.Contains(m, "echo: turn two") || m == "user: turn two" || strings.Contains(m, "recall_cmp_") {
					t.Errorf("the request after the compaction sent %q, a turn the summary covers", m)
				}
			}
			if len(got) == 0 || got[len(got)-1] != "user: turn three" {
				t.Errorf("the request after the compaction: got %q, want it to end with the new message", got)
			}
			stored := e2etest.Active(h.Stored(tenant, conv))
			if n := len(stored); n != 6 {
				t.Errorf("stored after the next turn: %q, want the window once and the new turn", stored)
			}
		})
	}
}

// The Open Responses suite's compact-response: no conversation named, no
// history yet. Recall keeps the window in a conversation of its own;
// the compaction it answers continues that conversation on the next
// request, which names nothing else (store false, as Codex sends).
func TestCompactWithNoHistoryYet(t *testing.T) {
	h := e2etest.New(t, compactUpstreams())
	out := compactedOutput(t, h.Post("/v1/responses/compact", "rk-ch", "", compactBody(
		item("user", "We agreed to launch on Tuesday and notify support first."),
		item("assistant", "Understood. The launch is Tuesday, with support notified beforehand."))))
	d := waitAny(t, h)
	if !strings.HasPrefix(d.Conversation, "conv_") || !d.Committed {
		t.Fatalf("compaction exchange: %+v, want one committed in a conversation of Recall's", d)
	}
	next := append(raws(out), item("user", "When do we launch?"))
	if r := h.Post("/v1/responses", "rk-ch", "", `{"model":"gpt-4.1","store":false,"input":[`+strings.Join(next, ",")+`]}`); r.Status != 200 {
		t.Fatalf("after the compaction: %d %s", r.Status, r.Body)
	}
	if got := h.WaitDone(d.Conversation); !got.Committed {
		t.Errorf("the next request: %+v, want it recorded in the compaction's conversation", got)
	}
	got := texts(h.Up.Last().Messages)
	want := []string{"system: " + plan.SummaryPrefix + "Tuesday", "user: When do we launch?"}
	if len(got) != 2 || !strings.HasPrefix(got[0], "system: "+plan.SummaryPrefix) || got[1] != want[1] || strings.Contains(strings.Join(got, "|"), "Understood") {
		t.Errorf("upstream got %q, want the summary and the new message alone", got)
	}
}

// The Open Responses suite's compact-missing-model: 400, OpenAI's shape,
// nothing stored, nothing sent.
func TestCompactMissingModel(t *testing.T) {
	h := e2etest.New(t, compactUpstreams())
	r := h.Post("/c/cmp-nomodel/v1/responses/compact", "rk-oa", "", `{"input":[{"type":"message","role":"user","content":"Compact this conversation."}]}`)
	e := gjson.Get(r.Body, "error")
	if r.Status != 400 || e.Get("code").Str != "missing_required_parameter" || e.Get("param").Str != "model" || e.Get("type").Str != "invalid_request_error" {
		t.Errorf("got %d %s, want 400 missing_required_parameter for model", r.Status, r.Body)
	}
	waitAny(t, h)
	if m := h.Meta("oa", "cmp-nomodel"); m.NextSeq != 0 {
		t.Errorf("stored: %+v, want nothing", m)
	}
	if n := len(h.Up.Requests()); n != 0 {
		t.Errorf("upstream requests: %d, want 0", n)
	}
}

// A compaction item that names nothing of the caller's (forged, damaged,
// another tenant's) is a 400 in OpenAI's shape, with nothing stored and
// nothing sent, on the compaction route and the Responses route alike.
func TestForgedCompactionIsRefused(t *testing.T) {
	h := e2etest.New(t, compactUpstreams())
	out := compactedOutput(t, h.Post("/c/theirs/v1/responses/compact", "rk-ch", "", compactBody(item("user", "a secret of ch"), item("assistant", "noted"))))
	h.WaitDone("theirs")
	theirs := out[len(out)-1].Raw
	sent := len(h.Up.Requests())
	for _, tc := range []struct{ name, key, item string }{
		{"another tenant's", "rk-an", theirs},
		{"forged", "rk-ch", `{"type":"compaction","encrypted_content":"recall_cmp_dGhlaXJz_1_1"}`},
		{"damaged", "rk-ch", strings.Replace(theirs, "recall_cmp_", "recall_cmp_x", 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/c/mine/v1/responses", "/c/mine/v1/responses/compact", "/v1/responses"} {
				r := h.Post(path, tc.key, "", `{"model":"gpt-4.1","input":[`+tc.item+`,`+item("user", "go on")+`]}`)
				e := gjson.Get(r.Body, "error")
				if r.Status != 400 || e.Get("code").Str != "invalid_encrypted_content" || e.Get("param").Str != "input" || strings.Contains(r.Body, "secret") {
					t.Errorf("%s: got %d %s, want 400 invalid_encrypted_content", path, r.Status, r.Body)
				}
				waitAny(t, h)
			}
			for _, ns := range []string{"an", "ch"} {
				if m := h.Meta(ns, "mine"); m.NextSeq != 0 {
					t.Errorf("stored in %s: %+v, want nothing", ns, m)
				}
			}
			if n := len(h.Up.Requests()); n != sent {
				t.Errorf("upstream requests: %d, want %d", n, sent)
			}
		})
	}
}

// A compaction the real OpenAI made goes to an openai upstream as it
// came; another upstream cannot read it: a 400 that says so.
func TestOpenAIsCompactionGoesOnlyToOpenAI(t *testing.T) {
	h := e2etest.New(t, compactUpstreams())
	theirs := `{"type":"compaction","id":"cmp_1","encrypted_content":"gAAAAABpM0Yj-opaque="}`
	body := `{"model":"gpt-4.1","store":false,"input":[` + item("user", "hi") + `,` + theirs + `,` + item("user", "go on") + `]}`
	if r := h.Post("/v1/responses", "rk-oa", "", body); r.Status != 200 {
		t.Fatalf("openai upstream: got %d %s, want 200", r.Status, r.Body)
	}
	waitAny(t, h)
	if in := gjson.GetBytes(h.Up.Last().Body, "input.1"); in.Get("type").Str != "compaction" || in.Get("encrypted_content").Str != "gAAAAABpM0Yj-opaque=" {
		t.Errorf("openai upstream got %s, want the compaction item untouched", in.Raw)
	}
	sent := len(h.Up.Requests())
	for _, key := range []string{"rk-ch", "rk-an"} {
		r := h.Post("/v1/responses", key, "", body)
		if e := gjson.Get(r.Body, "error"); r.Status != 400 || e.Get("code").Str != "invalid_encrypted_content" {
			t.Errorf("%s: got %d %s, want 400 invalid_encrypted_content", key, r.Status, r.Body)
		}
		waitAny(t, h)
	}
	if n := len(h.Up.Requests()); n != sent {
		t.Errorf("upstream requests: %d, want %d", n, sent)
	}
}

// A compaction whose summariser fails is answered as an upstream failure
// and commits nothing: not the window's items, not a summary.
func TestFailedCompactionCommitsNothing(t *testing.T) {
	h := e2etest.New(t, compactUpstreams())
	h.Up.EnqueueSummary(upstreamtest.Reply{Status: 500}, upstreamtest.Reply{Status: 500}, upstreamtest.Reply{Status: 500})
	r := h.Post("/c/cmp-fail/v1/responses/compact", "rk-ch", "", compactBody(item("user", "one"), item("assistant", "echo: one")))
	if e := gjson.Get(r.Body, "error"); r.Status != 502 || e.Get("code").Str != "upstream_unavailable" || strings.Contains(r.Body, "sk-up") {
		t.Errorf("got %d %s, want 502 upstream_unavailable", r.Status, r.Body)
	}
	if d := h.WaitDone("cmp-fail"); d.Committed {
		t.Errorf("exchange: %+v, want nothing committed", d)
	}
	if m := h.Meta("ch", "cmp-fail"); m.NextSeq != 0 || m.Summary != nil {
		t.Errorf("stored: %+v, want nothing", m)
	}
}

// A compaction may name its conversation by previous_response_id alone,
// with no input: the conversation's stored turns are compacted. One
// that names nothing that holds anything is a 400 on input.
func TestCompactByPreviousResponseID(t *testing.T) {
	h := e2etest.New(t, compactUpstreams())
	client := h.Client("rk-an", "")
	r1 := ask(t, client, "the code word is FIG", "")
	waitAny(t, h)
	out := compactedOutput(t, h.Post("/v1/responses/compact", "rk-an", "", `{"model":"claude-sonnet-4-5","previous_response_id":"`+r1.ID+`"}`))
	h.WaitDone(r1.Conversation.ID)
	if len(out) != 1 {
		t.Errorf("output: got %s, want the compaction alone (the request held no user message)", raws(out))
	}
	if m := h.Meta("an", r1.Conversation.ID); m.Summary == nil || m.Summary.Through != 2 || !strings.Contains(m.Summary.Text, "FIG") {
		t.Errorf("summary: got %+v, want the stored turn covered", m.Summary)
	}
	r := h.Post("/v1/responses/compact", "rk-an", "", `{"model":"claude-sonnet-4-5"}`)
	if e := gjson.Get(r.Body, "error"); r.Status != 400 || e.Get("param").Str != "input" {
		t.Errorf("nothing to compact: got %d %s, want 400 on input", r.Status, r.Body)
	}
	waitAny(t, h)
}
