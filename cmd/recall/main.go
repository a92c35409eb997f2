// Command recall runs Recall, a conversation-memory proxy for LLM APIs:
// OpenAI chat completions, the Responses API, Anthropic Messages and
// Google's Gemini generateContent.
//
//	recall serve [--config recall.yaml]        serve (zero config: 127.0.0.1:8080 → api.openai.com)
//	recall check-config [--config recall.yaml] validate and print the resolved tenants, secrets masked
//	recall health [--addr http://127.0.0.1:8080] exit 0 if a running Recall is ready (for HEALTHCHECK)
//	recall conversations VERB [flags]          list|show|messages|context|search|export|import|forget|exchanges|delete
//	recall version                             print the version
//
// Every command's --help lists its flags and the environment variables it
// reads, with their defaults.
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
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/recallproxy/recall/api"
	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/app"
	"github.com/recallproxy/recall/internal/procs"
	"github.com/recallproxy/recall/metrics"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/retention"
	"github.com/recallproxy/recall/store/badgerstore"
	"github.com/recallproxy/recall/store/pgstore"
	"github.com/recallproxy/recall/summary"
	"github.com/recallproxy/recall/tokens"
	"github.com/recallproxy/recall/tracing"
	"github.com/recallproxy/recall/wire"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: recall <command> [flags]

commands:
  serve          serve the proxy
  check-config   validate a configuration and print it, secrets masked
  health         exit 0 if a running Recall answers /readyz with 200
  conversations  read and change stored conversations: list, show, messages, context,
                 search, export, import, forget, exchanges (their upstream calls), delete
  version        print the version

