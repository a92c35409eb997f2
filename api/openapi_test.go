package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/recallproxy/recall/internal/apitest"
)

func TestOpenAPIDocumentIsValid31(t *testing.T) {
	doc, err := apitest.Document()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Errorf("openapi %q, want 3.1.x", doc.OpenAPI)
	}
	// Every route the handler serves is documented.
	for _, p := range []string{"/recall/v1/conversations", "/recall/v1/conversations/{id}", "/recall/v1/conversations/{id}/messages",
		"/recall/v1/conversations/{id}/context", "/recall/v1/conversations/{id}/search", "/recall/v1/search",
		"/recall/v1/conversations/{id}/forget", "/recall/v1/conversations/{id}/end", "/recall/v1/conversations/{id}/summarize",
		"/recall/v1/conversations/{id}/export", "/recall/v1/conversations/{id}/import", "/recall/v1/openapi.json",
		"/recall/v1/conversations/{id}/exchanges", "/recall/v1/conversations/{id}/exchanges/{xid}"} {
		if doc.Paths.Find(p) == nil {
			t.Errorf("path %s is not documented", p)
		}
	}
}

// The validator must catch a response that breaks the document, or the
// end-to-end tests' checks would prove nothing.
func TestCheckRejectsUndocumentedAnswers(t *testing.T) {
	h := http.Header{"Content-Type": []string{"application/json"}}
	for _, tc := range []struct {
		name   string
		status int
		body   string
	}{
		{"missing field", 200, `{"object":"list","data":[],"first_id":null,"has_more":false}`},
		{"wrong type", 200, `{"object":"list","data":[],"first_id":null,"last_id":null,"has_more":"no"}`},
		{"undocumented status", 418, `{"error":{"message":"x","type":"t","param":null,"code":null}}`},
		{"bad error shape", 404, `{"error":"nope"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := apitest.Check("GET", "/recall/v1/conversations", tc.status, h, []byte(tc.body)); err == nil {
				t.Errorf("got no error, want one")
			}
		})
	}
	ok := `{"object":"list","data":[],"first_id":null,"last_id":null,"has_more":false}`
	if err := apitest.Check("GET", "/recall/v1/conversations?limit=5", 200, h, []byte(ok)); err != nil {
		t.Errorf("a valid answer: %v", err)
	}
}
