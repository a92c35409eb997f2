package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/recallproxy/recall/internal/proctest"
)

// TestServeStartupLog starts the binary and reads what it logged before it
// was ready: the first load of the configuration as a load (not a reload),
// the warning about an upstream URL without an API version, and a
// "recall serving" line that names the upstream with its password masked.
// No line carries an empty "error".
func TestServeStartupLog(t *testing.T) {
	upstream := "http://user:s3cr3t-pw@" + proctest.FreeAddr(t) // no /v1: warned about
	c := newChild(t, t.TempDir(), upstream)
	c.start()
	c.kill()

	raw, err := os.ReadFile(c.logs.Name())
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	var serving map[string]any
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "{") {
			continue // the harness's "--- start" markers
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		msg, _ := rec["msg"].(string)
		msgs = append(msgs, msg)
		if msg == "recall serving" {
			serving = rec
		}
		if e, ok := rec["error"]; ok && e == "" {
			t.Errorf("got an empty \"error\" in %s", line)
		}
	}
	if want := []string{"configuration loaded", "configuration warning", "recall serving"}; strings.Join(msgs, "|") != strings.Join(want, "|") {
		t.Errorf("got messages %q, want %q", msgs, want)
	}
	wantUp := strings.Replace(upstream, "s3cr3t-pw", "xxxxx", 1)
	if got := serving["upstream"]; got != wantUp {
		t.Errorf("recall serving: got upstream %v, want %q", got, wantUp)
	}
	if strings.Contains(string(raw), "s3cr3t-pw") {
		t.Errorf("got the upstream password in the log:\n%s", raw)
	}
}
