// Package proctest runs the module's binaries and the tools an
// end-to-end suite drives them with (Node.js, npm, real coding agents)
// from tests: it builds a command, starts it on a free loopback port,
// waits until it answers, and stops it when the test ends. The e2e
// suites (e2e, e2e/agentday) share it.
package proctest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// NodeHelp says how to get what the Node.js suites need; they fail
// without it rather than skip, so that a green run means Node.js ran.
const NodeHelp = "the e2e suite runs the official OpenAI and Anthropic JS SDKs and needs Node.js 20 or later with npm on PATH: " +
	"install them with your package manager (Debian: apt-get install nodejs npm) or from nodejs.org"

// LookTool finds a program on PATH or fails the test saying how to get it.
func LookTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found on PATH: %s", name, NodeHelp)
	}
	return p
}

// CheckNodeVersion fails the test on a Node.js older than 20.
func CheckNodeVersion(t *testing.T, node string) {
	t.Helper()
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		t.Fatalf("node --version: %v: %s", err, NodeHelp)
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
	major, err := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	if err != nil || major < 20 {
		t.Fatalf("got node %s, want 20 or later: %s", v, NodeHelp)
	}
}

// Deadline is how long a suite may take: max, or less if go test's own
// -timeout ends sooner.
func Deadline(t *testing.T, max time.Duration) time.Duration {
	if d, ok := t.Deadline(); ok && time.Until(d)-30*time.Second < max {
		return time.Until(d) - 30*time.Second
	}
	return max
}

// GoBuild builds pkg (relative to root) into dir and returns the binary.
func GoBuild(t *testing.T, ctx context.Context, root, dir, pkg string) string {
	t.Helper()
	out := filepath.Join(dir, filepath.Base(pkg))
	if b, err := Command(ctx, root, nil, "go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// Command is exec.CommandContext in dir with env added to the process's.
func Command(ctx context.Context, dir string, env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// Proc is a started binary: its log, and whether it exited.
type Proc struct {
	log    *SyncBuffer
	exited chan struct{}
	cmd    *exec.Cmd
}

// Log is what the process wrote so far to its stdout and stderr.
func (p *Proc) Log() string { return p.log.String() }

// Start starts a binary that runs until the test ends, then gets SIGTERM
// (and SIGKILL if it is still there after 10s).
func Start(t *testing.T, ctx context.Context, bin string, env []string, args ...string) *Proc {
	t.Helper()
	p := &Proc{log: &SyncBuffer{}, exited: make(chan struct{})}
	p.cmd = Command(ctx, "", env, bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("%s %s log:\n%s", filepath.Base(bin), strings.Join(args, " "), p.log.String())
		}
	})
	return p
}

// FreeAddr returns a loopback address that was free a moment ago.
func FreeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// WaitHTTP polls url until it answers 200, failing if p exits first or a
// deadline passes.
func WaitHTTP(t *testing.T, ctx context.Context, url string, p *Proc) {
	t.Helper()
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var last error
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		last = err
		select {
		case <-p.exited:
			t.Fatalf("%s: the server exited before answering: %v\n%s", url, p.cmd.ProcessState, p.log.String())
		case <-ctx.Done():
			t.Fatalf("%s: not ready within the deadline: %v", url, last)
		case <-time.After(20 * time.Millisecond): // poll interval, not a wait for work
		}
	}
}

// SyncBuffer is a log sink safe to read while a process (or a goroutine:
// config's watcher) writes to it.
type SyncBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	wrote chan struct{} // closed at the next Write (Wrote)
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.wrote != nil {
		close(b.wrote)
		b.wrote = nil
	}
	return b.buf.Write(p)
}

// Wrote returns a channel closed at the next Write.
func (b *SyncBuffer) Wrote() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.wrote == nil {
		b.wrote = make(chan struct{})
	}
	return b.wrote
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
