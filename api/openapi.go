package api

import "github.com/recallproxy/recall/api/openapi"

// openapi serves the API's OpenAPI document (package openapi). It needs
// no key: it describes the API, not a tenant's data.
func (c *call) openapi() (int, error) {
	c.rc.SetStatusCode(200)
	c.rc.SetContentType("application/json")
	c.rc.SetBody(openapi.Document)
	return 200, nil
}
