package e2etest

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/recallproxy/recall/internal/apitest"
)

// Answer is one answer of the conversation API.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the answer's body into v.
func (a Answer) JSON(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(a.Body, v); err != nil {
		t.Fatalf("decode %s: %v", a.Body, err)
	}
}

// ErrCode is the answer's OpenAI error code.
func (a Answer) ErrCode() string {
	var e struct {
		Error struct {
			Code  *string `json:"code"`
			Param *string `json:"param"`
		} `json:"error"`
	}
	json.Unmarshal(a.Body, &e)
	if e.Error.Code == nil {
		return ""
	}
	return *e.Error.Code
}

// API calls the conversation API as key (with header X-Recall-Tenant set
// to tenant, if not "") and checks the answer against the OpenAPI
// document.
func (h *Harness) API(key, tenant, method, path string, body string, contentType ...string) Answer {
	h.T.Helper()
	req := h.request(method, path, key, body)
	if tenant != "" {
		req.Header.Set("X-Recall-Tenant", tenant)
	}
	if len(contentType) > 0 {
		req.Header.Set("Content-Type", contentType[0])
	}
	resp, b := h.do(req)
	if err := apitest.Check(method, path, resp.StatusCode, resp.Header, b); err != nil {
		h.T.Errorf("%v", err)
	}
	return Answer{Status: resp.StatusCode, Header: resp.Header, Body: b}
}
