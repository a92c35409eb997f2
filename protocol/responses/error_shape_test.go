package responses

import (
	"testing"

	"github.com/recallproxy/recall/wire"
)

// Recall's errors reach a Responses client in OpenAI's shape, and a
// stream of the upstream's own events that fails ends with the error
// event numbered 0; both append to what dst holds.
func TestErrorShape(t *testing.T) {
	var es wire.ErrorShaper = Ingress{}
	got := string(es.AppendError([]byte("x"), 400, "invalid_request_error", "unsupported_parameter", "background", "no"))
	if want := `x{"error":{"message":"no","type":"invalid_request_error","param":"background","code":"unsupported_parameter"}}`; got != want {
		t.Errorf("body: got %s, want %s", got, want)
	}
	got = string(es.AppendError(nil, 500, "server_error", "", "", "no"))
	if want := `{"error":{"message":"no","type":"server_error","param":null,"code":null}}`; got != want {
		t.Errorf("body without code: got %s, want %s", got, want)
	}
	got = string(es.AppendErrorEvent([]byte("x"), 507, "server_error", "history_write_failed", "", "not stored"))
	if want := "x" + string(AppendErrorEvent(nil, 0, "history_write_failed", "not stored")); got != want {
		t.Errorf("event: got %q, want %q", got, want)
	}
	if _, ok := (Ingress{}).NewRenderer(&wire.Request{}).(wire.ErrorRenderer); !ok {
		t.Error("the renderer is not a wire.ErrorRenderer: a rendered stream's error event would not be numbered after its events")
	}
}
