package messages

import (
	"bytes"
	"errors"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/wire"
)

// sseEvent is one event of a recorded stream.
type sseEvent struct{ name, data []byte }

// readEvents reads a recorded SSE stream with Recall's event reader.
func readEvents(t *testing.T, stream []byte) []sseEvent {
	t.Helper()
	er := chat.NewEventReader(bytes.NewReader(stream), 0)
	var out []sseEvent
	for {
		ev, err := er.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(ev.Data) == 0 {
			continue
		}
		var name []byte
		for _, line := range bytes.Split(ev.Raw, []byte("\n")) {
			if n, ok := bytes.CutPrefix(line, []byte("event:")); ok {
				name = bytes.TrimSpace(n)
			}
		}
		out = append(out, sseEvent{append([]byte(nil), name...), append([]byte(nil), ev.Data...)})
	}
}

// assemble feeds a stream to an Assembler, returning its deltas.
func assemble(t *testing.T, stream []byte) (*Assembler, []wire.Delta) {
	t.Helper()
	a := Upstream{}.NewAssembler().(*Assembler)
	var deltas []wire.Delta
	evs := readEvents(t, stream)
	for i, ev := range evs {
		var done bool
		var err error
		deltas, done, err = a.Event(deltas, ev.name, ev.data)
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if done != (i == len(evs)-1) {
			t.Fatalf("event %d (%s): got done %v", i, ev.name, done)
		}
	}
	return a, deltas
}

// The tool-use stream of the streaming reference
// (https://docs.anthropic.com/en/docs/build-with-claude/streaming).
func TestAssembleToolUseStream(t *testing.T) {
	stream, _ := os.ReadFile("testdata/stream_tool_use.sse")
	a, deltas := assemble(t, stream)
	usage := wire.Usage{InputTokens: 572, CachedTokens: 100, OutputTokens: 89}
	wantDeltas := []wire.Delta{
		{Kind: wire.TextDelta, Text: "Okay"},
		{Kind: wire.TextDelta, Text: ", let's check the weather for San Francisco, CA:"},
		{Kind: wire.ToolCallStart, CallID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "get_weather"},
		{Kind: wire.ArgumentsDelta, Text: `{"location":`},
		{Kind: wire.ArgumentsDelta, Text: ` "San Francisco, CA", "unit": "fahrenheit"}`},
		{Kind: wire.Finish, Text: wire.StopToolCalls, Usage: usage},
	}
	if !reflect.DeepEqual(deltas, wantDeltas) {
		t.Errorf("deltas:\ngot  %+v\nwant %+v", deltas, wantDeltas)
	}
	ans, err := a.Answer()
	if err != nil {
		t.Fatal(err)
	}
	wantStored := `{"role":"assistant","content":[{"type":"text","text":"Okay, let's check the weather for San Francisco, CA:"},{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{"location": "San Francisco, CA", "unit": "fahrenheit"}}]}`
	if len(ans.Stored) != 1 || string(ans.Stored[0]) != wantStored {
		t.Errorf("stored:\ngot  %s\nwant %s", strs(ans.Stored), wantStored)
	}
	if ans.ID != "msg_014p7gG3wDgGV9EUtLvnow3U" || ans.Model != "claude-opus-4-1-20250805" || ans.Stop != wire.StopToolCalls || ans.Usage != usage {
		t.Errorf("got id %q model %q stop %q usage %+v", ans.ID, ans.Model, ans.Stop, ans.Usage)
	}
	if got := ans.Message.Parts[1]; got.Kind != wire.ToolCall || got.Arguments != `{"location": "San Francisco, CA", "unit": "fahrenheit"}` {
		t.Errorf("canonical call: got %+v", got)
	}
}

