// Package pgtest runs a real, private PostgreSQL server for tests: one
// server per test binary, started on first use, and a fresh database per
// test.
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestX(t *testing.T) {
//		url := pgtest.DB(t) // postgres://postgres@127.0.0.1:PORT/t_N
//		...
//	}
//
// The server comes from the Debian/Ubuntu postgresql package (initdb and
// postgres in /usr/lib/postgresql/*/bin, or wherever $RECALL_PG_BIN or
// pg_config --bindir says). Run as root, the server runs as the postgres
// user (setpriv), since PostgreSQL refuses root. Without a server binary
// the tests fail, saying how to install one: they never skip silently.
package pgtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Install says how to get a server when none is found.
const Install = "pgtest: no PostgreSQL server binary found: install it with `apt-get update && apt-get install -y postgresql` " +
	"(or set RECALL_PG_BIN to the directory holding initdb and postgres)"

// globPattern finds the Debian package's server directories.
var globPattern = "/usr/lib/postgresql/*/bin"

// startTimeout bounds initdb plus the server's start.
const startTimeout = 60 * time.Second

var (
	shared     *Server
	sharedErr  error
	sharedOnce sync.Once
	dbSeq      atomic.Int64
	// inMain is set by Main, the only thing that stops the shared server.
	inMain atomic.Bool
)

// ErrNoMain is DB's failure in a test binary whose TestMain does not
// call Main: nothing would stop the shared server, which would outlive
// the binary (as one did, a server left running by every go test ./...).
var ErrNoMain = errors.New("pgtest: DB's shared server is stopped by pgtest.Main: add func TestMain(m *testing.M) { pgtest.Main(m) } to the package's tests")

// Main runs the tests of m, then stops the shared server if a test
// started it, and exits with the tests' status. Call it from TestMain.
func Main(m *testing.M) {
	inMain.Store(true)
	code := m.Run()
	if shared != nil {
		shared.Stop()
		shared.cleanup()
	}
	os.Exit(code)
}

// DB creates a fresh database on the shared server (started on first
// use) and returns its URL. The database is dropped when t ends.
// Under -short the test is skipped: the fast subset needs no PostgreSQL.
// It fails with ErrNoMain, starting nothing, unless the test binary runs
// under Main.
func DB(t testing.TB) string {
	t.Helper()
	skipShort(t)
	if !inMain.Load() {
		t.Fatal(ErrNoMain)
	}
	sharedOnce.Do(func() { shared, sharedErr = start() })
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared.NewDB(t)
}

// skipShort skips t under -short.
func skipShort(t testing.TB) {
	if testing.Short() {
		t.Skip("pgtest: -short runs no PostgreSQL server")
	}
}

// Server is one private PostgreSQL server.
type Server struct {
	dir  string // data directory, also the socket directory
	bin  string
	port int
	cred *syscall.Credential // nil unless run as root

	mu   sync.Mutex
	cmd  *exec.Cmd     // nil while stopped
	exit chan struct{} // closed when cmd has exited
}

// Start starts a private server for t alone (for tests that stop and
// restart it) and stops it when t ends.
// Under -short the test is skipped, as with DB.
func Start(t testing.TB) *Server {
	t.Helper()
	skipShort(t)
	s, err := start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(); s.cleanup() })
	return s
}

// URL returns the URL of database db on s.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// Port returns the TCP port s listens on.
func (s *Server) Port() int { return s.port }

// NewDB creates a fresh database on s and returns its URL; it is dropped
// when t ends.
func (s *Server) NewDB(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t_%d", dbSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = s.exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	return s.URL(name)
}

