package responses

import (
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/wire"
)

// A streamed answer rendered to a Responses client closes each item with
// the item the final Response lists: the reasoning item's
// response.output_item.done carries its encrypted_content. Codex CLI
// (store: false, include reasoning.encrypted_content) keeps the items of
// those events and sends them back on its next call; without the content
// the upstream refuses the item and the resend no longer matches the
// stored one.
func TestStreamedReasoningItemDoneCarriesEncryptedContent(t *testing.T) {
	s := upstreamtest.NewTB(t)
	s.Enqueue(upstreamtest.Reply{Content: "Reading.", ToolCalls: []upstreamtest.ToolCall{{ID: "call_r", Name: "read", Arguments: `{"path":"notes.txt"}`}}})
	req, body := upstreamBody(t, `{"model":"gpt-5.1-codex","input":"read notes.txt","stream":true,"store":false,"include":["reasoning.encrypted_content"]}`)
	asm := Upstream{}.NewAssembler()
	req.ResponseID = "resp_d1"
	rd := Ingress{}.NewRenderer(req)
	var out []byte
	feed(t, asm, post(t, s, string(body)), func(deltas []wire.Delta) {
		for _, d := range deltas { // as the proxy relays: event by event
			out = rd.Delta(out, d)
		}
	})
	a, err := asm.Answer()
	if err != nil {
		t.Fatal(err)
	}
	a.ResponseID = "resp_d1"
	out = rd.End(out, &a)

	done := map[int64]gjson.Result{}
	var final []gjson.Result
	for _, e := range renderedEvents(out) {
		switch e.Get("type").Str {
		case "response.output_item.done":
			done[e.Get("output_index").Int()] = e.Get("item")
		case "response.completed":
			final = e.Get("response.output").Array()
		}
	}
	if len(final) != 3 || itemType(final[0]) != typeReasoning {
		t.Fatalf("final output: got %v, want reasoning, message, function_call", final)
	}
	if got := done[0].Get("encrypted_content").Str; got == "" || got != final[0].Get("encrypted_content").Str {
		t.Errorf("reasoning output_item.done: got %s, want encrypted_content %q", done[0].Raw, final[0].Get("encrypted_content").Str)
	}
	for i, f := range final {
		if (Codec{}).Hash([]byte(done[int64(i)].Raw)) != (Codec{}).Hash([]byte(f.Raw)) {
			t.Errorf("item %d: output_item.done has %s, the final Response %s", i, done[int64(i)].Raw, f.Raw)
		}
	}
}
