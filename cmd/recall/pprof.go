//go:build pprof

// Profiling for load experiments: build with -tags pprof and set
// RECALL_PPROF=127.0.0.1:6060 to serve net/http/pprof there. Release builds
// do not contain it.
package main

import (
	"net/http"
	_ "net/http/pprof"
	"os"
)

func init() {
	if addr := os.Getenv("RECALL_PPROF"); addr != "" {
		go func() { _ = http.ListenAndServe(addr, nil) }()
	}
}
