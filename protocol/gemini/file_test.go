package gemini

import (
	"testing"

	"github.com/recallproxy/recall/protocol/internal/prototest"
	"github.com/recallproxy/recall/wire"
)

func TestFileRoundTrip(t *testing.T) {
	prototest.FileRoundTrips(t, Codec{}, []prototest.FileCase{
		{Name: "inlineData", Raw: `{"role":"user","parts":[{"text":"what is in it?"},{"inlineData":{"mimeType":"application/pdf","data":"JVBERi0="}}]}`,
			Want: wire.Part{Kind: wire.File, URL: "data:application/pdf;base64,JVBERi0=", Origin: wire.Gemini}},
		{Name: "fileData", Raw: `{"role":"user","parts":[{"text":"what is in it?"},{"fileData":{"mimeType":"application/pdf","fileUri":"https://generativelanguage.googleapis.com/v1beta/files/abc"}}]}`,
			Want: wire.Part{Kind: wire.File, URL: "https://generativelanguage.googleapis.com/v1beta/files/abc", MediaType: "application/pdf", Origin: wire.Gemini}},
	})
}

func TestFileRefused(t *testing.T) {
	prototest.FilesRefused(t, Codec{}, []prototest.RefusedCase{
		{Name: "an OpenAI file id", Part: wire.Part{Kind: wire.File, FileID: "file-abc", Origin: wire.Responses}},
		{Name: "data of no media type", Part: wire.Part{Kind: wire.File, Name: "blob", URL: "data:;base64,AAAA", Origin: wire.Responses}},
		{Name: "a URL of no media type", Part: wire.Part{Kind: wire.File, URL: "https://example.com/blob", Origin: wire.Responses}},
	})
}
