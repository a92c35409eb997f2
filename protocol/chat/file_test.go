package chat

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
		{"file_data", `{"role":"user","content":[{"type":"text","text":"what is in it?"},{"type":"file","file":{"filename":"x.pdf","file_data":"data:application/pdf;base64,JVBERi0="}}]}`,
			wire.Part{Kind: wire.File, Name: "x.pdf", URL: "data:application/pdf;base64,JVBERi0=", Origin: wire.ChatCompletions}},
		{"file_id", `{"role":"user","content":[{"type":"text","text":"what is in it?"},{"type":"file","file":{"file_id":"file-abc"}}]}`,
			wire.Part{Kind: wire.File, FileID: "file-abc", Origin: wire.ChatCompletions}},
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
		{"by URL", wire.Part{Kind: wire.File, URL: "https://example.com/x.pdf", Origin: wire.Responses}},
		{"an Anthropic file id", wire.Part{Kind: wire.File, FileID: "file_011", Origin: wire.Messages}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Codec{}.Encode(nil, []wire.Message{{Role: wire.RoleUser, Parts: []wire.Part{tc.part}}})
			var fe *wire.FileError
			if !errors.As(err, &fe) || fe.Target != wire.ChatCompletions {
				t.Fatalf("got %v, want a *wire.FileError for chat completions", err)
			}
		})
	}
}
