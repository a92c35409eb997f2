package chat

import (
	"testing"

	"github.com/recallproxy/recall/protocol/internal/prototest"
	"github.com/recallproxy/recall/wire"
)

func TestFileRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want wire.Part
	}{
		{"file_data", `{"role":"user","content":[{"type":"text","text":"what is in it?"},{"type":"file","file":{"filename":"x.pdf","file_data":"data:application/pdf;base64,JVBERi0="}}]}`,
			wire.Part{Kind: wire.File, Name: "x.pdf", URL: "data:application/pdf;base64,JVBERi0=", Origin: wire.ChatCompletions}},
		{"file_id", `{"role":"user","content":[{"type":"text","text":"what is in it?"},{"type":"file","file":{"file_id":"file-abc"}}]}`,
			wire.Part{Kind: wire.File, FileID: "file-abc", Origin: wire.ChatCompletions}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { prototest.FileRoundTrip(t, Codec{}, tc.raw, tc.want) })
	}
}

func TestFileRefused(t *testing.T) {
	tests := []struct {
		name string
		part wire.Part
	}{
		{"by URL", wire.Part{Kind: wire.File, URL: "https://example.com/x.pdf", Origin: wire.Responses}},
		{"an Anthropic file id", wire.Part{Kind: wire.File, FileID: "file_011", Origin: wire.Messages}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prototest.FileRefused(t, Codec{}, wire.Message{Role: wire.RoleUser, Parts: []wire.Part{tc.part}})
		})
	}
}
