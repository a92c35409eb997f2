package proxy_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/recallproxy/recall/internal/apitest"
)

// apiAnswer is one answer of the conversation API.
type apiAnswer struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the answer's body into v.
func (a apiAnswer) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("decode %s: %v", a.body, err)
	}
}

// errCode is the answer's OpenAI error code.
func (a apiAnswer) errCode() string {
	var e struct {
		Error struct {
			Code  *string `json:"code"`
			Param *string `json:"param"`
		} `json:"error"`
	}
	json.Unmarshal(a.body, &e)
	if e.Error.Code == nil {
		return ""
	}
	return *e.Error.Code
}

// api calls the conversation API as key (with header X-Recall-Tenant set
// to tenant, if not "") and checks the answer against the OpenAPI
// document.
func (h *harness) api(key, tenant, method, path string, body string, contentType ...string) apiAnswer {
	h.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, h.url+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if tenant != "" {
		req.Header.Set("X-Recall-Tenant", tenant)
	}
	switch {
	case len(contentType) > 0:
		req.Header.Set("Content-Type", contentType[0])
	case body != "":
		req.Header.Set("Content-Type", "application/json")
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
	if err := apitest.Check(method, path, resp.StatusCode, resp.Header, b); err != nil {
		h.t.Errorf("%v", err)
	}
	return apiAnswer{status: resp.StatusCode, header: resp.Header, body: b}
}