// Thinking blocks keep their text and signature in the stored answer, so
// they can be sent back to an anthropic upstream.
func TestAssembleThinkingStream(t *testing.T) {
	stream, _ := os.ReadFile("testdata/stream_thinking.sse")
	a, deltas := assemble(t, stream)
	if deltas[0].Kind != wire.ReasoningDelta || deltas[2].Kind != wire.TextDelta || deltas[2].Index != 0 {
		t.Errorf("deltas: got %+v", deltas)
	}
	ans, err := a.Answer()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"role":"assistant","content":[{"type": "thinking", "thinking": "Let me solve this step by step:\n\n1. First break down 27 * 453\n2. 453 = 400 + 50 + 3", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds..."},{"type": "text", "text": "27 * 453 = 12,231"}]}`
	if string(ans.Stored[0]) != want {
		t.Errorf("stored:\ngot  %s\nwant %s", ans.Stored[0], want)
	}
	if p := ans.Message.Parts[0]; p.Kind != wire.Opaque || p.Origin != wire.Messages {
		t.Errorf("thinking part: got %+v, want opaque of origin messages", p)
	}
}

func TestAssembleErrors(t *testing.T) {
	start := `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","usage":{"input_tokens":1,"output_tokens":0}}}`
	tests := []struct {
		name   string
		events [][2]string
		want   error
	}{
		{"error event", [][2]string{{"message_start", start}, {"error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}}, ErrUpstream},
		{"not json", [][2]string{{"message_start", start}, {"content_block_delta", `{"type":`}}, ErrBadAnswer},
		{"delta of no block", [][2]string{{"message_start", start}, {"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`}}, ErrBadAnswer},
		{"block out of order", [][2]string{{"message_start", start}, {"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`}}, ErrBadAnswer},
		{"stop before start", [][2]string{{"message_stop", `{"type":"message_stop"}`}}, ErrBadAnswer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Upstream{}.NewAssembler()
			var err error
			for _, ev := range tt.events {
				if _, _, err = a.Event(nil, []byte(ev[0]), []byte(ev[1])); err != nil {
					break
				}
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
}

// A stream cut before message_stop has no answer.
func TestAssembleIncomplete(t *testing.T) {
	stream, _ := os.ReadFile("testdata/stream_tool_use.sse")
	cut := stream[:strings.Index(string(stream), "event: message_delta")]
	a := Upstream{}.NewAssembler()
	for _, ev := range readEvents(t, cut) {
		if _, done, err := a.Event(nil, ev.name, ev.data); err != nil || done {
			t.Fatalf("got done %v, %v", done, err)
		}
	}
	if _, err := a.Answer(); !errors.Is(err, ErrIncomplete) {
		t.Errorf("got %v, want ErrIncomplete", err)
	}
}

// Events named only in their data (no "event:" line) are read too.
func TestAssembleUnnamedEvents(t *testing.T) {
	stream, _ := os.ReadFile("testdata/stream_tool_use.sse")
	a := Upstream{}.NewAssembler()
	done := false
	for _, ev := range readEvents(t, stream) {
		var err error
		if _, done, err = a.Event(nil, nil, ev.data); err != nil {
			t.Fatal(err)
		}
	}
	if ans, err := a.Answer(); !done || err != nil || len(ans.Message.Parts) != 2 {
		t.Errorf("got done %v, %v, %d parts", done, err, len(ans.Message.Parts))
	}
}

// The non-streamed tool-use answer of the Messages reference
// (https://docs.anthropic.com/en/api/messages), with a thinking block.
func TestParseAnswerFixture(t *testing.T) {
	body, _ := os.ReadFile("testdata/answer_tool_use.json")
	ans, err := Upstream{}.ParseAnswer(body)
	if err != nil {
		t.Fatal(err)
	}
	if ans.ID != "msg_01Aq9w938a90dw8q" || ans.Stop != wire.StopToolCalls {
		t.Errorf("got id %q stop %q", ans.ID, ans.Stop)
	}
	if want := (wire.Usage{InputTokens: 3105, CachedTokens: 1000, CacheCreationTokens: 10, OutputTokens: 503}); ans.Usage != want {
		t.Errorf("usage: got %+v, want %+v", ans.Usage, want)
	}
	if !strings.HasPrefix(string(ans.Stored[0]), `{"role":"assistant","content":[`+"\n"+`    {"type": "thinking"`) {
		t.Errorf("stored: got %s", ans.Stored[0])
	}
	kinds := []wire.Kind{}
	for _, p := range ans.Message.Parts {
		kinds = append(kinds, p.Kind)
	}
	if !reflect.DeepEqual(kinds, []wire.Kind{wire.Opaque, wire.Text, wire.ToolCall}) {
		t.Errorf("parts: got %v", kinds)
	}
	for reason, want := range map[string]string{"end_turn": wire.StopEnd, "stop_sequence": wire.StopEnd, "max_tokens": wire.StopLength, "refusal": wire.StopFilter} {
		a, err := Upstream{}.ParseAnswer([]byte(`{"id":"msg_1","type":"message","role":"assistant","content":[],"stop_reason":"` + reason + `","usage":{"input_tokens":1,"output_tokens":1}}`))
		if err != nil || a.Stop != want {
			t.Errorf("%s: got %q, %v; want %q", reason, a.Stop, err, want)
		}
	}
	if _, err := (Upstream{}).ParseAnswer([]byte(`{"type":"error","error":{"type":"api_error","message":"x"}}`)); !errors.Is(err, ErrUpstream) {
		t.Errorf("error object: got %v, want ErrUpstream", err)
	}
	if _, err := (Upstream{}).ParseAnswer([]byte(`{"choices":[]}`)); !errors.Is(err, ErrBadAnswer) {
		t.Errorf("chat answer: got %v, want ErrBadAnswer", err)
	}
}
