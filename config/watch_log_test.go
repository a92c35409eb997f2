package config

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/recallproxy/recall/internal/proctest"
)

// logRecords parses JSON log lines.
func logRecords(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// messages lists the msg of each record.
func messages(recs []map[string]any) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r["msg"].(string))
	}
	return out
}

// TestWatcherLogsLoadThenReload checks what the watcher logs over its life:
// the first load as a load, Run's catch-up read not at all at info level,
// each requested reload once, a failed reload with its problems under
// "error", and never an empty "error".
func TestWatcherLogsLoadThenReload(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "acme.yaml", "id: acme\napi_keys: [rk-acme-1]\nupstream:\n  base_url: http://up.example\n")
	var buf proctest.SyncBuffer
	g := globalWithTenants(dir)
	w, err := NewWatcher(g, env(nil), slog.New(slog.NewJSONHandler(&buf, nil)))
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		do   func()
		want []string // every message logged so far
	}{
		{
			name: "first load",
			do:   func() {},
			want: []string{"configuration loaded", "configuration warning"},
		},
		{
			// Run stops again at once: the file changes below must not
			// reach the watch, whose debounced reloads would log too.
			name: "catch-up read once the watch starts",
			do:   func() { runOnce(t, w) },
			want: []string{"configuration loaded", "configuration warning"},
		},
		{
			name: "requested reload",
			do: func() {
				if err := w.Reload(); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"configuration loaded", "configuration warning", "configuration reloaded", "configuration warning"},
		},
		{
			name: "failed reload",
			do: func() {
				writeFile(t, dir, "acme.yaml", "id: acme\n")
				if err := w.Reload(); err == nil {
					t.Fatal("got nil error, want the reload's problems")
				}
			},
			want: []string{"configuration loaded", "configuration warning", "configuration reloaded", "configuration warning",
				"configuration reload failed, keeping the previous tenants"},
		},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.do()
			recs := logRecords(t, buf.String())
			if got := messages(recs); strings.Join(got, "|") != strings.Join(st.want, "|") {
				t.Errorf("got messages %q, want %q", got, st.want)
			}
			for _, r := range recs {
				if _, ok := r["err"]; ok {
					t.Errorf("got key \"err\" in %v, want \"error\"", r)
				}
				if e, ok := r["error"]; ok && e == "" {
					t.Errorf("got an empty \"error\" in %v, want none", r)
				}
			}
		})
	}
	recs := logRecords(t, buf.String())
	last := recs[len(recs)-1]
	if e, _ := last["error"].(string); !strings.Contains(e, "api_keys: at least one key is required") {
		t.Errorf("failed reload: got error %q, want the file's problem", e)
	}
	if first := recs[0]; first["tenants"] != float64(1) || first["dir"] != dir {
		t.Errorf("first load: got %v, want tenants 1 and dir %q", first, dir)
	}
	if warn, _ := recs[1]["warning"].(string); !strings.Contains(warn, "upstream.base_url: \"http://up.example\" does not end in an API version") {
		t.Errorf("warning: got %q, want the base URL's", warn)
	}
}

// runOnce starts w.Run, waits for its catch-up read and stops it.
func runOnce(t *testing.T, w *Watcher) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	select {
	case <-w.Reloaded():
	case <-time.After(waitDeadline):
		t.Fatalf("got no catch-up read within %s", waitDeadline)
	}
}
