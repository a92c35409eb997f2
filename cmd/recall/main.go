// Command recall runs Recall, a conversation-memory proxy for
// OpenAI-compatible chat-completions APIs.
//
//	recall serve [--config recall.yaml]        serve (zero config: 127.0.0.1:8080 → api.openai.com)
//	recall check-config --config recall.yaml   validate and print the resolved tenants, secrets masked
//	recall version                             print the version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/history/badgerstore"
	"github.com/recallproxy/recall/history/tokens"
	"github.com/recallproxy/recall/proxy"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: recall <command> [flags]

commands:
  serve          serve the proxy (flags: --config)
  check-config   validate a configuration and print it, secrets masked (flags: --config)
  version        print the version
`

// run is main without the process: it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stderr)
	case "check-config":
		return checkConfig(args[1:], stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "recall", versionString())
		return 0
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "recall: unknown command %q\n\n%s", args[0], usage)
	return 2
}

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// loadConfig parses the --config flag (default $RECALL_CONFIG) and loads
// the global file with its environment overrides.
func loadConfig(name string, args []string, stderr io.Writer) (config.Global, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", os.Getenv("RECALL_CONFIG"), "global configuration file (YAML); empty: built-in defaults")
	if err := fs.Parse(args); err != nil {
		return config.Global{}, err
	}
	if fs.NArg() > 0 {
		return config.Global{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	g, err := config.LoadGlobal(*path)
	if err != nil {
		return config.Global{}, err
	}
	return g, nil
}

func checkConfig(args []string, stdout, stderr io.Writer) int {
	g, err := loadConfig("check-config", args, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "recall: %v\n", err)
		return 1
	}
	set, err := config.LoadTenants(g, os.LookupEnv)
	if err != nil {
		fmt.Fprintf(stderr, "recall: %v\n", err)
		return 1
	}
	if err := config.Describe(stdout, g, set); err != nil {
		fmt.Fprintf(stderr, "recall: %v\n", err)
		return 1
	}
	return 0
}

func newLogger(g config.Global, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(g.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if g.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

func serve(args []string, stderr io.Writer) int {
	g, err := loadConfig("serve", args, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "recall: %v\n", err)
		return 1
	}
	log := newLogger(g, stderr)
	if err := serveUntilSignal(g, log); err != nil {
		log.Error("recall stopped", "error", err.Error())
		return 1
	}
	return 0
}

// serveUntilSignal serves until SIGINT or SIGTERM, reloading tenants on
// SIGHUP, then shuts down gracefully: no new connections, in-flight
// requests and streams finish (up to 30s), the store is flushed and closed.
func serveUntilSignal(g config.Global, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	watcher, err := config.NewWatcher(g, os.LookupEnv, log)
	if err != nil {
		return err
	}
	go watcher.Run(ctx)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-hup:
				if err := watcher.Reload(); err != nil {
					log.Error("reload failed, keeping the last good configuration", "error", err.Error())
				} else {
					log.Info("configuration reloaded")
				}
			case <-ctx.Done():
				return
			}
		}
	}()

	store, err := badgerstore.Open(g.DataDir, badgerstore.Options{
		NoSync:       g.SyncWrites != nil && !*g.SyncWrites,
		Logger:       log,
		MinFreeBytes: int64(g.MinFreeMB) << 20,
	})
	if err != nil {
		return err
	}
	defer store.Close()

	// Build the tokenizers now (tens of milliseconds each) rather than in
	// the first request.
	counter := &tokens.Counter{}
	counter.Text(tokens.O200k, "warm")
	counter.Text(tokens.CL100k, "warm")

	// This process is the directory's only writer, so the newest messages
	// of hot conversations can be served from memory.
	var hist history.Store = store
	if g.CacheMB > 0 {
		hist = history.NewCache(store, g.CacheMB<<20, 2<<20)
	}
	srv, err := proxy.New(proxy.Config{
		Counter:      counter,
		Tenants:      watcher,
		Store:        hist,
		Logger:       log,
		MaxBodyBytes: g.MaxBodyBytes,
		CanCommit:    store.CanCommit,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", g.Listen)
	if err != nil {
		return err
	}
	log.Info("recall serving", "listen", ln.Addr().String(), "data_dir", g.DataDir,
		"tenants", len(watcher.Current().Tenants()), "version", versionString())

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
