package messages

import (
	"errors"
	"reflect"
	"testing"

	"github.com/recallproxy/recall/protocol/internal/jsontest"
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
		t.Run(tc.name, func(t *testing.T) {
			m, err := Codec{}.Decode([]byte(tc.raw))
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Parts) != 2 || !reflect.DeepEqual(m.Parts[1], tc.want) {
				t.Fatalf("got %+v, want text then %+v", m.Parts, tc.want)
			}
			out, err := Codec{}.Encode(nil, []wire.Message{m})
			if err != nil {
				t.Fatal(err)
			}
			if len(out) != 1 || !jsontest.Same(t, out[0], []byte(tc.raw)) {
				t.Fatalf("got %s, want %s", out, tc.raw)
			}
		})
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
			_, err := Codec{}.Encode(nil, []wire.Message{tc.m})
			var fe *wire.FileError
			if !errors.As(err, &fe) || fe.Target != wire.Messages {
				t.Fatalf("got %v, want a *wire.FileError for messages", err)
			}
		})
	}
}
