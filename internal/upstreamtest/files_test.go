package upstreamtest

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// upload posts a multipart files upload and returns the status and body.
func upload(t *testing.T, s *Server, name, content, purpose string) (int, gjson.Result) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if purpose != "" {
		if err := mw.WriteField("purpose", purpose); err != nil {
			t.Fatal(err)
		}
	}
	if name != "" {
		fw, err := mw.CreateFormFile("file", name)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write([]byte(content))
	}
	mw.Close()
	req, err := http.NewRequest(http.MethodPost, s.URL()+"/files", &buf)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return do(t, req)
}

// do sends req and returns the status and the body as JSON.
func do(t *testing.T, req *http.Request) (int, gjson.Result) {
	t.Helper()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp.StatusCode, gjson.ParseBytes(readAll(t, resp))
}

func newRequest(t *testing.T, method, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestFilesLifecycle(t *testing.T) {
	s := NewTB(t)
	status, a := upload(t, s, "a.jsonl", "{\"a\":1}\n", "batch")
	if status != http.StatusOK || a.Get("object").Str != "file" || a.Get("filename").Str != "a.jsonl" ||
		a.Get("bytes").Int() != 8 || a.Get("purpose").Str != "batch" || !strings.HasPrefix(a.Get("id").Str, "file-") {
		t.Fatalf("upload: got %d %s, want 200 with a file object", status, a.Raw)
	}
	_, b := upload(t, s, "b.txt", "bee", "assistants")
	idA, idB := a.Get("id").Str, b.Get("id").Str

	listTests := []struct {
		name, query string
		want        []string
		more        bool
	}{
		{"newest first", "", []string{idB, idA}, false},
		{"oldest first", "?order=asc", []string{idA, idB}, false},
		{"by purpose", "?purpose=batch", []string{idA}, false},
		{"first page", "?limit=1", []string{idB}, true},
		{"next page", "?limit=1&after=" + idB, []string{idA}, false},
	}
	for _, tt := range listTests {
		t.Run(tt.name, func(t *testing.T) {
			status, list := do(t, newRequest(t, http.MethodGet, s.URL()+"/files"+tt.query))
			var got []string
			for _, f := range list.Get("data").Array() {
				got = append(got, f.Get("id").Str)
			}
			if status != http.StatusOK || strings.Join(got, ",") != strings.Join(tt.want, ",") || list.Get("has_more").Bool() != tt.more {
				t.Errorf("got %d %v has_more=%v, want %v has_more=%v", status, got, list.Get("has_more").Bool(), tt.want, tt.more)
			}
		})
	}

	resp, err := client.Get(s.URL() + "/files/" + idB + "/content")
	if err != nil {
		t.Fatal(err)
	}
	content := readAll(t, resp)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(content) != "bee" {
		t.Errorf("content: got %d %q, want 200 %q", resp.StatusCode, content, "bee")
	}
	if status, f := do(t, newRequest(t, http.MethodGet, s.URL()+"/files/"+idA)); status != http.StatusOK || f.Get("id").Str != idA {
		t.Errorf("retrieve: got %d %s, want 200 with id %s", status, f.Raw, idA)
	}
	if status, d := do(t, newRequest(t, http.MethodDelete, s.URL()+"/files/"+idA)); status != http.StatusOK || !d.Get("deleted").Bool() {
		t.Errorf("delete: got %d %s, want 200 deleted", status, d.Raw)
	}
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		if status, _ := do(t, newRequest(t, method, s.URL()+"/files/"+idA)); status != http.StatusNotFound {
			t.Errorf("%s of a deleted file: got %d, want 404", method, status)
		}
	}
	s.Reset()
	if _, list := do(t, newRequest(t, http.MethodGet, s.URL()+"/files")); list.Get("data.#").Int() != 0 {
		t.Errorf("after Reset: got %s, want no files", list.Raw)
	}
}

func TestFilesUploadRejects(t *testing.T) {
	s := NewTB(t)
	tests := []struct {
		name, file, purpose, want string
	}{
		{"no file", "", "batch", "Missing required parameter: 'file'."},
		{"no purpose", "a.txt", "", "Missing required parameter: 'purpose'."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, e := upload(t, s, tt.file, "x", tt.purpose)
			if status != http.StatusBadRequest || e.Get("error.message").Str != tt.want {
				t.Errorf("got %d %s, want 400 %q", status, e.Raw, tt.want)
			}
		})
	}
	t.Run("not multipart", func(t *testing.T) {
		resp := post(t, s, "/files", `{"file":"x"}`)
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("got %d, want 400", resp.StatusCode)
		}
	})
}
