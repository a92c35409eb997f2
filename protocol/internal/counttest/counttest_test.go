package counttest_test

import (
	"testing"

	"github.com/recallproxy/recall/protocol/internal/counttest"
	"github.com/recallproxy/recall/protocol/internal/prototest"
	"github.com/recallproxy/recall/tokens"
	"github.com/recallproxy/recall/wire"
)

// tokenizer is a Tokenizer of a function.
type tokenizer func(c *tokens.Counter, enc tokens.Encoding, raw []byte) (int, bool)

func (f tokenizer) Tokens(c *tokens.Counter, enc tokens.Encoding, raw []byte) (int, bool) {
	return f(c, enc, raw)
}

// TestCountsAsChat: the check passes a codec that counts as the chat
// rendition does and one that counts nothing it was not asked to, and
// fails one that miscounts or leaves a message it should count.
func TestCountsAsChat(t *testing.T) {
	corpus := []string{`{"role":"user","content":"Hello, how are you today?"}`, `{"role":"assistant","content":"Fine."}`}
	asChat := tokenizer(func(c *tokens.Counter, enc tokens.Encoding, raw []byte) (int, bool) {
		return counttest.CountThroughChat(c, enc, wire.ChatCompletions, raw), true
	})
	off := tokenizer(func(c *tokens.Counter, enc tokens.Encoding, raw []byte) (int, bool) {
		return counttest.CountThroughChat(c, enc, wire.ChatCompletions, raw) + 1, true
	})
	none := tokenizer(func(*tokens.Counter, tokens.Encoding, []byte) (int, bool) { return 0, false })
	tests := []struct {
		name  string
		codec counttest.Tokenizer
		own   []string
		fail  bool
	}{
		{"as chat", asChat, corpus, false},
		{"one off", off, nil, true},
		{"counts nothing, asked nothing", none, nil, false},
		{"counts nothing, asked to", none, corpus[:1], true},
	}
	for _, tt := range tests {
		if got := prototest.Fails(t, func(tb testing.TB) { counttest.CountsAsChat(tb, tt.codec, wire.ChatCompletions, corpus, tt.own) }); got != tt.fail {
			t.Errorf("%s: CountsAsChat failed = %v, want %v", tt.name, got, tt.fail)
		}
	}
}