"recall <command> --help" lists a command's flags and environment variables.
`

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1 // the command ran and failed: bad configuration, not ready, server error
	exitUsage = 2 // the command line is wrong
)

// run is main without the process: it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stdout, stderr)
	case "check-config":
		return checkConfig(args[1:], stdout, stderr)
	case "health":
		return health(args[1:], stdout, stderr)
	case "conversations":
		return conversations(args[1:], stdout, stderr)
	case "version", "--version", "-v":
		return versionCmd(args[1:], stdout, stderr)
	case "help", "--help", "-h":
		if len(args) > 1 && args[1] != "help" && args[1] != "--help" && args[1] != "-h" {
			return run([]string{args[1], "--help"}, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "recall: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}

// envVar is an environment variable a command reads, for its help.
type envVar struct {
	name, def, what string
}

// configEnv lists what serve and check-config read from the environment.
// The defaults come from config.DefaultGlobal, so the help cannot drift
// from what LoadGlobal does.
func configEnv() []envVar {
	d := config.DefaultGlobal()
	return []envVar{
		{"RECALL_CONFIG", "(none)", "global configuration file, as --config; none: built-in defaults"},
		{config.EnvListen, d.Listen, "address to listen on; overrides listen"},
		{config.EnvUpstreamURL, d.Defaults.Upstream.BaseURL, "upstream API base URL; overrides defaults.upstream.base_url"},
		{config.EnvUpstreamProtocol, d.Defaults.Upstream.Protocol, "what the upstream speaks (" + strings.Join(wire.UpstreamKinds, ", ") + "); overrides defaults.upstream.protocol"},
		{config.EnvDataDir, d.DataDir, "Badger data directory; overrides data_dir"},
		{config.EnvStoreURL, "(empty)", "postgres://user:password@host:port/db: PostgreSQL, shared by replicas; empty: Badger in the data directory"},
		{config.EnvReplicaURL, "(empty)", "http://host:port at which the other replicas reach this one, to forward it its conversations' requests (needs a store URL); overrides replica_url"},
		{"RECALL_ADMIN_KEY", "(none)", `the admin key, where a file says admin_key: "${RECALL_ADMIN_KEY}"`},
		{"${VAR}", "", "any variable a configuration file references; unset is an error"},
	}
}

// serveEnv lists what serve reads from the environment: the
// configuration's variables, and those of the process around it.
// TestHelpListsEveryVariableTheCodeReads fails when the code reads a
// RECALL_* variable that this list leaves out.
func serveEnv() []envVar {
	env := configEnv()
	last := len(env) - 1 // ${VAR} stays last
	return slices.Insert(env, last,
		envVar{"RECALL_PPROF", "(none)", "a binary built with -tags pprof serves net/http/pprof on this address (release builds ignore it)"},
		envVar{"RECALL_BADGER_METRICS", "(none)", "a binary built with -tags pprof keeps Badger's counters (expvar, under /debug/vars) of this database: main or side (release builds ignore it)"},
		envVar{"GOMEMLIMIT", "(unset)", "the Go heap's soft limit; set, it wins over memory_limit_mb"},
		envVar{"GOGC", "(unset)", "the Go collector's target; unset while a memory limit is in force, Recall sets 200"},
		envVar{"GOMAXPROCS", "(unset)", "set, Recall keeps it; unset on one CPU, Recall runs four Go processors while a computation holds one"},
	)
}

// command describes a subcommand for its --help.
type command struct {
	name     string
	synopsis string // after "recall <name>"
	about    string
	env      []envVar
}

// printHelp writes c's help: synopsis, description, flags, environment.
func (c command) printHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n", strings.TrimSpace("recall "+c.name+" "+c.synopsis), c.about)
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		fmt.Fprint(w, "\nflags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	if len(c.env) > 0 {
		fmt.Fprint(w, "\nenvironment:\n")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprint(tw, "  variable\tdefault\tmeaning\n")
		for _, e := range c.env {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", e.name, e.def, e.what)
		}
		tw.Flush()
	}
}

// parse parses args into fs. It reports done with the exit code when the
// command should stop there: 0 after printing the help asked for with
// --help or -h (to stdout), 2 after saying what is wrong with a flag or a
// stray argument (to stderr).
func (c command) parse(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, done bool) {
	fs.SetOutput(io.Discard) // the flag package's own messages are replaced below
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.printHelp(stdout, fs)
		return exitOK, true
	case err != nil:
		fmt.Fprintf(stderr, "recall %s: %v (see recall %s --help)\n", c.name, err, c.name)
		return exitUsage, true
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "recall %s: unexpected argument %q (see recall %s --help)\n", c.name, fs.Arg(0), c.name)
		return exitUsage, true
	}
	return exitOK, false
}

var (
	serveCmd = command{
		name:     "serve",
		synopsis: "[--config FILE]",
		about: "Serve the proxy until SIGINT or SIGTERM (in-flight requests and streams get up\n" +
			"to 30s to finish); SIGHUP reloads the tenant files. Without a configuration it\n" +
			"listens on 127.0.0.1:8080, forwards to https://api.openai.com/v1 with each\n" +
			"client's own key and stores in ./recall-data. The environment overrides the file.\n" +
			"Traces go over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT) is\n" +
			"set: OTEL_EXPORTER_OTLP_PROTOCOL http/protobuf (default) or grpc, OTEL_SERVICE_NAME\n" +
			"(default recall), and the exporter's, sampler's and batching's OTEL_* variables\n" +
			"(headers, timeout, compression, certificates; docs/tracing.md lists them).",
		env: serveEnv(),
	}
	checkConfigCmd = command{
		name:     "check-config",
		synopsis: "[--config FILE]",
		about: "Load the configuration as serve would, list every problem of every file at\n" +
			"once and exit 1, or print the resolved configuration with secrets masked and\n" +
			"exit 0. Warnings (such as an upstream URL without an API version) go to stderr.",
		env: configEnv(),
	}
	healthCmd = command{
		name:     "health",
		synopsis: "[--addr URL] [--timeout DURATION]",
		about: "GET <addr>/readyz of a running Recall: exit 0 if it answers 200, 1 otherwise,\n" +
			"printing one line. It needs no shell, for Docker's HEALTHCHECK.",
		env: []envVar{
			{"RECALL_ADDR", "(from RECALL_LISTEN)", "Recall's base URL, as --addr"},
			{config.EnvListen, "127.0.0.1:8080", "without RECALL_ADDR: the address is http://<RECALL_LISTEN>, 0.0.0.0 and :: as loopback"},
		},
	}
	versionHelp = command{
		name:  "version",
		about: "Print the version: the one stamped at build time with -ldflags \"-X main.version=...\",\nelse the module version or VCS revision Go recorded, else \"dev\".",
	}
)

func versionCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	if code, done := versionHelp.parse(fs, args, stdout, stderr); done {
		return code
	}
	fmt.Fprintln(stdout, "recall", versionString())
	return exitOK
}

// versionString says which build this is even when nothing was stamped:
// the -X main.version value, else the module version, else the VCS
// revision Go recorded (with "-dirty" for uncommitted changes), else "dev".
func versionString() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return "dev-" + rev
}

// loadConfig parses the --config flag (default $RECALL_CONFIG) of c and
// loads that configuration. When done, the command ends with code: the
// flags asked for help or were wrong, or the configuration's problems
// were printed to stderr.
func loadConfig(c command, args []string, stdout, stderr io.Writer) (g config.Global, set *config.Set, code int, done bool) {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	p := fs.String("config", os.Getenv("RECALL_CONFIG"), "global configuration `file` (YAML); empty: built-in defaults")
	if code, done = c.parse(fs, args, stdout, stderr); done {
		return g, nil, code, true
	}
	g, set, err := config.Load(*p, os.LookupEnv)
	if err != nil {
		printProblems(stderr, err)
		return g, nil, exitFail, true
	}
	return g, set, exitOK, false
}

// printProblems writes the problems joined in err, one per line.
func printProblems(w io.Writer, err error) {
	lines := strings.Split(err.Error(), "\n")
	if len(lines) == 1 {
		fmt.Fprintf(w, "recall: %s\n", lines[0])
		return
	}
	fmt.Fprintf(w, "recall: %d problems:\n", len(lines))
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", l)
	}
}

func checkConfig(args []string, stdout, stderr io.Writer) int {
	g, set, code, done := loadConfig(checkConfigCmd, args, stdout, stderr)
	if done {
		return code
	}
	for _, w := range config.Warnings(g, set) {
		fmt.Fprintf(stderr, "recall: warning: %s\n", w)
	}
	if err := config.Describe(stdout, g, set); err != nil {
		fmt.Fprintf(stderr, "recall: %v\n", err)
		return exitFail
	}
	return exitOK
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

func serve(args []string, stdout, stderr io.Writer) int {
	g, _, code, done := loadConfig(serveCmd, args, stdout, stderr)
	if done {
		return code
	}
	log := newLogger(g, stderr)
	if err := serveUntilSignal(g, log); err != nil {
		log.Error("recall stopped", "error", err.Error())
		return exitFail
	}
	return exitOK
}

// serveUntilSignal serves until SIGINT or SIGTERM, reloading tenants on
// SIGHUP, then shuts down gracefully: no new connections, in-flight
// requests and streams finish (up to 30s), the store is flushed and closed.
func serveUntilSignal(g config.Global, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	watcher, stopHup, err := watchConfig(ctx, g, log)
	if err != nil {
		return err
	}
	defer stopHup()

	memLimit, memSource := applyMemoryLimit(g, os.LookupEnv)
	gcPct, gcSource := applyGCPercent(memLimit > 0, os.LookupEnv)
	// On one CPU, several Go processors while a computation holds the one
	// (internal/procs).
	adaptive := procs.OneCPU(os.LookupEnv)
	if adaptive {
		go (&procs.Controller{}).Run(ctx, nil)
	}

	counter, st, err := openStoreWarm(ctx, g, log)
	if err != nil {
		return err
	}
	defer st.close()
	replicas, err := joinFleet(ctx, g, st, log)
	if err != nil {
		return err
	}
	if replicas != nil {
		// Leave as the shutdown starts (the others stop forwarding here
		// at their next heartbeat), and before the store closes.
		stopLeave := context.AfterFunc(ctx, func() { leaveFleet(replicas, log) })
		defer func() {
			if stopLeave() {
				leaveFleet(replicas, log)
			} else {
				_ = replicas.Close() // waits for the leave under way
			}
		}()
	}

	// The newest messages of hot conversations are served from memory:
	// this process is Badger's only writer, and a shared store's head is
	// checked before each hit (history.HeadReader).
	hist := st.store
	if g.CacheMB > 0 {
		hist = history.NewCache(st.store, g.CacheMB<<20, 2<<20)
	}
	met := storeMetrics(st)
	replicas.register(met.Registry())
	tracer, err := startTracer(ctx, log)
	if err != nil {
		return err
	}
	// One assembly serves chat, the conversation API and summaries over
	// the same store (and cache), tenants, locks, counter and metrics;
	// summaries go to the tenants' upstreams, off the request path.
	a, err := app.New(app.Config{
		Proxy: proxy.Config{
			Counter:      counter,
			Tenants:      watcher,
			Store:        hist,
			Leaser:       st.leaser,
			Ping:         st.ping,
			Logger:       log,
			Metrics:      met,
			MaxBodyBytes: g.MaxBodyBytes,
			CanCommit:    st.canCommit,
			Tracer:       tracer,
			Fleet:        replicas.proxyFleet(),
		},
		Summary: &summary.Config{},
		API: func(c *api.Config) {
			c.MaxHeavy, c.MaxHeavyPerTenant = g.API.MaxConcurrent, g.API.MaxConcurrentPerTenant
			c.HeavyTimeout = time.Duration(g.API.HeavyTimeout)
		},
	})
	if err != nil {
		return err
	}
	srv, summaries := a.Server, a.Summaries
	// After the server's shutdown (deferred calls run after it).
	defer flushRecords(a, tracer, log)
	if err := summaries.Start(ctx); err != nil {
		// Jobs of conversations not listed start again with their next
		// request: nothing is lost, a summary only comes later.
		log.Warn("summary jobs not re-derived from the store", "error", err.Error())
	}
	defer summaries.Close()
	ret, err := retention.New(retention.Config{
		Store:      hist,
		Leaser:     st.leaser,
		Policies:   func() []retention.Policy { return policies(watcher.Current()) },
		Lock:       srv.Lock,
		Logger:     log,
		Registerer: met.Registry(),
	})
	if err != nil {
		return err
	}
	go ret.Run(ctx)
	ln, err := net.Listen("tcp", g.Listen)
	if err != nil {
		return err
	}
	// The upstream is the defaults' (the implicit tenant's); tenant files
	// may set their own.
	log.Info("recall serving", "listen", ln.Addr().String(),
		"upstream", config.RedactURL(g.Defaults.Upstream.BaseURL), "store", st.name,
		"tenants", len(watcher.Current().Tenants()), "memory_limit_mib", memLimit, "memory_limit_from", memSource,
		"gogc", gcPct, "gogc_from", gcSource,
		"procs", runtime.GOMAXPROCS(0), "procs_adaptive", adaptive, "version", versionString())
	return serveUntilDone(ctx, srv, ln, log)
}

// watchConfig starts watching the configuration (logging "configuration
// loaded") and reloads it on SIGHUP until ctx is done; stopHup stops
// the SIGHUP notifications.
func watchConfig(ctx context.Context, g config.Global, log *slog.Logger) (w *config.Watcher, stopHup func(), err error) {
	watcher, err := config.NewWatcher(g, os.LookupEnv, log)
	if err != nil {
		return nil, nil, err
	}
	go watcher.Run(ctx)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for {
			select {
			case <-hup:
				_ = watcher.Reload() // logged by the watcher, success or not
			case <-ctx.Done():
				return
			}
		}
	}()
	return watcher, func() { signal.Stop(hup) }, nil
}

// openStoreWarm opens the store while it builds the tokenizers (rather
// than in the first request), each on a core of its own.
func openStoreWarm(ctx context.Context, g config.Global, log *slog.Logger) (*tokens.Counter, *openedStore, error) {
	counter := &tokens.Counter{}
	var warm sync.WaitGroup
	for _, enc := range []tokens.Encoding{tokens.O200k, tokens.CL100k} {
		warm.Go(func() { counter.Text(enc, "warm") })
	}
	st, err := openStore(ctx, g, log)
	warm.Wait()
	if err != nil {
		return nil, nil, err
	}
	return counter, st, nil
}

// storeMetrics is the process's metrics, with whether this replica is
// the PostgreSQL store's sole writer when it can tell.
func storeMetrics(st *openedStore) *metrics.Metrics {
	met := metrics.New(nil)
	observe := func(d time.Duration) { met.StoreOp("sync", d) }
	st.syncs.Store(&observe)
	if st.sole != nil {
		met.Registry().MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "recall_store_sole_writer",
			Help: "1 while this replica is the only one on the PostgreSQL store (its window cache is then served without head reads)."},
			func() float64 {
				if st.sole() {
					return 1
				}
				return 0
			}))
	}
	return met
}

// startTracer starts exporting traces when the environment names an
// OTLP endpoint (OTEL_*); the tracer is nil otherwise.
func startTracer(ctx context.Context, log *slog.Logger) (*tracing.Tracer, error) {
	tracer, err := tracing.Start(ctx, os.Getenv, versionString(), func(err error) {
		log.Warn("traces: a batch of spans was not sent", "err", err)
	})
	if err != nil {
		return nil, err
	}
	if tracer != nil {
		log.Info("traces exported over OTLP", "protocol", tracing.Protocol(os.Getenv), "message_content", tracer.CaptureContent())
	}
	return tracer, nil
}

// flushRecords writes, after the server's shutdown, what is still
// queued: the exchange records, what the calibration learned since its
// last write, and the spans (10s for all).
func flushRecords(a *app.App, tracer *tracing.Tracer, log *slog.Logger) {
	fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a.Exchanges.Close(fctx)
	a.Calibration.Close(fctx)
	if err := tracer.Shutdown(fctx); err != nil {
		log.Warn("spans not exported at shutdown", "error", err.Error())
	}
}

// serveUntilDone serves on ln until the server fails or ctx is done,
// then shuts it down gracefully: no new connections, in-flight requests
// and streams finish (up to 30s).
func serveUntilDone(ctx context.Context, srv *proxy.Server, ln net.Listener, log *slog.Logger) error {
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

// openedStore is the store serve runs on, with what the proxy needs of it.
type openedStore struct {
	store     history.Store
	pool      *pgxpool.Pool               // PostgreSQL's (the fleet's table is there); nil for Badger
	leaser    history.Leaser              // nil for Badger (one process)
	ping      func(context.Context) error // nil for Badger
	canCommit func() error                // nil for PostgreSQL
	close     func()
	name      string      // for the log: the directory, or the URL without its password
	sole      func() bool // nil for Badger; PostgreSQL: whether this replica is the only one
	// syncs observes Badger's durable log syncs once the metrics exist
	// (storeMetrics); unset for PostgreSQL.
	syncs atomic.Pointer[func(time.Duration)]
}

// openStore opens PostgreSQL when store_url is set, Badger in data_dir
// otherwise.
func openStore(ctx context.Context, g config.Global, log *slog.Logger) (*openedStore, error) {
	if g.StoreURL != "" {
		// A database not reachable yet (replicas starting with it) is
		// waited for, until a signal; any other error stops here.
		wait := 500 * time.Millisecond
		for {
			octx, cancel := context.WithTimeout(ctx, 30*time.Second)
			s, err := pgstore.Open(octx, g.StoreURL.Reveal(), pgstore.Options{MaxConns: int32(g.StoreMaxConns),
				OnSole: func(sole bool) {
					if sole {
						log.Info("store: the only replica on the database: window cache served without head reads")
					} else {
						log.Info("store: another replica shares the database: window cache checked against each head")
					}
				}})
			cancel()
			if err == nil {
				sole := func() bool { _, ok := s.Sole(); return ok }
				return &openedStore{store: s, pool: s.Pool(), leaser: s, ping: s.Ping, close: s.Close, name: g.StoreURL.String(), sole: sole}, nil
			}
			if !errors.Is(err, history.ErrUnavailable) {
				return nil, err
			}
			log.Warn("store unavailable, retrying", "store", g.StoreURL, "retry_in", wait.String(), "error", err.Error())
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, err
			case <-t.C:
			}
			wait = min(2*wait, 5*time.Second)
		}
	}
	st := &openedStore{name: g.DataDir}
	s, err := badgerstore.Open(g.DataDir, badgerstore.Options{
		NoSync:       g.SyncWrites != nil && !*g.SyncWrites,
		AIOSync:      g.AIOFsync,
		Logger:       log,
		MinFreeBytes: int64(g.MinFreeMB) << 20,
		OnSync: func(d time.Duration) {
			if f := st.syncs.Load(); f != nil {
				(*f)(d)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	st.store, st.canCommit, st.close = s, s.CanCommit, func() { s.Close() }
	return st, nil
}
