package messages

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/wire"
)

// cacheUsage is the usage of an answer that read 1000 input tokens from
// the prompt cache and wrote 40 to it, with 60 others, as the canonical
// model holds it: every input token counted as input.
var cacheUsage = wire.Usage{InputTokens: 1100, CachedTokens: 1000, CacheCreationTokens: 40, OutputTokens: 7}

// wantAnthropicUsage is the usage object a Messages client gets for
// cacheUsage: split again as Anthropic splits it.
const wantAnthropicUsage = `{"input_tokens":60,"cache_creation_input_tokens":40,"cache_read_input_tokens":1000,"output_tokens":7}`

// A non-streamed answer's cache_creation_input_tokens are read as the
// cache creation tokens (and counted in the input), and written back to
// a Messages client as they came.
func TestParseAnswerCacheCreation(t *testing.T) {
	body := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"Hi"}],` +
		`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":60,"cache_creation_input_tokens":40,"cache_read_input_tokens":1000,"output_tokens":7}}`
	a, err := Upstream{}.ParseAnswer([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if a.Usage != cacheUsage {
		t.Errorf("usage: got %+v, want %+v", a.Usage, cacheUsage)
	}
	out := Ingress{}.AppendAnswer(nil, &wire.Request{Model: "claude-x"}, &a)
	if got := gjson.GetBytes(out, "usage").Raw; got != wantAnthropicUsage {
		t.Errorf("rendered usage: got %s, want %s", got, wantAnthropicUsage)
	}
}

// A streamed answer's cache creation tokens are read whether
// message_start says them (with message_delta holding only the output)
// or message_delta repeats the whole usage, and the renderer's
// message_delta writes them back to a Messages client.
func TestAssembleCacheCreation(t *testing.T) {
	start := func(usage string) string {
		return "event: message_start\ndata: " + `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",` +
			`"model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":` + usage + "}}\n\n"
	}
	delta := func(usage string) string {
		return "event: message_delta\ndata: " + `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":` + usage + "}\n\n"
	}
	text := "event: content_block_start\ndata: " + `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
		"event: content_block_delta\ndata: " + `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}` + "\n\n" +
		"event: content_block_stop\ndata: " + `{"type":"content_block_stop","index":0}` + "\n\n"
	stop := "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	for _, tc := range []struct{ name, stream string }{
		{"in message_start", start(`{"input_tokens":60,"cache_creation_input_tokens":40,"cache_read_input_tokens":1000,"output_tokens":1}`) +
			text + delta(`{"output_tokens":7}`) + stop},
		{"in message_delta", start(`{"input_tokens":60,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}`) +
			text + delta(`{"input_tokens":60,"cache_creation_input_tokens":40,"cache_read_input_tokens":1000,"output_tokens":7}`) + stop},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, deltas := assemble(t, []byte(tc.stream))
			finish := deltas[len(deltas)-1]
			if finish.Kind != wire.Finish || finish.Usage != cacheUsage {
				t.Errorf("finish delta: got %+v, want usage %+v", finish, cacheUsage)
			}
			ans, err := a.Answer()
			if err != nil {
				t.Fatal(err)
			}
			if ans.Usage != cacheUsage {
				t.Errorf("answer usage: got %+v, want %+v", ans.Usage, cacheUsage)
			}
			r := Ingress{}.NewRenderer(&wire.Request{Model: "claude-x", Stream: true})
			var out []byte
			for _, d := range deltas {
				out = r.Delta(out, d)
			}
			out = r.End(out, &ans)
			var got string
			for _, ev := range readEvents(t, out) {
				if string(ev.name) == "message_delta" {
					got = gjson.GetBytes(ev.data, "usage").Raw
				}
			}
			if got != wantAnthropicUsage {
				t.Errorf("rendered message_delta usage: got %s, want %s\n%s", got, wantAnthropicUsage, strings.TrimSpace(string(out)))
			}
		})
	}
}
