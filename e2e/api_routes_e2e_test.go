package e2e

import (
	"testing"

	"github.com/recallproxy/recall/internal/e2etest"
)

// A 405 of the conversation API names the methods its path takes in
// Allow (RFC 9110 section 15.5.6).
func TestAPIMethodNotAllowedNamesTheAllowedMethods(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{})
	for _, tc := range []struct{ method, path, allow string }{
		{"PUT", "/recall/v1/conversations", "GET"},
		{"PUT", convBase + "c1", "GET, DELETE"},
		{"PATCH", convBase + "c1/messages", "GET, POST"},
		{"GET", convBase + "c1/forget", "POST"},
		{"POST", convBase + "c1/context", "GET"},
		{"POST", "/recall/v1/search", "GET"},
		{"POST", "/recall/v1/openapi.json", "GET, HEAD"},
	} {
		a := h.API(key, "", tc.method, tc.path, "")
		if a.Status != 405 || a.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: got %d with Allow %q, want 405 with Allow %q", tc.method, tc.path, a.Status, a.Header.Get("Allow"), tc.allow)
		}
	}
}

// Each route has one path: a trailing slash is a 404, never an alias of
// the route without it (a DELETE on it deletes nothing).
func TestAPITrailingSlashIsNotAnAlias(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{})
	h.Say(key, "c1", "hello")
	for _, tc := range []struct{ method, path string }{
		{"GET", convBase + "c1/"},
		{"DELETE", convBase + "c1/"},
		{"GET", convBase + "c1/messages/"},
		{"GET", convBase + "c1//"},
	} {
		if a := h.API(key, "", tc.method, tc.path, ""); a.Status != 404 || a.ErrCode() != "unknown_url" {
			t.Errorf("%s %s: got %d %s, want 404 unknown_url", tc.method, tc.path, a.Status, a.Body)
		}
	}
	if got := len(h.Stored(h.PassNamespace(key), "c1")); got != 2 {
		t.Errorf("got %d stored messages after DELETE %sc1/, want the 2 of the turn", got, convBase)
	}
	if a := h.API(key, "", "GET", convBase+"c1", ""); a.Status != 200 {
		t.Errorf("GET %sc1: got %d, want 200", convBase, a.Status)
	}
}
