// Command fakeupstream serves the upstreamtest fake OpenAI-compatible
// upstream on a chosen address, with instant replies and no request log, for
// Recall's load script:
//
//	go run ./bench/fakeupstream -listen 127.0.0.1:9801
//
// Point Recall's upstream at http://127.0.0.1:9801/v1. It runs until
// interrupted.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/recallproxy/recall/internal/upstreamtest"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9801", "address to listen on")
	keep := flag.Int("keep", 0, "requests to keep in the in-memory log (0: none; keep it 0 under load)")
	flag.Parse()

	s, err := upstreamtest.Listen(*listen, upstreamtest.WithKeepRequests(*keep))
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeupstream:", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "fakeupstream: serving", s.URL())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	s.Close()
}
