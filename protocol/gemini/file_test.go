package gemini

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
		{"inlineData", `{"role":"user","parts":[{"text":"what is in it?"},{"inlineData":{"mimeType":"application/pdf","data":"JVBERi0="}}]}`,
			wire.Part{Kind: wire.File, URL: "data:application/pdf;base64,JVBERi0=", Origin: wire.Gemini}},
		{"fileData", `{"role":"user","parts":[{"text":"what is in it?"},{"fileData":{"mimeType":"application/pdf","fileUri":"https://generativelanguage.googleapis.com/v1beta/files/abc"}}]}`,
			wire.Part{Kind: wire.File, URL: "https://generativelanguage.googleapis.com/v1beta/files/abc", MediaType: "application/pdf", Origin: wire.Gemini}},
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
		{"an OpenAI file id", wire.Part{Kind: wire.File, FileID: "file-abc", Origin: wire.Responses}},
		{"data of no media type", wire.Part{Kind: wire.File, Name: "blob", URL: "data:;base64,AAAA", Origin: wire.Responses}},
		{"a URL of no media type", wire.Part{Kind: wire.File, URL: "https://example.com/blob", Origin: wire.Responses}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prototest.FileRefused(t, Codec{}, wire.Message{Role: wire.RoleUser, Parts: []wire.Part{tc.part}})
		})
	}
}
