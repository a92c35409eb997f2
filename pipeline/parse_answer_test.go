package pipeline

import (
	"errors"
	"testing"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/internal/fifth"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/protocol/gemini"
	"github.com/recallproxy/recall/protocol/messages"
	"github.com/recallproxy/recall/protocol/responses"
	"github.com/recallproxy/recall/wire"
)

// TestParseAnswerRefusesWhatIsNotJSON: an upstream's whole answer that
// is not JSON is a bad upstream response (502) through every upstream,
// for a client of its protocol and of another: each upstream's parser
// checks the bytes, ParseAnswer does not check them again.
func TestParseAnswerRefusesWhatIsNotJSON(t *testing.T) {
	ups := map[string]wire.Upstream{
		"chat": chat.Protocol{}, "responses": responses.Upstream{},
		"messages": messages.Upstream{}, "gemini": gemini.Upstream{},
		"fifth": fifth.Upstream{},
	}
	for name, up := range ups {
		for _, raw := range []string{``, `{"id":`, `{"id":"x"} trailing`, `{"id":"x",}`, `{"reply":"x"} trailing`, `{"reply":"x",}`, "{\"id\":\"\xff\"", `nul`} {
			for _, same := range []bool{false, true} {
				if _, err := ParseAnswer(up, "", []byte(raw), 1<<20, same); !errors.Is(err, apierr.UpstreamBadResponse) {
					t.Errorf("%s: ParseAnswer(%q, same %v): got %v, want a bad upstream response", name, raw, same, err)
				}
			}
		}
	}
}

// BenchmarkParseAnswer reads a Responses upstream's whole answer of one
// message, as OpenAI renders it (about 1 KB).
func BenchmarkParseAnswer(b *testing.B) {
	raw := []byte(`{"id":"resp_1","object":"response","created_at":1700000000,"status":"completed","background":false,"error":null,"incomplete_details":null,` +
		`"instructions":null,"max_output_tokens":null,"model":"gpt-4o","output":[{"id":"msg_1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Sure: here is a short answer of a few words, as a model would give it."}],"role":"assistant"}],` +
		`"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"service_tier":"default","store":false,"temperature":1.0,"text":{"format":{"type":"text"}},` +
		`"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":{"input_tokens":900,"input_tokens_details":{"cached_tokens":0},"output_tokens":18,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":918},"metadata":{}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseAnswer(responses.Upstream{}, "", raw, 1<<20, false); err != nil {
			b.Fatal(err)
		}
	}
}
