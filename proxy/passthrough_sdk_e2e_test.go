package proxy_test

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// TestPassthroughWithTheSDK drives every pass-through call an OpenAI
// client commonly makes besides chat through Recall with the official SDK:
// body-less GETs and DELETEs, a JSON POST and a multipart upload.
func TestPassthroughWithTheSDK(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	ctx := context.Background()
	client := h.Client(key, "")

	t.Run("models list", func(t *testing.T) {
		page, err := client.Models.List(ctx)
		if err != nil {
			t.Fatalf("got error %v, want the model list", err)
		}
		var ids []string
		for _, m := range page.Data {
			ids = append(ids, m.ID)
		}
		if want := []string{"gpt-4o", "gpt-4o-mini", "gpt-4.1-mini", "o3-mini"}; !slices.Equal(ids, want) {
			t.Errorf("got models %v, want %v", ids, want)
		}
	})
	t.Run("models get", func(t *testing.T) {
		m, err := client.Models.Get(ctx, "gpt-4o-mini")
		if err != nil || m.ID != "gpt-4o-mini" {
			t.Fatalf("got %v, %v, want model gpt-4o-mini", m, err)
		}
		last := h.Up.Last()
		if last.Method != "GET" || last.RequestURI != "/v1/models/gpt-4o-mini" || len(last.Body) != 0 {
			t.Errorf("upstream got %s %s with %d body bytes, want GET /v1/models/gpt-4o-mini without a body", last.Method, last.RequestURI, len(last.Body))
		}
	})
	t.Run("embeddings", func(t *testing.T) {
		e, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{
			Model: openai.EmbeddingModelTextEmbedding3Small,
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"first", "second"}},
		})
		if err != nil || len(e.Data) != 2 {
			t.Fatalf("got %v, %v, want two embeddings", e, err)
		}
		for i, text := range []string{"first", "second"} {
			want := upstreamtest.Embed(text, 8)
			got := make([]float32, len(e.Data[i].Embedding))
			for j, x := range e.Data[i].Embedding {
				got[j] = float32(x)
			}
			if !slices.Equal(got, want) {
				t.Errorf("embedding of %q: got %v, want %v", text, got, want)
			}
		}
		if got := h.Up.Last().Header.Get("Authorization"); got != "Bearer "+key {
			t.Errorf("upstream got Authorization %q, want the client's key", got)
		}
	})
	t.Run("files", func(t *testing.T) {
		const content = "{\"custom_id\":\"a\"}\n{\"custom_id\":\"b\"}\n"
		f, err := client.Files.New(ctx, openai.FileNewParams{
			File:    openai.File(strings.NewReader(content), "batch.jsonl", "application/jsonl"),
			Purpose: openai.FilePurposeBatch,
		})
		if err != nil {
			t.Fatalf("upload: got error %v, want a file", err)
		}
		if f.Filename != "batch.jsonl" || f.Bytes != int64(len(content)) || f.Purpose != "batch" {
			t.Errorf("upload: got %s %d bytes %s, want batch.jsonl %d bytes batch", f.Filename, f.Bytes, f.Purpose, len(content))
		}

		list, err := client.Files.List(ctx, openai.FileListParams{Purpose: openai.String("batch")})
		if err != nil || len(list.Data) != 1 || list.Data[0].ID != f.ID {
			t.Fatalf("list: got %v, %v, want the uploaded file %s", list, err, f.ID)
		}

		resp, err := client.Files.Content(ctx, f.ID)
		if err != nil {
			t.Fatalf("content: got error %v", err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(got) != content {
			t.Errorf("content: got %q, %v, want %q", got, err, content)
		}

		d, err := client.Files.Delete(ctx, f.ID)
		if err != nil || !d.Deleted || d.ID != f.ID {
			t.Fatalf("delete: got %v, %v, want %s deleted", d, err, f.ID)
		}
		list, err = client.Files.List(ctx, openai.FileListParams{})
		if err != nil || len(list.Data) != 0 {
			t.Errorf("list after delete: got %v, %v, want no files", list, err)
		}
	})
}