func (s *Server) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// binDir finds the directory holding initdb and postgres.
func binDir() (string, error) {
	var dirs []string
	if d := os.Getenv("RECALL_PG_BIN"); d != "" {
		dirs = append(dirs, d)
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dirs = append(dirs, strings.TrimSpace(string(out)))
	}
	found, _ := filepath.Glob(globPattern)
	sort.Slice(found, func(i, j int) bool { return version(found[i]) > version(found[j]) }) // newest first
	dirs = append(dirs, found...)
	for _, d := range dirs {
		if isFile(filepath.Join(d, "initdb")) && isFile(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", errors.New(Install)
}

func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// start initialises a cluster in a temporary directory and starts it.
func start() (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "recall-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			s.cleanup()
			return nil, fmt.Errorf("pgtest: running as root needs the postgres user (from the postgresql package): %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			s.cleanup()
			return nil, err
		}
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	initdb := s.command(ctx, "initdb", "-D", filepath.Join(dir, "data"), "--auth=trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C")
	if out, err := initdb.CombinedOutput(); err != nil {
		s.cleanup()
		return nil, fmt.Errorf("pgtest: initdb: %v\n%s", err, out)
	}
	if err := s.Start(); err != nil {
		s.cleanup()
		return nil, err
	}
	return s, nil
}

// command runs a server binary, as the postgres user when root.
func (s *Server) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	var cmd *exec.Cmd
	if ctx != nil {
		cmd = exec.CommandContext(ctx, filepath.Join(s.bin, name), args...)
	} else {
		cmd = exec.Command(filepath.Join(s.bin, name), args...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Setpgid: true}
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	return cmd
}

// Start starts the server (again, after Stop or Kill, on the same port)
// and returns once it accepts connections.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("pgtest: server already running")
	}
	if s.port != 0 {
		return s.launch() // a restart: clients reconnect to the same URL
	}
	var err error
	for range 5 { // another process may take a free port before postgres does
		if s.port, err = freePort(); err != nil {
			return err
		}
		if err = s.launch(); err == nil {
			return nil
		}
	}
	return err
}

// launch runs postgres and waits for its "ready to accept connections"
// log line (no polling), or its exit, or the start deadline.
func (s *Server) launch() error {
	cmd := s.command(nil, "postgres", "-D", filepath.Join(s.dir, "data"), "-p", strconv.Itoa(s.port), "-k", s.dir,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=off", // tests survive a killed server, not a crashed machine: WAL still reaches the page cache
		"-c", "full_page_writes=off",
		"-c", "shared_buffers=32MB",
		"-c", "max_connections=300",
		"-c", "logging_collector=off")
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = io.Discard, pw
	err = cmd.Start()
	pw.Close() // the server and its backends hold the write end
	if err != nil {
		pr.Close()
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	ready := make(chan struct{})
	var (
		logMu   sync.Mutex
		logTail strings.Builder
	)
	go func() { // drains the log until every server process has exited
		defer pr.Close()
		sc := bufio.NewScanner(pr)
		var once sync.Once
		for sc.Scan() {
			line := sc.Text()
			logMu.Lock()
			if logTail.Len() < 8<<10 {
				logTail.WriteString(line + "\n")
			}
			logMu.Unlock()
			if strings.Contains(line, "ready to accept connections") {
				once.Do(func() { close(ready) })
			}
		}
	}()
	exit := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exit) }()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case <-ready:
		s.cmd, s.exit = cmd, exit
		return nil
	case <-exit:
		logMu.Lock()
		defer logMu.Unlock()
		return fmt.Errorf("pgtest: postgres exited at start on port %d:\n%s", s.port, logTail.String())
	case <-timer.C:
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exit
		return fmt.Errorf("pgtest: postgres did not get ready within %s", startTimeout)
	}
}

// Stop shuts the server down fast (SIGINT: sessions are closed, open
// transactions rolled back) and waits for it to exit.
func (s *Server) Stop() { s.signal(syscall.SIGINT, false) }

// Kill kills the server and every backend with SIGKILL, as a crash
// would, and waits for the postmaster. The next Start recovers from the
// write-ahead log.
func (s *Server) Kill() { s.signal(syscall.SIGKILL, true) }

func (s *Server) signal(sig syscall.Signal, group bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	pid := s.cmd.Process.Pid
	if group {
		pid = -pid // the postmaster leads its process group (Setpgid)
	}
	_ = syscall.Kill(pid, sig)
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case <-s.exit:
	case <-timer.C:
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exit
	}
	s.cmd = nil
}

func (s *Server) cleanup() { _ = os.RemoveAll(s.dir) }

// freePort returns a TCP port free on 127.0.0.1 at the time of the call.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
