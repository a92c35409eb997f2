// Package apitest checks the conversation API's answers against its
// OpenAPI document (package api/openapi) with kin-openapi, so end-to-end tests
// validate every response they receive with a library rather than by
// hand.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/recallproxy/recall/api/openapi"
)

var (
	once   sync.Once
	doc    *openapi3.T
	router routers.Router
	errDoc error
)

// load parses and validates the document once. Its servers are dropped,
// so routes match whatever host a test server listens on.
func load() error {
	once.Do(func() {
		openapi3filter.RegisterBodyDecoder("application/x-ndjson",
			func(r io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
				b, err := io.ReadAll(r)
				return string(b), err
			})
		loader := openapi3.NewLoader()
		doc, errDoc = loader.LoadFromData(openapi.Document)
		if errDoc != nil {
			return
		}
		if errDoc = doc.Validate(context.Background()); errDoc != nil {
			return
		}
		doc.Servers = nil
		router, errDoc = legacy.NewRouter(doc)
	})
	return errDoc
}

// Document returns the parsed, validated document.
func Document() (*openapi3.T, error) { return doc, load() }

// Check validates one answer of the API to a request of method on url
// (path and query): its status must be documented for the route, and its
// body must match the documented schema. An export's lines are checked
// one by one against ExportHeader and Message.
func Check(method, url string, status int, header http.Header, body []byte) error {
	if err := load(); err != nil {
		return fmt.Errorf("apitest: document: %w", err)
	}
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		return err
	}
	route, params, err := router.FindRoute(req)
	if err != nil {
		// An undocumented route or method must be refused, in the
		// documented error shape.
		if status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
			return fmt.Errorf("apitest: %s %s: no documented route, yet answered %d: %w", method, url, status, err)
		}
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			return fmt.Errorf("apitest: %s %s: %w", method, url, err)
		}
		return doc.Components.Schemas["Error"].Value.VisitJSON(v, openapi3.EnableJSONSchema2020())
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}},
		Status:  status,
		Header:  header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Errorf("apitest: %s %s answered %d: %w\nbody: %.2000s", method, url, status, err, body)
	}
	if header.Get("Content-Type") == "application/x-ndjson" && status == 200 {
		for i, line := range bytes.Split(bytes.TrimRight(body, "\n"), []byte{'\n'}) {
			name := "Message"
			if i == 0 {
				name = "ExportHeader"
			}
			var v any
			if err := json.Unmarshal(line, &v); err != nil {
				return fmt.Errorf("apitest: export line %d: %w", i+1, err)
			}
			if err := doc.Components.Schemas[name].Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
				return fmt.Errorf("apitest: export line %d against %s: %w", i+1, name, err)
			}
		}
	}
	return nil
}
