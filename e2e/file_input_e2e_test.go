package e2e

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/e2etest"
)

// pdfData is the Open Responses suite's file-input PDF, as a data: URL.
const pdfData = "data:application/pdf;base64,JVBERi0xLjQKJcfsj6IKMSAwIG9iago8PC9UeXBlL0NhdGFsb2c+PgplbmRvYmoKdHJhaWxlcgo8PC9Sb290IDEgMCBSPj4KJSVFT0YK"

// TestFileInputAcrossUpstreams: a Responses client's input_file (the
// suite's file-input test) reaches every kind of upstream in that API's
// own file shape, never left out; the turn is stored once and sent again
// on the next turn.
func TestFileInputAcrossUpstreams(t *testing.T) {
	data := strings.TrimPrefix(pdfData, "data:application/pdf;base64,")
	tests := []struct {
		up   string
		path string // the upstream path the fake must see
		file string // gjson path of the file in the upstream body
		want map[string]string
	}{
		{"oa", "/v1/responses", `input.0.content.1`,
			map[string]string{"type": "input_file", "filename": "x.pdf", "file_data": pdfData}},
		{"ch", "/v1/chat/completions", `messages.0.content.1`,
			map[string]string{"type": "file", "file.filename": "x.pdf", "file.file_data": pdfData}},
		{"an", "/v1/messages", `messages.0.content.1`,
			map[string]string{"type": "document", "source.type": "base64", "source.media_type": "application/pdf", "source.data": data, "title": "x.pdf"}},
		{"ge", "", `contents.0.parts.1`,
			map[string]string{"inlineData.mimeType": "application/pdf", "inlineData.data": data}},
	}
	h := e2etest.New(t, fourUpstreams())
	for _, tc := range tests {
		t.Run(tc.up, func(t *testing.T) {
			conv := "file-" + tc.up
			first := `{"model":"m1","input":[{"type":"message","role":"user","content":[` +
				`{"type":"input_text","text":"What is in this file?"},` +
				`{"type":"input_file","filename":"x.pdf","file_data":"` + pdfData + `"}]}]}`
			for turn, body := range []string{first, `{"model":"m1","input":"And again?"}`} {
				r := h.Post("/v1/responses", "rk-"+tc.up, conv, body)
				if r.Status != 200 || gjson.Get(r.Body, "status").Str != "completed" {
					t.Fatalf("turn %d: %d %s", turn, r.Status, r.Body)
				}
				h.WaitDone(conv)
				last := h.Up.Last()
				if last.Rejected != nil {
					t.Fatalf("turn %d: the fake refused %s: %s", turn, last.Path, last.Rejected.Message)
				}
				if tc.path != "" && last.Path != tc.path {
					t.Fatalf("turn %d: upstream path %s, want %s", turn, last.Path, tc.path)
				}
				f := gjson.GetBytes(last.Body, tc.file)
				for k, v := range tc.want {
					if got := f.Get(k).Str; got != v {
						t.Errorf("turn %d: upstream %s.%s = %.60q, want %.60q (body %.300s)", turn, tc.file, k, got, v, last.Body)
					}
				}
			}
			stored := h.Stored(tc.up, conv)
			files := 0
			for _, m := range stored {
				files += strings.Count(string(m.Raw), `"input_file"`)
			}
			if len(stored) != 4 || files != 1 {
				t.Errorf("stored %d messages holding %d files, want 4 holding 1", len(stored), files)
			}
		})
	}
}

