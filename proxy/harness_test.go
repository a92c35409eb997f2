package proxy_test

import (
	"testing"

	"github.com/recallproxy/recall/internal/e2etest"
)

// harness is the shared end-to-end harness (internal/e2etest), with the
// helpers only the proxy's own tests use as methods.
type harness struct{ *e2etest.Harness }

func newHarness(t *testing.T, o e2etest.Options) *harness {
	t.Helper()
	return &harness{e2etest.New(t, o)}
}
