package prototest_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/protocol/internal/prototest"
	"github.com/recallproxy/recall/wire"
)

func TestSame(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{`{"a":1,"b":[true,null]}`, ` { "b" : [ true , null ] , "a" : 1.0 } `, true},
		{`"\u00e9"`, `"é"`, true},
		{`{"a":1}`, `{"a":2}`, false},
		{`[1,2]`, `[2,1]`, false},
		{`{"a":1}`, `{"a":1,"b":null}`, false},
	}
	for _, tt := range tests {
		if got := prototest.Same(t, []byte(tt.a), []byte(tt.b)); got != tt.want {
			t.Errorf("Same(%s, %s): got %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestFileChecks(t *testing.T) {
	const raw = `{"role":"user","content":[{"type":"text","text":"what is in it?"},{"type":"file","file":{"file_id":"file-abc"}}]}`
	file := wire.Part{Kind: wire.File, FileID: "file-abc", Origin: wire.ChatCompletions}
	byURL := wire.Message{Role: wire.RoleUser, Parts: []wire.Part{{Kind: wire.File, URL: "https://example.com/x.pdf", Origin: wire.Responses}}}
	text := wire.Message{Role: wire.RoleUser, Parts: []wire.Part{{Kind: wire.Text, Text: "hi"}}}
	tests := []struct {
		name  string
		check func(testing.TB)
		fails bool
	}{
		{"a round trip", func(tb testing.TB) { prototest.FileRoundTrip(tb, chat.Codec{}, raw, file) }, false},
		{"another part than the one wanted", func(tb testing.TB) {
			prototest.FileRoundTrip(tb, chat.Codec{}, raw, wire.Part{Kind: wire.File, FileID: "file-other", Origin: wire.ChatCompletions})
		}, true},
		{"no file", func(tb testing.TB) {
			prototest.FileRoundTrip(tb, chat.Codec{}, `{"role":"user","content":"hi"}`, file)
		}, true},
		{"a refusal", func(tb testing.TB) { prototest.FileRefused(tb, chat.Codec{}, byURL) }, false},
		{"no refusal", func(tb testing.TB) { prototest.FileRefused(tb, chat.Codec{}, text) }, true},
	}
	for _, tt := range tests {
		if got := prototest.Fails(t, tt.check); got != tt.fails {
			t.Errorf("%s: got failed %v, want %v", tt.name, got, tt.fails)
		}
	}
}

func TestHashPinned(t *testing.T) {
	const raw = `{"role":"user","content":"hi"}`
	want := chat.Hash([]byte(raw))
	if prototest.Fails(t, func(tb testing.TB) { prototest.HashPinned(tb, chat.Hash, raw, want) }) {
		t.Error("the hash pinned: got failed, want passed")
	}
	if !prototest.Fails(t, func(tb testing.TB) { prototest.HashPinned(tb, chat.Hash, raw, want+1) }) {
		t.Error("another hash: got passed, want failed")
	}
}

func TestBadRequest(t *testing.T) {
	bad := &apierr.Error{Status: 400, Type: "invalid_request_error", Param: "model", Message: "Missing model."}
	tests := []struct {
		name  string
		err   error
		param string
		fails bool
	}{
		{"the refusal", fmt.Errorf("wrapped: %w", bad), "model", false},
		{"another param", bad, "messages", true},
		{"another status", &apierr.Error{Status: 500, Param: "model", Message: "x"}, "model", true},
		{"no message", &apierr.Error{Status: 400, Param: "model"}, "model", true},
		{"not an apierr.Error", errors.New("model"), "model", true},
	}
	for _, tt := range tests {
		if got := prototest.Fails(t, func(tb testing.TB) { prototest.BadRequest(tb, tt.err, tt.param) }); got != tt.fails {
			t.Errorf("%s: got failed %v, want %v", tt.name, got, tt.fails)
		}
	}
}

// TestSameDecode: SameDecode passes two readings that agree and fails
// two that differ in the message or the error.
func TestSameDecode(t *testing.T) {
	text := func([]byte) (wire.Message, error) {
		return wire.Message{Role: wire.RoleUser, Parts: []wire.Part{{Kind: wire.Text, Text: "hi"}}}, nil
	}
	other := func([]byte) (wire.Message, error) {
		return wire.Message{Role: wire.RoleUser, Parts: []wire.Part{{Kind: wire.Text, Text: "ho"}}}, nil
	}
	refused := func([]byte) (wire.Message, error) { return wire.Message{}, errors.New("not a message") }
	raw := []byte(`{"role":"user","content":"hi"}`)
	if prototest.Fails(t, func(tb testing.TB) { prototest.SameDecode(tb, raw, text, text) }) {
		t.Error("SameDecode failed two readings that agree")
	}
	for name, tree := range map[string]prototest.Decoder{"message": other, "error": refused} {
		if !prototest.Fails(t, func(tb testing.TB) { prototest.SameDecode(tb, raw, text, tree) }) {
			t.Errorf("SameDecode passed readings that differ in the %s", name)
		}
	}
}
