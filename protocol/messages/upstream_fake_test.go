package messages

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/wire"
)

// A conversation from a chat-completions client, translated through the
// canonical model, marked at the end of its history and sent to the
// strict fake Anthropic upstream, is accepted; its answer is parsed, and
// its stream assembled, to the same stored message.
func TestTranslatedBodyAcceptedUpstream(t *testing.T) {
	s := upstreamtest.NewTB(t)
	chat := []wire.Message{
		{Role: wire.RoleSystem, Parts: []wire.Part{{Kind: wire.Text, Text: "Be brief."}}},
		{Role: wire.RoleUser, Parts: []wire.Part{{Kind: wire.Text, Text: "Weather?"}}},
		{Role: wire.RoleAssistant, Parts: []wire.Part{{Kind: wire.ToolCall, CallID: "call_1", Name: "w", Arguments: `{}`}, {Kind: wire.ToolCall, CallID: "call_2", Name: "w", Arguments: `{"x":1}`}}},
		{Role: wire.RoleTool, Parts: []wire.Part{{Kind: wire.ToolResult, CallID: "call_1", Text: "sun"}}},
		{Role: wire.RoleTool, Parts: []wire.Part{{Kind: wire.ToolResult, CallID: "call_2", Text: "rain"}}},
		{Role: wire.RoleAssistant, Parts: []wire.Part{{Kind: wire.Text, Text: "Mixed."}}},
		{Role: wire.RoleUser, Parts: []wire.Part{{Kind: wire.Text, Text: "Thanks"}}},
	}
	msgs, err := Codec{}.Encode(nil, chat)
	if err != nil {
		t.Fatal(err)
	}
	var stored [][]byte
	for _, stream := range []bool{false, true} {
		req := &wire.Request{Protocol: wire.ChatCompletions, Model: "claude-x", Stream: stream}
		body, err := Upstream{}.AppendBody(nil, req, nil, msgs)
		if err != nil {
			t.Fatal(err)
		}
		body = MarkHistoryEnd(body, len(msgs)-2)
		hr, _ := http.NewRequest(http.MethodPost, s.URL()+Upstream{}.Path(), bytes.NewReader(body))
		hr.Header.Set("X-Api-Key", "k")
		hr.Header.Set("Anthropic-Version", "2023-06-01")
		resp, err := http.DefaultClient.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Fatalf("stream %v: got %d %s for %s", stream, resp.StatusCode, b, body)
		}
		var ans wire.Answer
		if stream {
			b, _ := io.ReadAll(resp.Body)
			a, _ := assemble(t, b)
			ans, err = a.Answer()
		} else {
			b, _ := io.ReadAll(resp.Body)
			ans, err = Upstream{}.ParseAnswer(b)
		}
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if ans.Message.Parts[0].Text != "echo: Thanks" || ans.Stop != wire.StopEnd {
			t.Errorf("stream %v: got %+v", stream, ans.Message)
		}
		stored = append(stored, ans.Stored[0])
	}
	if (Codec{}).Hash(stored[0]) != (Codec{}).Hash(stored[1]) {
		t.Errorf("streamed and whole answers differ: %s, %s", stored[0], stored[1])
	}
}
