package responses

import (
	"testing"

	"github.com/recallproxy/recall/protocol/internal/prototest"
	"github.com/recallproxy/recall/wire"
)

func TestFileRoundTrip(t *testing.T) {
	prototest.FileRoundTrips(t, Codec{}, []prototest.FileCase{
		{Name: "file_data", Raw: `{"type":"message","role":"user","content":[{"type":"input_text","text":"what is in it?"},{"type":"input_file","filename":"x.pdf","file_data":"data:application/pdf;base64,JVBERi0="}]}`,
			Want: wire.Part{Kind: wire.File, Name: "x.pdf", URL: "data:application/pdf;base64,JVBERi0=", Origin: wire.Responses}},
		{Name: "file_id", Raw: `{"type":"message","role":"user","content":[{"type":"input_text","text":"what is in it?"},{"type":"input_file","file_id":"file-abc"}]}`,
			Want: wire.Part{Kind: wire.File, FileID: "file-abc", Origin: wire.Responses}},
		{Name: "file_url", Raw: `{"type":"message","role":"user","content":[{"type":"input_text","text":"what is in it?"},{"type":"input_file","file_url":"https://example.com/x.pdf","filename":"x.pdf"}]}`,
			Want: wire.Part{Kind: wire.File, Name: "x.pdf", URL: "https://example.com/x.pdf", MediaType: "application/pdf", Origin: wire.Responses}},
	})
}

func TestFileBareBase64(t *testing.T) {
	m, err := Codec{}.Decode([]byte(`{"role":"user","content":[{"type":"input_file","filename":"notes.txt","file_data":"aGk="}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Parts[0].URL; got != "data:text/plain;base64,aGk=" {
		t.Fatalf("got %q, want the data: URL of the filename's media type", got)
	}
}

func TestFileOfAnotherProviderRefused(t *testing.T) {
	m := wire.Message{Role: wire.RoleUser, Parts: []wire.Part{{Kind: wire.File, FileID: "file_011", Origin: wire.Messages}}}
	prototest.FileRefused(t, Codec{}, m)
}
