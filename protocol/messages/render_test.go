package messages

import (
	"strings"
	"testing"

	"github.com/recallproxy/recall/wire"
)

// The event sequence of the streaming reference
// (https://docs.anthropic.com/en/docs/build-with-claude/streaming), event
// by event, with the closing events held for End.
func TestRendererSequence(t *testing.T) {
	r := Ingress{}.NewRenderer(&wire.Request{Model: "claude-x"}).(*Renderer)
	r.id = "msg_test"
	var out []byte
	for _, d := range []wire.Delta{
		{Kind: wire.TextDelta, Text: "Hi"},
		{Kind: wire.ToolCallStart, CallID: "toolu_1", Name: "f"},
		{Kind: wire.ArgumentsDelta, Text: `{"a":1}`},
		{Kind: wire.Finish, Text: wire.StopToolCalls, Usage: wire.Usage{InputTokens: 5, OutputTokens: 3}},
	} {
		out = r.Delta(out, d)
	}
	if strings.Contains(string(out), "message_delta") {
		t.Fatalf("message_delta before End: %s", out)
	}
	out = r.End(out, &wire.Answer{Stop: wire.StopToolCalls, Usage: wire.Usage{InputTokens: 5, OutputTokens: 3}})
	want := `event: message_start
data: {"type":"message_start","message":{"id":"msg_test","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":1}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":5,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":3}}

event: message_stop
data: {"type":"message_stop"}

`
	if string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

// What the renderer writes, the assembler reads back: the same text,
// calls and stop.
func TestRenderAssembleRoundTrip(t *testing.T) {
	rd := Ingress{}.NewRenderer(&wire.Request{Model: "m"})
	var out []byte
	for _, d := range chatDeltas() {
		out = rd.Delta(out, d)
	}
	out = rd.End(out, chatAnswer())
	a, _ := assemble(t, out)
	ans, err := a.Answer()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"role":"assistant","content":[{"type":"thinking","thinking":"The user wants weather.","signature":""},{"type":"text","text":"Hello"},{"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Paris"}}]}`
	if string(ans.Stored[0]) != want || ans.Stop != wire.StopToolCalls {
		t.Errorf("got %s %q, want %s", ans.Stored[0], ans.Stop, want)
	}
}
