package responses

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/wire"
)

// post sends body to the fake upstream's /responses.
func post(t *testing.T, s *upstreamtest.Server, body string) []byte {
	t.Helper()
	resp, err := http.Post(s.URL()+"/responses", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("upstream: %d %s", resp.StatusCode, b)
	}
	return b
}

// upstreamBody parses client, a Responses request, and returns it with the
// body Recall sends a Responses upstream for it.
func upstreamBody(t *testing.T, client string) (*wire.Request, []byte) {
	t.Helper()
	req, err := Ingress{}.ParseRequest([]byte(client))
	if err != nil {
		t.Fatal(err)
	}
	body, err := Upstream{}.AppendBody(nil, req, req.Instructions, req.Messages)
	if err != nil {
		t.Fatal(err)
	}
	return req, body
}

// feed reads stream's events into asm in order, handing each event's
// deltas to each (they are valid until the next event), and reports
// whether the last event was the stream's end.
func feed(t *testing.T, asm wire.Assembler, stream []byte, each func([]wire.Delta)) (done bool) {
	t.Helper()
	er := chat.NewEventReader(bytes.NewReader(stream), 0)
	var deltas []wire.Delta
	for {
		ev, err := er.Next()
		if errors.Is(err, io.EOF) {
			return done
		}
		if err != nil {
			t.Fatal(err)
		}
		if deltas, done, err = asm.Event(deltas[:0], nil, ev.Data); err != nil {
			t.Fatal(err)
		}
		each(deltas)
	}
}

// The fake upstream's answer (the official event sequence, with a
// reasoning item, text and a call), assembled from its stream, equals the
// answer parsed from the same reply not streamed; its deltas drive the
// Renderer to a stream whose items line up with the final Response.
func TestAssembleUpstreamStream(t *testing.T) {
	s := upstreamtest.NewTB(t)
	reply := upstreamtest.Reply{Content: "Checking.", ToolCalls: []upstreamtest.ToolCall{{ID: "call_w", Name: "weather", Arguments: `{"city":"Oslo"}`}}}
	s.Enqueue(reply, reply)
	req, body := upstreamBody(t, `{"model":"o4-mini","input":"weather in Oslo?","stream":true}`)
	stream := post(t, s, string(body))

	asm := Upstream{}.NewAssembler()
	var deltas []wire.Delta
	if done := feed(t, asm, stream, func(d []wire.Delta) { deltas = append(deltas, d...) }); !done {
		t.Fatal("stream not done")
	}
	streamed, err := asm.Answer()
	if err != nil {
		t.Fatal(err)
	}
	whole, err := Upstream{}.ParseAnswer(post(t, s, strings.Replace(string(body), `"stream":true`, `"stream":false`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []wire.Answer{streamed, whole} {
		if len(a.Stored) != 3 || itemType(parse(a.Stored[0])) != typeReasoning || a.Stop != wire.StopToolCalls ||
			a.Usage.ReasoningTokens == 0 || a.Protocol != wire.Responses {
			t.Errorf("answer: got %d stored (%q), stop %q, usage %+v, protocol %v", len(a.Stored), a.Stored, a.Stop, a.Usage, a.Protocol)
		}
	}
	var text, args strings.Builder
	var kinds []wire.DeltaKind
	for _, d := range deltas {
		kinds = append(kinds, d.Kind)
		switch d.Kind {
		case wire.TextDelta:
			text.WriteString(d.Text)
		case wire.ArgumentsDelta:
			args.WriteString(d.Text)
		}
	}
	if text.String() != "Checking." || args.String() != `{"city":"Oslo"}` || kinds[0] != wire.ReasoningDelta || kinds[len(kinds)-1] != wire.Finish {
		t.Errorf("deltas: got text %q args %q kinds %v", text.String(), args.String(), kinds)
	}

	// Rendered back to a Responses client.
	req.ResponseID, streamed.ResponseID = "resp_r9", "resp_r9"
	out := renderStream(nil, req, deltas, &streamed)
	addedIDs := map[int64]string{}
	var final gjson.Result
	for _, e := range renderedEvents(out) {
		switch e.Get("type").Str {
		case "response.output_item.added":
			addedIDs[e.Get("output_index").Int()] = e.Get("item.id").Str
		case "response.completed":
			final = e.Get("response")
		}
	}
	items := final.Get("output").Array()
	if len(items) != 3 || len(addedIDs) != 3 {
		t.Fatalf("rendered: %d final items, %d added, want 3 and 3:\n%s", len(items), len(addedIDs), out)
	}
	for i, it := range items {
		if addedIDs[int64(i)] != it.Get("id").Str {
			t.Errorf("item %d: added as %q, final %q", i, addedIDs[int64(i)], it.Get("id").Str)
		}
	}
	if items[0].Get("id").Str != parse(streamed.Stored[0]).Get("id").Str || items[0].Get("encrypted_content").Str == "" {
		t.Errorf("reasoning: got %s, want the upstream's id and encrypted_content", items[0].Raw)
	}
	if items[1].Get("id").Str != "msg_r9_1" || items[2].Get("id").Str != "fc_r9_2" {
		t.Errorf("ids: got %s %s, want msg_r9_1 fc_r9_2", items[1].Get("id").Str, items[2].Get("id").Str)
	}
}

func TestAssembleFailed(t *testing.T) {
	asm := Upstream{}.NewAssembler()
	_, done, err := asm.Event(nil, nil, []byte(`{"type":"response.failed","sequence_number":3,"response":{"id":"r","status":"failed","error":{"code":"server_error","message":"boom"},"output":[]}}`))
	if done || !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "boom") {
		t.Errorf("got done %v err %v, want an ErrFailed with the message", done, err)
	}
}

func TestParseAnswerIncomplete(t *testing.T) {
	a, err := Upstream{}.ParseAnswer([]byte(`{"id":"r","object":"response","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},` +
		`"output":[{"id":"m","type":"message","status":"incomplete","role":"assistant","content":[{"type":"output_text","text":"cut"}]}],` +
		`"usage":{"input_tokens":5,"input_tokens_details":{"cached_tokens":2},"output_tokens":16,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":21}}`))
	if err != nil {
		t.Fatal(err)
	}
	if a.Stop != wire.StopLength || a.Usage.CachedTokens != 2 || len(a.Message.Parts) != 1 || a.Message.Parts[0].Text != "cut" {
		t.Errorf("got stop %q usage %+v parts %+v", a.Stop, a.Usage, a.Message.Parts)
	}
	out := AppendResponse(nil, &wire.Request{Protocol: wire.Responses, Store: true}, &a)
	if got := gjson.GetBytes(out, "incomplete_details.reason").Str; got != "max_output_tokens" || gjson.GetBytes(out, "status").Str != "incomplete" {
		t.Errorf("rendered: got %s", out)
	}
}

// renderedEvents reads a rendered Responses stream into its events.
func renderedEvents(out []byte) []gjson.Result {
	var evs []gjson.Result
	er := chat.NewEventReader(bytes.NewReader(out), 0)
	for {
		ev, err := er.Next()
		if err != nil {
			return evs
		}
		evs = append(evs, gjson.ParseBytes(ev.Data))
	}
}
