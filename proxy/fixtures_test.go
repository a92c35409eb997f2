package proxy_test

import (
	"testing"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/store/badgerstore"
	"github.com/recallproxy/recall/store/badgerstore/badgertest"
)

// noEnv is an environment that holds nothing: the configs of these tests
// reference no ${ENV}.
func noEnv(string) (string, bool) { return "", false }

// loadTenants are g's tenants, loaded with no environment.
func loadTenants(tb testing.TB, g config.Global) proxy.StaticTenants {
	tb.Helper()
	set, err := config.LoadTenants(g, noEnv)
	if err != nil {
		tb.Fatal(err)
	}
	return proxy.StaticTenants{Set: set}
}

// newServer is a server of g's tenants on a store of its own (see
// badgertest.Open), its Config changed by adjust (if not nil) before New.
func newServer(tb testing.TB, g config.Global, adjust func(*proxy.Config)) (*proxy.Server, *badgerstore.Store) {
	tb.Helper()
	store := badgertest.Open(tb)
	cfg := proxy.Config{Tenants: loadTenants(tb, g), Store: store}
	if adjust != nil {
		adjust(&cfg)
	}
	srv, err := proxy.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return srv, store
}
