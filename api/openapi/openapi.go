// Package openapi holds the OpenAPI 3.1 document of the conversation API:
// package api serves it, and the tests validate every answer they get
// against it (internal/apitest), without importing the API itself.
package openapi

import _ "embed"

// Document is the OpenAPI 3.1 document of the conversation API, served
// at GET /recall/v1/openapi.json. It must not be modified.
//
//go:embed openapi.json
var Document []byte
