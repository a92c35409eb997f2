package proxy_test

import (
	"io"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3/option"
)

func optionBase(url string) option.RequestOption { return option.WithBaseURL(url) }

type httpResult struct {
	status int
	header http.Header
	body   string
}

// post sends a raw request to Recall, for bodies the SDK would not send.
func (h *harness) post(path, key, conv, body string) httpResult {
	h.t.Helper()
	headers := map[string]string{"Content-Type": "application/json"}
	if key != "" {
		headers["Authorization"] = "Bearer " + key
	}
	if conv != "" {
		headers["X-Conversation-ID"] = conv
	}
	return h.postHeaders(path, headers, body)
}

// postHeaders sends a raw request with the given headers.
func (h *harness) postHeaders(path string, headers map[string]string, body string) httpResult {
	h.t.Helper()
	req, err := http.NewRequest("POST", h.url+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return httpResult{status: resp.StatusCode, header: resp.Header, body: string(b)}
}
