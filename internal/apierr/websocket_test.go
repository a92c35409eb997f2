package apierr_test

import (
	"testing"

	"github.com/recallproxy/recall/internal/apierr"
)

func TestWebSocketEvent(t *testing.T) {
	got := string(apierr.WebSocketEvent(apierr.PreviousResponseNotFound))
	want := `{"type":"error","status":400,"error":{"type":"invalid_request_error","code":"previous_response_not_found","message":` +
		`"` + apierr.PreviousResponseNotFound.Message + `","param":"previous_response_id"}}`
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"an error body", 429, `{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}`,
			`{"type":"error","status":429,"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}`},
		{"no error body", 502, `<html>bad gateway</html>`,
			`{"type":"error","status":502,"error":{"type":"server_error","code":"server_error","message":"The request failed with status 502.","param":null}}`},
		{"an error without a code", 400, `{"error":{"message":"no","type":"invalid_request_error","param":null,"code":null}}`,
			`{"type":"error","status":400,"error":{"message":"no","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(apierr.WebSocketEventOf(tc.status, []byte(tc.body))); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}
