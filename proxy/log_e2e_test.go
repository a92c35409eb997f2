package proxy_test

import (
	"net/http"
	"strings"
	"testing"
)

// A log line carries an error (under "error") and an error code only when
// there is one: never `"error":""` or `"code":""`.
func TestLogLinesCarryNoEmptyError(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	if r := h.post("/v1/chat/completions", key, "log-1", chatBody("hi", false)); r.status != 200 {
		t.Fatalf("chat: got %d %s", r.status, r.body)
	}
	h.waitDone("log-1")
	req, _ := http.NewRequest("GET", h.url+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if r := h.post("/v1/chat/completions", "", "log-1", chatBody("no key", false)); r.status != 401 {
		t.Fatalf("without a key: got %d %s", r.status, r.body)
	}
	// The pass-through line is written once its relay ends, which may be
	// after the client has read the whole answer.
	if !h.logs.waitFor(`"route":"passthrough"`) {
		t.Fatalf("no pass-through line logged within 10s: %s", h.logs.String())
	}
	logs := h.logs.String()
	for _, bad := range []string{`"error":""`, `"code":""`} {
		if strings.Contains(logs, bad) {
			t.Errorf("logs hold %s:\n%s", bad, logs)
		}
	}
	if !strings.Contains(logs, `"route":"passthrough"`) || strings.Count(logs, `"route":"chat"`) < 2 {
		t.Errorf("logs %s: want the chat, pass-through and refused lines", logs)
	}
}
