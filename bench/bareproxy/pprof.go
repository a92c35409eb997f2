//go:build pprof

// Profiling for load experiments, as cmd/recall has it: build with -tags
// pprof and set BAREPROXY_PPROF=127.0.0.1:6061 to serve net/http/pprof
// there.
package main

import (
	"net/http"
	_ "net/http/pprof"
	"os"
)

func init() {
	if addr := os.Getenv("BAREPROXY_PPROF"); addr != "" {
		go func() { _ = http.ListenAndServe(addr, nil) }()
	}
}
