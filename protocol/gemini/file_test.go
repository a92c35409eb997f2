package gemini

import (
	"errors"
	"reflect"
	"testing"

	"github.com/recallproxy/recall/protocol/internal/jsontest"
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
			_, err := Codec{}.Encode(nil, []wire.Message{{Role: wire.RoleUser, Parts: []wire.Part{tc.part}}})
			var fe *wire.FileError
			if !errors.As(err, &fe) || fe.Target != wire.Gemini {
				t.Fatalf("got %v, want a *wire.FileError for gemini", err)
			}
		})
	}
}
