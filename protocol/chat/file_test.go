package chat

import (
	"testing"

	"github.com/recallproxy/recall/protocol/internal/prototest"
	"github.com/recallproxy/recall/wire"
)

func TestFileRoundTrip(t *testing.T) {
	prototest.FileRoundTrips(t, Codec{}, []prototest.FileCase{
		{Name: "file_data", Raw: `{"role":"user","content":[{"type":"text","text":"what is in it?"},{"type":"file","file":{"filename":"x.pdf","file_data":"data:application/pdf;base64,JVBERi0="}}]}`,
			Want: wire.Part{Kind: wire.File, Name: "x.pdf", URL: "data:application/pdf;base64,JVBERi0=", Origin: wire.ChatCompletions}},
		{Name: "file_id", Raw: `{"role":"user","content":[{"type":"text","text":"what is in it?"},{"type":"file","file":{"file_id":"file-abc"}}]}`,
			Want: wire.Part{Kind: wire.File, FileID: "file-abc", Origin: wire.ChatCompletions}},
	})
}

func TestFileRefused(t *testing.T) {
	prototest.FilesRefused(t, Codec{}, []prototest.RefusedCase{
		{Name: "by URL", Part: wire.Part{Kind: wire.File, URL: "https://example.com/x.pdf", Origin: wire.Responses}},
		{Name: "an Anthropic file id", Part: wire.Part{Kind: wire.File, FileID: "file_011", Origin: wire.Messages}},
	})
}
