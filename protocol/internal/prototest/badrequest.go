package prototest

import (
	"errors"
	"testing"

	"github.com/recallproxy/recall/internal/apierr"
)

// BadRequest checks that err, an ingress's refusal of a request, is an
// *apierr.Error with status 400, about param ("" for the body as a
// whole), with a message; it returns the error for the checks of the
// protocol's own shape.
func BadRequest(t testing.TB, err error, param string) *apierr.Error {
	t.Helper()
	var e *apierr.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want an *apierr.Error", err)
	}
	if e.Status != 400 || e.Param != param || e.Message == "" {
		t.Errorf("got %d param %q (%s), want 400 param %q and a message", e.Status, e.Param, e.Message, param)
	}
	return e
}
