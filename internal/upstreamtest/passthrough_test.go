package upstreamtest

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestEcho(t *testing.T) {
	tests := []struct {
		name, method, path, body string
	}{
		{"post", http.MethodPost, "/v1/batches", `{"input_file_id":"file-1","endpoint":"a \"quoted\" text"}`},
		{"get with query", http.MethodGet, "/v1/batches?limit=2", ""},
		{"delete", http.MethodDelete, "/v1/vector_stores/vs-1", ""},
		{"chat completions listing", http.MethodGet, "/v1/chat/completions", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewTB(t)
			base := strings.TrimSuffix(s.URL(), "/v1")
			req, err := http.NewRequest(tt.method, base+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer sk-upstream")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body := readAll(t, resp)
			if resp.StatusCode != http.StatusOK || !gjson.ValidBytes(body) {
				t.Fatalf("got %d %s, want 200 with JSON", resp.StatusCode, body)
			}
			path, query, _ := strings.Cut(tt.path, "?")
			e := gjson.ParseBytes(body)
			got := []string{e.Get("path").Str, e.Get("method").Str, e.Get("query").Str, e.Get("body").Str, e.Get("authorization").Str}
			want := []string{path, tt.method, query, tt.body, "Bearer sk-upstream"}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("got echo %q, want %q", got, want)
			}
			last := s.Last()
			if last.Method != tt.method || last.Path != path || string(last.Body) != tt.body {
				t.Errorf("got recorded %s %s %q, want %s %s %q", last.Method, last.Path, last.Body, tt.method, path, tt.body)
			}
		})
	}
}

func TestModels(t *testing.T) {
	s := NewTB(t)
	resp, err := client.Get(s.URL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body := readAll(t, resp)
	r := gjson.ParseBytes(body)
	if r.Get("object").Str != "list" || r.Get("data.#").Int() == 0 || r.Get("data.0.object").Str != "model" {
		t.Errorf("got %s, want a model list", body)
	}
	if s.Last().Path != "/v1/models" {
		t.Errorf("got recorded path %q, want /v1/models", s.Last().Path)
	}
}

func TestModelsHead(t *testing.T) {
	s := NewTB(t)
	get, err := client.Get(s.URL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, get)
	get.Body.Close()
	head, err := client.Head(s.URL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	head.Body.Close()
	if head.StatusCode != http.StatusOK || head.ContentLength != int64(len(body)) {
		t.Errorf("got %d with length %d, want 200 with length %d", head.StatusCode, head.ContentLength, len(body))
	}
}

func TestModelRetrieve(t *testing.T) {
	s := NewTB(t)
	tests := []struct {
		name, model string
		status      int
		want        string // "id" of the answer, or "code" of the error
	}{
		{"listed", "gpt-4o-mini", http.StatusOK, "gpt-4o-mini"},
		{"unknown", "gpt-nope", http.StatusNotFound, "model_not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := client.Get(s.URL() + "/models/" + tt.model)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body := gjson.ParseBytes(readAll(t, resp))
			got := body.Get("id").Str
			if tt.status != http.StatusOK {
				got = body.Get("error.code").Str
			}
			if resp.StatusCode != tt.status || got != tt.want {
				t.Errorf("got %d %s, want %d %s", resp.StatusCode, body.Raw, tt.status, tt.want)
			}
		})
	}
}

func TestRequestURIIsRecordedRaw(t *testing.T) {
	s := NewTB(t)
	const target = "/v1/things/a%3Fb%2Fc?x=%20y"
	resp, err := client.Get(strings.TrimSuffix(s.URL(), "/v1") + target)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	last := s.Last()
	if last.RequestURI != target || last.Path != "/v1/things/a?b/c" || last.Query != "x=%20y" {
		t.Errorf("got RequestURI %q, Path %q, Query %q, want %q, %q, %q", last.RequestURI, last.Path, last.Query, target, "/v1/things/a?b/c", "x=%20y")
	}
}

func TestUnknownPath(t *testing.T) {
	s := NewTB(t)
	resp, err := client.Get(strings.TrimSuffix(s.URL(), "/v1") + "/nope")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body := readAll(t, resp)
	if resp.StatusCode != http.StatusNotFound || gjson.GetBytes(body, "error.message").Str != "Invalid URL (GET /nope)" {
		t.Errorf("got %d %s, want 404 Invalid URL (GET /nope)", resp.StatusCode, body)
	}
}

func TestLargeStreamingUpload(t *testing.T) {
	s := NewTB(t)
	const size = 4 << 20
	pr, pw := io.Pipe()
	go func() {
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for n := 0; n < size; n += len(chunk) {
			if _, err := pw.Write(chunk); err != nil {
				return
			}
		}
		pw.Close()
	}()
	req, err := http.NewRequest(http.MethodPost, s.URL()+"/uploads/stream", pr) // unknown length: chunked upload
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body := readAll(t, resp)
	if got := len(gjson.GetBytes(body, "body").Str); got != size {
		t.Errorf("got an echoed body of %d bytes, want %d", got, size)
	}
	if got := len(s.Last().Body); got != size {
		t.Errorf("got a recorded body of %d bytes, want %d", got, size)
	}
	if got := s.Last().TransferEncoding; !slices.Equal(got, []string{"chunked"}) {
		t.Errorf("got recorded transfer encoding %q, want [chunked]", got)
	}
}
