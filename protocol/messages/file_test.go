package messages

import (
	"testing"

	"github.com/recallproxy/recall/protocol/internal/prototest"
	"github.com/recallproxy/recall/wire"
)

func TestDocumentRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want wire.Part
	}{
		{"base64 PDF", `{"role":"user","content":[{"type":"text","text":"what is in it?"},{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0="},"title":"x.pdf"}]}`,
			wire.Part{Kind: wire.File, Name: "x.pdf", URL: "data:application/pdf;base64,JVBERi0=", Origin: wire.Messages}},
		{"plain text", `{"role":"user","content":[{"type":"text","text":"what is in it?"},{"type":"document","source":{"type":"text","media_type":"text/plain","data":"hi"}}]}`,
			wire.Part{Kind: wire.File, URL: "data:text/plain;base64,aGk=", Origin: wire.Messages}},
		{"url", `{"role":"user","content":[{"type":"text","text":"what is in it?"},{"type":"document","source":{"type":"url","url":"https://example.com/x.pdf"}}]}`,
			wire.Part{Kind: wire.File, URL: "https://example.com/x.pdf", MediaType: "application/pdf", Origin: wire.Messages}},
		{"file", `{"role":"user","content":[{"type":"text","text":"what is in it?"},{"type":"document","source":{"type":"file","file_id":"file_011"}}]}`,
			wire.Part{Kind: wire.File, FileID: "file_011", Origin: wire.Messages}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { prototest.FileRoundTrip(t, Codec{}, tc.raw, tc.want) })
	}
}

func TestDocumentRefused(t *testing.T) {
	tests := []struct {
		name string
		m    wire.Message
	}{
		{"an OpenAI file id", wire.Message{Role: wire.RoleUser, Parts: []wire.Part{{Kind: wire.File, FileID: "file-abc", Origin: wire.Responses}}}},
		{"a media type documents do not take", wire.Message{Role: wire.RoleUser, Parts: []wire.Part{
			{Kind: wire.File, Name: "x.docx", URL: "data:application/vnd.openxmlformats-officedocument.wordprocessingml.document;base64,UEs=", Origin: wire.Responses}}}},
		{"text that is not base64", wire.Message{Role: wire.RoleUser, Parts: []wire.Part{{Kind: wire.File, URL: "data:text/plain;base64,%%%", Origin: wire.Responses}}}},
		{"a file in an assistant message", wire.Message{Role: wire.RoleAssistant, Parts: []wire.Part{
			{Kind: wire.File, URL: "data:application/pdf;base64,JVBERi0=", Origin: wire.Responses}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prototest.FileRefused(t, Codec{}, tc.m)
		})
	}
}
