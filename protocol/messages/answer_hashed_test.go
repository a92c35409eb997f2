package messages

import (
	"os"
	"testing"

	"github.com/recallproxy/recall/protocol/internal/prototest"
	"github.com/recallproxy/recall/wire"
)

// An answer carries the hash of the message it stores, taken from the
// decoding its parse does anyway, and equal to Hash of the message:
// parsed whole or assembled from a stream (thinking, text, tool use).
func TestAnswerHashedAsHash(t *testing.T) {
	var answers []wire.Answer
	body, _ := os.ReadFile("testdata/answer_tool_use.json")
	whole, err := Upstream{}.ParseAnswer(body)
	if err != nil {
		t.Fatal(err)
	}
	answers = append(answers, whole)
	for _, name := range []string{"testdata/stream_tool_use.sse", "testdata/stream_thinking.sse"} {
		stream, _ := os.ReadFile(name)
		asm, _ := assemble(t, stream)
		a, err := asm.Answer()
		if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, a)
	}
	for _, a := range answers {
		prototest.Hashed(t, Codec{}, a)
	}
}
