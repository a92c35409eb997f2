package config

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/recallproxy/recall/internal/proctest"
)

// waitDeadline bounds every wait on the watcher; it is a failure bound, not
// a timing assertion.
const waitDeadline = 10 * time.Second

// waitFor waits on Reloaded until cond holds, failing at the deadline.
func waitFor(t *testing.T, w *Watcher, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(waitDeadline)
	for !cond() {
		select {
		case <-w.Reloaded():
		case <-deadline:
			t.Fatalf("got no %s within %s", what, waitDeadline)
		}
	}
}

// ids lists the tenant ids of s.
func ids(s *Set) string {
	var out []string
	for _, t := range s.Tenants() {
		out = append(out, t.ID)
	}
	return strings.Join(out, ",")
}

// runWatcher runs w until the cancel it returns is called; done closes
// when Run has returned.
func runWatcher(w *Watcher) (cancel context.CancelFunc, done <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		w.Run(ctx)
	}()
	return cancel, stopped
}

// startWatcher runs a Watcher over dir and waits until its watch is in place.
func startWatcher(t *testing.T, dir string, log *proctest.SyncBuffer) *Watcher {
	t.Helper()
	w, err := NewWatcher(globalWithTenants(dir), env(map[string]string{"SECRET_UP": "sk-TOPSECRET-up"}),
		slog.New(slog.NewTextHandler(log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	cancel, done := runWatcher(w)
	t.Cleanup(func() {
		cancel()
		<-done
	})
	select { // Run's first reload: the watch is in place
	case <-w.Reloaded():
	case <-time.After(waitDeadline):
		t.Fatalf("got no first reload within %s", waitDeadline)
	}
	return w
}

// addFile writes a file atomically: written aside, then renamed in.
func addFile(t *testing.T, dir, name, content string) {
	t.Helper()
	tmp := writeFile(t, t.TempDir(), name, content)
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

func TestWatcherPicksUpNewTenant(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "acme.yaml", "id: acme\napi_keys: [rk-acme-1]\n")
	var log proctest.SyncBuffer
	w := startWatcher(t, dir, &log)

	addFile(t, dir, "globex.yaml", "id: globex\napi_keys: [rk-globex-1]\nupstream:\n  api_key: ${SECRET_UP}\n")
	waitFor(t, w, "reload with globex", func() bool { return ids(w.Current()) == "acme,globex" })

	tn, ok := w.Current().Authenticate("rk-globex-1")
	if !ok || tn.ID != "globex" {
		t.Errorf("got (%v, %v), want globex", tn, ok)
	}
	if strings.Contains(log.String(), "TOPSECRET") || strings.Contains(log.String(), "rk-globex-1") {
		t.Errorf("got a secret in the log:\n%s", log.String())
	}
}

func TestWatcherKeepsLastGoodSet(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "acme.yaml", "id: acme\napi_keys: [rk-acme-1]\n")
	var log proctest.SyncBuffer
	w := startWatcher(t, dir, &log)
	before := w.Current()

	// The broken file names a secret in a key the loader does not know and
	// a secret under a key of the wrong type: neither may reach the log.
	addFile(t, dir, "broken.yaml", "id: broken\napi_keys: [rk-broken-1]\napi_key: sk-TOPSECRET-1\nhistory:\n  budget_tokens: sk-TOPSECRET-2\n")
	waitFor(t, w, "failed reload of broken.yaml", func() bool {
		return strings.Contains(log.String(), "broken.yaml: api_key: unknown key")
	})

	if got := w.Current(); got != before {
		t.Errorf("got a new Set %q, want the last good one kept", ids(got))
	}
	if _, ok := w.Current().Authenticate("rk-acme-1"); !ok {
		t.Errorf("got rk-acme-1 rejected, want the last good Set still serving it")
	}
	if strings.Contains(log.String(), "TOPSECRET") {
		t.Errorf("got a secret in the log:\n%s", log.String())
	}

	// Fixing the file brings it in.
	addFile(t, dir, "broken.yaml", "id: broken\napi_keys: [rk-broken-1]\n")
	waitFor(t, w, "reload with the fixed file", func() bool { return ids(w.Current()) == "acme,broken" })
}

func TestWatcherReload(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", "id: a\napi_keys: [k-a]\n")
	w, err := NewWatcher(globalWithTenants(dir), env(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	var hooked []string
	w.OnReload = func(s *Set) { hooked = append(hooked, ids(s)) }

	tests := []struct {
		name    string
		file    string // written as b.yaml before Reload
		wantErr bool
		wantIDs string
	}{
		{"new tenant", "id: b\napi_keys: [k-b]\n", false, "a,b"},
		{"broken tenant keeps the set", "id: b\napi_keys: [k-b]\nnope: 1\n", true, "a,b"},
		{"duplicate key keeps the set", "id: b\napi_keys: [k-a]\n", true, "a,b"},
		{"changed tenant", "id: c\napi_keys: [k-c]\n", false, "a,c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			writeFile(t, dir, "b.yaml", tt.file)
			err := w.Reload()
			if (err != nil) != tt.wantErr {
				t.Errorf("got error %v, want error %v", err, tt.wantErr)
			}
			if got := ids(w.Current()); got != tt.wantIDs {
				t.Errorf("got tenants %s, want %s", got, tt.wantIDs)
			}
			select {
			case <-w.Reloaded():
			default:
				t.Errorf("got no Reloaded signal, want one per attempt")
			}
		})
	}
	if got, want := strings.Join(hooked, " "), "a,b a,c"; got != want {
		t.Errorf("OnReload: got %q, want %q", got, want)
	}
}

func TestWatcherFirstLoadFails(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", "id: a\n")
	if _, err := NewWatcher(globalWithTenants(dir), env(nil), nil); err == nil {
		t.Errorf("got nil error, want the first load's error")
	}
}

func TestWatcherRunWithoutDir(t *testing.T) {
	w, err := NewWatcher(DefaultGlobal(), env(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	cancel, done := runWatcher(w)
	cancel()
	select {
	case <-done:
	case <-time.After(waitDeadline):
		t.Fatalf("got Run still running %s after cancel, want it to return", waitDeadline)
	}
	if !w.Current().PassThrough() {
		t.Errorf("got a non pass-through set, want the implicit tenant")
	}
}
