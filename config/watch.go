package config

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// debounce is how long the tenants directory must stay quiet before a
// change is loaded: an editor's save or a ConfigMap swap is several events.
const debounce = 100 * time.Millisecond

// Watcher keeps the current Set of tenants. It reloads the Set when Reload
// is called (on SIGHUP, say) and, while Run runs, when anything in the
// tenants directory changes. A reload that fails keeps the last good Set
// and logs the problems, which never contain secrets.
type Watcher struct {
	// OnReload, if not nil, is called with the new Set after each
	// successful reload, on the goroutine that reloaded. Set it before the
	// first call to Run or Reload.
	OnReload func(s *Set)

	g        Global
	lookup   func(string) (string, bool)
	log      *slog.Logger
	cur      atomic.Pointer[Set]
	mu       sync.Mutex // serialises reloads
	reloaded chan struct{}
}

// NewWatcher loads the tenants of g once and returns a Watcher holding them;
// the error is the first load's. lookup expands ${VAR} (os.LookupEnv in
// production). A nil log discards. The first load is logged as
// "configuration loaded", with the configuration's Warnings.
func NewWatcher(g Global, lookup func(string) (string, bool), log *slog.Logger) (*Watcher, error) {
	s, err := LoadTenants(g, lookup)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &Watcher{g: g, lookup: lookup, log: log, reloaded: make(chan struct{}, 1)}
	w.cur.Store(s)
	w.logLoaded("configuration loaded", s)
	return w, nil
}

// logLoaded logs a successful load of s, then its warnings.
func (w *Watcher) logLoaded(msg string, s *Set) {
	attrs := []any{"tenants", len(s.tenants)}
	if w.g.File != "" {
		attrs = append(attrs, "file", w.g.File)
	}
	if w.g.TenantsDir != "" {
		attrs = append(attrs, "dir", w.g.TenantsDir)
	}
	w.log.Info(msg, attrs...)
	for _, warn := range Warnings(w.g, s) {
		w.log.Warn("configuration warning", "warning", warn.String())
	}
}

// Current returns the current Set. It is a lock-free atomic load, for the
// request path; the Set returned stays valid after a reload replaces it.
func (w *Watcher) Current() *Set { return w.cur.Load() }

// Reloaded receives after each reload attempt, successful or not. Signals
// are not queued beyond one: a receiver that fell behind sees one signal for
// several attempts, so it should check Current (or the log) and wait again
// if the state it expects is not there yet.
func (w *Watcher) Reloaded() <-chan struct{} { return w.reloaded }

// Reload loads the tenants again and, if that succeeds, makes them current,
// logs "configuration reloaded" and calls OnReload. On failure the current
// Set stays, the problems are logged and returned.
func (w *Watcher) Reload() error { return w.reload(false) }

// reload is Reload. A catch-up reload (Run's first, made so that no change
// since NewWatcher is missed) is not a reload anyone asked for: its success
// is logged at debug level only.
func (w *Watcher) reload(catchUp bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	defer w.notify()
	s, err := LoadTenants(w.g, w.lookup)
	if err != nil {
		w.log.Error("configuration reload failed, keeping the previous tenants",
			"dir", w.g.TenantsDir, "error", err.Error())
		return fmt.Errorf("config: reload tenants: %w", err)
	}
	w.cur.Store(s)
	if catchUp {
		w.log.Debug("configuration read again once the watch started", "dir", w.g.TenantsDir, "tenants", len(s.tenants))
	} else {
		w.logLoaded("configuration reloaded", s)
	}
	if w.OnReload != nil {
		w.OnReload(s)
	}
	return nil
}

// notify signals Reloaded without blocking.
func (w *Watcher) notify() {
	select {
	case w.reloaded <- struct{}{}:
	default:
	}
}

// Run watches the tenants directory until ctx is done, reloading after
// each burst of changes has been quiet for 100ms. Once the watch is in
// place it reloads once, so that nothing changed since NewWatcher is missed
// (tests can wait for that first Reloaded signal to know the watch is on).
// Without a tenants directory, or if the directory cannot be watched (which
// is logged), Run only waits for ctx: Reload still works.
func (w *Watcher) Run(ctx context.Context) {
	if w.g.TenantsDir == "" {
		<-ctx.Done()
		return
	}
	fw, err := fsnotify.NewWatcher()
	if err == nil {
		if err = fw.Add(w.g.TenantsDir); err != nil {
			fw.Close()
		}
	}
	if err != nil {
		w.log.Error("cannot watch the tenants directory, reload on signal only",
			"dir", w.g.TenantsDir, "error", err.Error())
		<-ctx.Done()
		return
	}
	defer fw.Close()
	_ = w.reload(true) // logged by reload

	timer := time.NewTimer(debounce)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-fw.Events:
			if !ok {
				return
			}
			if ev.Op == fsnotify.Chmod {
				continue // touch, permission changes: nothing to read
			}
			timer.Reset(debounce)
		case err, ok := <-fw.Errors:
			if !ok {
				return
			}
			w.log.Error("watching the tenants directory failed", "dir", w.g.TenantsDir, "error", err.Error())
		case <-timer.C:
			_ = w.Reload()
		}
	}
}