// TestDocumentOverChat: a Messages client's document block reaches a chat
// completions upstream as a file part.
func TestDocumentOverChat(t *testing.T) {
	h := e2etest.New(t, fourUpstreams())
	data := strings.TrimPrefix(pdfData, "data:application/pdf;base64,")
	body := `{"model":"m1","max_tokens":100,"messages":[{"role":"user","content":[` +
		`{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"` + data + `"},"title":"x.pdf"},` +
		`{"type":"text","text":"What is in this file?"}]}]}`
	r := h.PostHeaders("/v1/messages", map[string]string{"Content-Type": "application/json", "x-api-key": "rk-ch",
		"anthropic-version": "2023-06-01", "X-Conversation-ID": "doc"}, body)
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	h.WaitDone("doc")
	last := h.Up.Last()
	if last.Rejected != nil {
		t.Fatalf("the fake refused: %s", last.Rejected.Message)
	}
	f := gjson.GetBytes(last.Body, "messages.0.content.0")
	if f.Get("type").Str != "file" || f.Get("file.file_data").Str != pdfData || f.Get("file.filename").Str != "x.pdf" {
		t.Errorf("upstream file part: got %s, want the document as a file", f.Raw)
	}
}

// TestFileRefused: a file the upstream's API cannot take is a 400 in the
// client's shape, with nothing stored and no upstream call.
func TestFileRefused(t *testing.T) {
	tests := []struct {
		name, key, path, body string
		headers               map[string]string
		errType               string // gjson path of the error's type
	}{
		{"an OpenAI file id to anthropic", "rk-an", "/v1/responses",
			`{"model":"m1","input":[{"role":"user","content":[{"type":"input_text","text":"read it"},{"type":"input_file","file_id":"file-abc"}]}]}`,
			nil, "error.type"},
		{"an OpenAI file id to gemini", "rk-ge", "/v1/responses",
			`{"model":"m1","input":[{"role":"user","content":[{"type":"input_text","text":"read it"},{"type":"input_file","file_id":"file-abc"}]}]}`,
			nil, "error.type"},
		{"a Word file to anthropic", "rk-an", "/v1/chat/completions",
			`{"model":"m1","messages":[{"role":"user","content":[{"type":"text","text":"read it"},{"type":"file","file":{"filename":"x.docx","file_data":"data:application/vnd.openxmlformats-officedocument.wordprocessingml.document;base64,UEsDBA=="}}]}]}`,
			nil, "error.type"},
		{"a file by URL to chat", "rk-ch", "/v1/responses",
			`{"model":"m1","input":[{"role":"user","content":[{"type":"input_text","text":"read it"},{"type":"input_file","file_url":"https://example.com/x.pdf"}]}]}`,
			nil, "error.type"},
		{"an Anthropic file to chat, in Anthropic's shape", "rk-ch", "/v1/messages",
			`{"model":"m1","max_tokens":100,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"file","file_id":"file_011"}},{"type":"text","text":"read it"}]}]}`,
			map[string]string{"anthropic-version": "2023-06-01"}, "error.type"},
	}
	h := e2etest.New(t, fourUpstreams())
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conv := "refused-" + string(rune('a'+i))
			headers := map[string]string{"Content-Type": "application/json", "X-Conversation-ID": conv}
			if tc.path == "/v1/messages" {
				headers["x-api-key"] = tc.key
			} else {
				headers["Authorization"] = "Bearer " + tc.key
			}
			for k, v := range tc.headers {
				headers[k] = v
			}
			before := h.Up.Count()
			r := h.PostHeaders(tc.path, headers, tc.body)
			if r.Status != 400 || gjson.Get(r.Body, tc.errType).Str != "invalid_request_error" {
				t.Fatalf("got %d %s, want a 400 invalid_request_error", r.Status, r.Body)
			}
			if tc.path == "/v1/messages" && gjson.Get(r.Body, "type").Str != "error" {
				t.Errorf("got %s, want Anthropic's error shape", r.Body)
			}
			if n := h.Up.Count(); n != before {
				t.Errorf("the upstream was called %d times, want none", n-before)
			}
			if stored := h.Stored(strings.TrimPrefix(tc.key, "rk-"), conv); len(stored) != 0 {
				t.Errorf("stored %d messages, want none", len(stored))
			}
		})
	}
}
