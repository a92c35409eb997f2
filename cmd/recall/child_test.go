package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/internal/proctest"
)

// envTestMain makes the test binary act as the recall command, so that the
// crash and shutdown tests can run the real binary as a child process.
const envTestMain = "RECALL_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envTestMain) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	pgtest.Main(m) // the replica tests' PostgreSQL, started on first use
}

// child is `recall serve` running as a child process on a fixed address and
// data directory, restartable on the same ones.
type child struct {
	t        *testing.T
	addr     string // 127.0.0.1:port
	dir      string
	upstream string
	cmd      *exec.Cmd
	exited   chan struct{}
	logs     *os.File
	starts   int
	served   bool     // a start was ready: the address is the child's
	env      []string // extra environment, after (and so over) the defaults
}

// newChild reserves a loopback port for a child serving dir in front of upstream.
func newChild(t *testing.T, dir, upstream string) *child {
	t.Helper()
	addr := proctest.FreeAddr(t)
	logs, err := os.Create(filepath.Join(t.TempDir(), "child.log"))
	if err != nil {
		t.Fatal(err)
	}
	c := &child{t: t, addr: addr, dir: dir, upstream: upstream, logs: logs}
	t.Cleanup(func() {
		if c.cmd != nil && c.running() {
			_ = c.cmd.Process.Kill()
			<-c.exited
		}
		if t.Failed() {
			b, _ := os.ReadFile(logs.Name())
			if len(b) > 8<<10 {
				b = b[len(b)-8<<10:]
			}
			t.Logf("child logs (tail):\n%s", b)
		}
		logs.Close()
	})
	return c
}

func (c *child) url() string { return "http://" + c.addr }

// start starts the child and waits until it answers /readyz.
func (c *child) start() {
	c.t.Helper()
	for retries := 3; ; retries-- {
		err := c.launch()
		if err == nil {
			c.served = true
			return
		}
		// Another package's server took the address between newChild's
		// reservation and this first start: take another.
		if !c.served && retries > 0 && c.logged("address already in use") {
			c.addr = proctest.FreeAddr(c.t)
			continue
		}
		c.t.Fatal(err)
	}
}

// launch starts the child and waits until it is ready (waitReady).
func (c *child) launch() error {
	c.t.Helper()
	c.starts++
	fmt.Fprintf(c.logs, "--- start %d\n", c.starts)
	cmd := exec.Command(os.Args[0], "serve")
	cmd.Env = append(os.Environ(),
		envTestMain+"=1",
		"RECALL_CONFIG=",
		"RECALL_LISTEN="+c.addr,
		"RECALL_DATA_DIR="+c.dir,
		"RECALL_UPSTREAM_URL="+c.upstream,
	)
	cmd.Env = append(cmd.Env, c.env...)
	cmd.Stdout, cmd.Stderr = c.logs, c.logs
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.cmd, c.exited = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(c.exited) }()
	return c.waitReady()
}

// waitReady polls /readyz until it answers 200 and the child has logged
// "recall serving" since it started, the child exits, or a deadline
// passes. The log line is the child's own word: its address was free
// when newChild reserved it, and another package's server may have taken
// it and answered /readyz meanwhile (a test then read the child's log
// before it was written).
func (c *child) waitReady() error {
	c.t.Helper()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := client.Get(c.url() + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 && c.logged(`"msg":"recall serving"`) {
				return nil
			}
		}
		select {
		case <-c.exited:
			return fmt.Errorf("child exited before ready: %v", c.cmd.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("child not ready after 60s: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// logged reports whether the child's log holds text after the harness's
// marker of its latest start.
func (c *child) logged(text string) bool {
	b, err := os.ReadFile(c.logs.Name())
	if err != nil {
		return false
	}
	marker := fmt.Sprintf("--- start %d\n", c.starts)
	i := bytes.LastIndex(b, []byte(marker))
	return i >= 0 && bytes.Contains(b[i:], []byte(text))
}

func (c *child) running() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// kill kills the child with SIGKILL and waits for it to be gone.
func (c *child) kill() {
	c.t.Helper()
	if err := c.cmd.Process.Kill(); err != nil {
		c.t.Fatal(err)
	}
	<-c.exited
}

// wait waits for the child to exit by itself and returns its exit code.
func (c *child) wait(ctx context.Context) int {
	c.t.Helper()
	select {
	case <-c.exited:
		return c.cmd.ProcessState.ExitCode()
	case <-ctx.Done():
		c.t.Fatalf("child did not exit: %v", ctx.Err())
		return -1
	}
}

// TestChildTakesAnotherAddressIfItsIsTaken: a server of another package
// that took the child's reserved address and answers /readyz is not
// taken for the child; the child starts on another address.
func TestChildTakesAnotherAddressIfItsIsTaken(t *testing.T) {
	c := newChild(t, t.TempDir(), "http://"+proctest.FreeAddr(t)+"/v1")
	taken := c.addr
	ln, err := net.Listen("tcp", taken)
	if err != nil {
		t.Fatal(err)
	}
	other := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})}
	go other.Serve(ln)
	defer other.Close()
	c.start()
	defer c.kill()
	if c.addr == taken {
		t.Fatalf("the child kept the taken address %s", taken)
	}
	if !c.logged(`"msg":"recall serving"`) {
		t.Error("the child was taken for ready before it logged \"recall serving\"")
	}
}
