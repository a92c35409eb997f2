package messages

import (
	"testing"

	"github.com/recallproxy/recall/protocol/internal/prototest"
	"github.com/recallproxy/recall/wire"
)

func TestDocumentRoundTrip(t *testing.T) {
	prototest.FileRoundTrips(t, Codec{}, []prototest.FileCase{
		{Name: "base64 PDF", Raw: `{"role":"user","content":[{"type":"text","text":"what is in it?"},{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0="},"title":"x.pdf"}]}`,
			Want: wire.Part{Kind: wire.File, Name: "x.pdf", URL: "data:application/pdf;base64,JVBERi0=", Origin: wire.Messages}},
		{Name: "plain text", Raw: `{"role":"user","content":[{"type":"text","text":"what is in it?"},{"type":"document","source":{"type":"text","media_type":"text/plain","data":"hi"}}]}`,
			Want: wire.Part{Kind: wire.File, URL: "data:text/plain;base64,aGk=", Origin: wire.Messages}},
		{Name: "url", Raw: `{"role":"user","content":[{"type":"text","text":"what is in it?"},{"type":"document","source":{"type":"url","url":"https://example.com/x.pdf"}}]}`,
			Want: wire.Part{Kind: wire.File, URL: "https://example.com/x.pdf", MediaType: "application/pdf", Origin: wire.Messages}},
		{Name: "file", Raw: `{"role":"user","content":[{"type":"text","text":"what is in it?"},{"type":"document","source":{"type":"file","file_id":"file_011"}}]}`,
			Want: wire.Part{Kind: wire.File, FileID: "file_011", Origin: wire.Messages}},
	})
}

func TestDocumentRefused(t *testing.T) {
	prototest.FilesRefused(t, Codec{}, []prototest.RefusedCase{
		{Name: "an OpenAI file id", Part: wire.Part{Kind: wire.File, FileID: "file-abc", Origin: wire.Responses}},
		{Name: "a media type documents do not take", Part: wire.Part{Kind: wire.File, Name: "x.docx",
			URL: "data:application/vnd.openxmlformats-officedocument.wordprocessingml.document;base64,UEs=", Origin: wire.Responses}},
		{Name: "text that is not base64", Part: wire.Part{Kind: wire.File, URL: "data:text/plain;base64,%%%", Origin: wire.Responses}},
		{Name: "a file in an assistant message", Role: wire.RoleAssistant,
			Part: wire.Part{Kind: wire.File, URL: "data:application/pdf;base64,JVBERi0=", Origin: wire.Responses}},
	})
}
