package gemini

import (
	"testing"

	"github.com/recallproxy/recall/wire"
)

// Recall's errors reach a Gemini client in Google's shape, and a stream
// that fails ends with that body as its last data event; both append to
// what dst holds.
func TestErrorShape(t *testing.T) {
	var es wire.ErrorShaper = Ingress{}
	body := `{"error":{"code":429,"message":"slow down","status":"RESOURCE_EXHAUSTED"}}`
	if got := string(es.AppendError([]byte("x"), 429, "rate_limit_error", "rate_limited", "", "slow down")); got != "x"+body {
		t.Errorf("body: got %s, want x%s", got, body)
	}
	if got, want := string(es.AppendErrorEvent([]byte("x"), 429, "rate_limit_error", "rate_limited", "", "slow down")), "xdata: "+body+"\r\n\r\n"; got != want {
		t.Errorf("event: got %q, want %q", got, want)
	}
}
