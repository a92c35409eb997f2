package api

import _ "embed"

// OpenAPI is the OpenAPI 3.1 document of the API, served at
// GET /recall/v1/openapi.json.
//
//go:embed openapi.json
var OpenAPI []byte

// openapi serves the document. It needs no key: it describes the API,
// not a tenant's data.
func (c *call) openapi() (int, error) {
	c.rc.SetStatusCode(200)
	c.rc.SetContentType("application/json")
	c.rc.SetBody(OpenAPI)
	return 200, nil
}
