package app_test

import (
	"context"
	"testing"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/app"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/store/badgerstore"
)

// What the calibration learned is written to the store when the app
// closes it, and read back by the next app over the same store (behind
// the cache, as cmd/recall serves): a restart does not forget it.
func TestCalibrationSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	set, err := config.LoadTenants(config.DefaultGlobal(), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	start := func() (*app.App, *badgerstore.Store) {
		t.Helper()
		store, err := badgerstore.Open(dir, badgerstore.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		a, err := app.New(app.Config{Proxy: proxy.Config{Tenants: proxy.StaticTenants{Set: set}, Store: history.NewCache(store, 0, 0)}})
		if err != nil {
			t.Fatal(err)
		}
		return a, store
	}
	ctx := context.Background()
	a, store := start()
	for range 4 {
		a.Calibration.Observe("default", "gpt-4o", 1000, 1400)
	}
	if err := a.Calibration.Close(ctx); err != nil {
		t.Fatal(err)
	}
	a.Exchanges.Close(ctx)
	store.Close()

	b, store := start()
	defer store.Close()
	defer b.Exchanges.Close(ctx)
	defer b.Calibration.Close(ctx)
	got, ok := b.Calibration.Get("default", "gpt-4o")
	if !ok || got.Samples != 4 || got.Ratio < 1.399 || got.Ratio > 1.401 {
		t.Errorf("after a restart: got %+v (%v), want ratio 1.4 over 4 samples", got, ok)
	}
	if r := b.Calibration.Ratio("default", "gpt-4o"); r < 1.399 || r > 1.401 {
		t.Errorf("after a restart: got ratio %v applied, want 1.4", r)
	}
}
