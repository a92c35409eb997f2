package responses

import (
	"bytes"
	"testing"

	"github.com/recallproxy/recall/wire"
)

// storedCases are answers a stream ends with, each with the deltas
// streamed before its end.
func storedCases(t *testing.T) []struct {
	name   string
	req    *wire.Request
	deltas []wire.Delta
	a      *wire.Answer
} {
	t.Helper()
	req, err := Ingress{}.ParseRequest([]byte(`{"model":"gpt-4o","instructions":"Be brief.","input":"hi","metadata":{"k":"v"},"temperature":0.5}`))
	if err != nil {
		t.Fatal(err)
	}
	req.ResponseID, req.Created, req.Store, req.Conversation = "resp_abc", 1700000000, true, "c1"
	text := wire.Message{Role: wire.RoleAssistant, Parts: []wire.Part{{Kind: wire.Text, Text: "Hello there."}}}
	call := wire.Message{Role: wire.RoleAssistant, Parts: []wire.Part{{Kind: wire.ToolCall, CallID: "call_1", Name: "f", Arguments: `{"x":1}`}}}
	return []struct {
		name   string
		req    *wire.Request
		deltas []wire.Delta
		a      *wire.Answer
	}{
		{name: "text", req: req, deltas: []wire.Delta{{Kind: wire.TextDelta, Text: "Hello there."}},
			a: &wire.Answer{Protocol: wire.ChatCompletions, Model: "gpt-4o", Message: text, Stop: wire.StopEnd, Completed: 1700000002,
				Usage: wire.Usage{InputTokens: 12, OutputTokens: 3}}},
		{name: "tool call", req: req, deltas: []wire.Delta{{Kind: wire.ToolCallStart, CallID: "call_1", Name: "f"}, {Kind: wire.ArgumentsDelta, Text: `{"x":1}`}},
			a: &wire.Answer{Protocol: wire.ChatCompletions, Model: "gpt-4o", Message: call, Stop: wire.StopToolCalls, Completed: 1700000002}},
		{name: "cut at the limit", req: req, deltas: []wire.Delta{{Kind: wire.TextDelta, Text: "Hello"}},
			a: &wire.Answer{Protocol: wire.ChatCompletions, Model: "gpt-4o", Message: text, Stop: wire.StopLength}},
		{name: "a Responses upstream's", req: req,
			a: &wire.Answer{Protocol: wire.Responses, Model: "gpt-4o-2024", Stop: wire.StopEnd, Completed: 1700000003,
				Stored:   [][]byte{[]byte(`{"id":"msg_up","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"Hi."}],"role":"assistant"}`)},
				Settings: []byte(`{"service_tier":"default","temperature":1.0}`)}},
	}
}

// TestStoredResponseIsEndsResponse: the stored Response object a
// stream's renderer gives is AppendStoredResponse's, byte for byte, and
// the stream's last event carries the same Response as a renderer that
// rendered no stored copy gives.
func TestStoredResponseIsEndsResponse(t *testing.T) {
	for _, tc := range storedCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			r := Ingress{}.NewRenderer(tc.req).(*Renderer)
			alone := Ingress{}.NewRenderer(tc.req).(*Renderer)
			for _, d := range tc.deltas {
				r.Delta(nil, d)
				alone.Delta(nil, d)
			}
			got := r.StoredResponse(nil, tc.a)
			if want := AppendStoredResponse(nil, tc.req, tc.a); !bytes.Equal(got, want) {
				t.Errorf("got stored\n%s\nwant\n%s", got, want)
			}
			if got, want := r.End(nil, tc.a), alone.End(nil, tc.a); !bytes.Equal(got, want) {
				t.Errorf("got end\n%s\nwant\n%s", got, want)
			}
			if got2 := r.StoredResponse(nil, tc.a); !bytes.Equal(got2, got) {
				t.Errorf("got stored after End\n%s\nwant\n%s", got2, got)
			}
		})
	}
}

// TestStreamRendersTheFinishedResponseOnce: the finished Response is
// rendered once for the stored copy and the stream's last event: End
// after StoredResponse renders neither the Response nor its items anew
// (no allocation into a buffer with room).
func TestStreamRendersTheFinishedResponseOnce(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts mean nothing under the race detector")
	}
	for _, tc := range storedCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			r := Ingress{}.NewRenderer(tc.req).(*Renderer)
			for _, d := range tc.deltas {
				r.Delta(nil, d)
			}
			r.StoredResponse(nil, tc.a)
			end := make([]byte, 0, 16<<10)
			if n := testing.AllocsPerRun(10, func() { r.End(end[:0], tc.a) }); n != 0 {
				t.Errorf("End after StoredResponse allocates %.0f times, want 0: it rendered the Response again", n)
			}
		})
	}
}

// TestAnswerRenderedFromTheStoredCopy: a non-streamed answer's Response
// from a renderer that rendered its stored copy is AppendResponse's, byte
// for byte, and renders neither the Response nor its items anew (no
// allocation into a buffer with room); for an answer or a request it
// rendered no stored copy of, the renderer renders anew.
func TestAnswerRenderedFromTheStoredCopy(t *testing.T) {
	for _, tc := range storedCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			r := Ingress{}.NewRenderer(tc.req).(*Renderer)
			want := AppendResponse(nil, tc.req, tc.a)
			if got := r.AppendAnswer(nil, tc.req, tc.a); !bytes.Equal(got, want) {
				t.Errorf("before a stored copy: got\n%s\nwant\n%s", got, want)
			}
			r.StoredResponse(nil, tc.a)
			if got := r.AppendAnswer(nil, tc.req, tc.a); !bytes.Equal(got, want) {
				t.Errorf("from the stored copy: got\n%s\nwant\n%s", got, want)
			}
			other := *tc.a
			other.Model = "another-model"
			if got, want := r.AppendAnswer(nil, tc.req, &other), AppendResponse(nil, tc.req, &other); !bytes.Equal(got, want) {
				t.Errorf("another answer: got\n%s\nwant\n%s", got, want)
			}
			if raceEnabled {
				return // allocation counts mean nothing under the race detector
			}
			dst := make([]byte, 0, 16<<10)
			if n := testing.AllocsPerRun(10, func() { r.AppendAnswer(dst[:0], tc.req, tc.a) }); n != 0 {
				t.Errorf("AppendAnswer after StoredResponse allocates %.0f times, want 0: it rendered the Response again", n)
			}
		})
	}
}
