package proxy_test

import (
	"strings"
	"testing"

	"github.com/recallproxy/recall/internal/e2etest"
)

// A log line carries an error (under "error") and an error code only when
// there is one: never `"error":""` or `"code":""`.
func TestLogLinesCarryNoEmptyError(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	if r := h.Post("/v1/chat/completions", key, "log-1", e2etest.ChatBody("hi", false)); r.Status != 200 {
		t.Fatalf("chat: got %d %s", r.Status, r.Body)
	}
	h.WaitDone("log-1")
	h.Get("/v1/models", key)
	if r := h.Post("/v1/chat/completions", "", "log-1", e2etest.ChatBody("no key", false)); r.Status != 401 {
		t.Fatalf("without a key: got %d %s", r.Status, r.Body)
	}
	// The pass-through line is written once its relay ends, which may be
	// after the client has read the whole answer.
	if !h.Logs.WaitFor(`"route":"passthrough"`) {
		t.Fatalf("no pass-through line logged within 10s: %s", h.Logs.String())
	}
	logs := h.Logs.String()
	for _, bad := range []string{`"error":""`, `"code":""`} {
		if strings.Contains(logs, bad) {
			t.Errorf("logs hold %s:\n%s", bad, logs)
		}
	}
	if !strings.Contains(logs, `"route":"passthrough"`) || strings.Count(logs, `"route":"chat"`) < 2 {
		t.Errorf("logs %s: want the chat, pass-through and refused lines", logs)
	}
}
