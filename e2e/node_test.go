package e2e

import (
	"bytes"
	"context"
	"encoding/json"
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

// nodeHelp says how to get what the suite needs; the suite fails without it
// rather than skip, so that a green run means the Node SDK was exercised.
const nodeHelp = "the e2e suite runs the official OpenAI and Anthropic JS SDKs and needs Node.js 20 or later with npm on PATH: " +
	"install them with your package manager (Debian: apt-get install nodejs npm) or from nodejs.org"

// TestNodeSDK builds recall and the fake upstream, starts the fake and four
// recalls (upstream protocol openai, anthropic, chat and gemini) on free loopback ports
// with fresh data directories, installs the pinned Node packages if
// node_modules lacks one, and runs the Node suite against them: the
// OpenAI SDK's chat completions (by header and by path prefix, streamed
// and not, a tool round trip with parallel calls, the other endpoints)
// and Responses (with the state Recall serves: chaining by
// previous_response_id, stored responses, the Conversations API), the
// Anthropic SDK's Messages, Google's Gen AI SDK on Gemini, the Vercel AI
// SDK over all three, and OpenAI Agents SDK runs with a function tool,
// continued by previousResponseId.
func TestNodeSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("-short runs no Node.js suite")
	}
	node := lookTool(t, "node")
	npm := lookTool(t, "npm")
	checkNodeVersion(t, node)

	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	suite := filepath.Join(root, "e2e", "node")
	ctx, cancel := context.WithTimeout(context.Background(), deadline(t, 10*time.Minute))
	defer cancel()

	bin := t.TempDir()
	recall := goBuild(t, ctx, root, bin, "./cmd/recall")
	fake := goBuild(t, ctx, root, bin, "./bench/fakeupstream")

	fakeAddr := freeAddr(t)
	fakeProc := start(t, ctx, fake, nil, "-listen", fakeAddr, "-control")
	waitHTTP(t, ctx, "http://"+fakeAddr+"/v1/models", fakeProc)

	// Three Recalls over the one fake: the default (upstream protocol
	// openai), one whose upstream speaks Anthropic's Messages, so that
	// every protocol is translated to Messages, and one whose upstream
	// speaks only chat completions, so that Responses are translated to
	// chat while Recall serves their state.
	serve := func(protocol string) (string, *proc) {
		addr := freeAddr(t)
		p := start(t, ctx, recall, []string{
			"RECALL_CONFIG=",
			"RECALL_LISTEN=" + addr,
			"RECALL_UPSTREAM_URL=http://" + fakeAddr + "/v1",
			"RECALL_UPSTREAM_PROTOCOL=" + protocol,
			"RECALL_DATA_DIR=" + filepath.Join(t.TempDir(), "data"),
			"RECALL_STORE_URL=",
		}, "serve")
		waitHTTP(t, ctx, "http://"+addr+"/readyz", p)
		return addr, p
	}
	recallAddr, recallProc := serve("openai")
	anthropicAddr, anthropicProc := serve("anthropic")
	chatAddr, chatProc := serve("chat")
	geminiAddr, geminiProc := serve("gemini")

	if missing := missingPackages(t, suite); len(missing) > 0 {
		out, err := command(ctx, suite, nil, npm, "ci", "--no-audit", "--no-fund").CombinedOutput()
		if err != nil {
			t.Fatalf("npm ci in %s: %v\n%s\n(%s; the npm registry must be reachable)", suite, err, out, nodeHelp)
		}
	}
	cmd := command(ctx, suite, []string{
		"RECALL_BASE_URL=http://" + recallAddr,
		"RECALL_ANTHROPIC_BASE_URL=http://" + anthropicAddr,
		"RECALL_CHAT_BASE_URL=http://" + chatAddr,
		"RECALL_GEMINI_BASE_URL=http://" + geminiAddr,
		"FAKE_UPSTREAM_URL=http://" + fakeAddr,
	}, node, "--test", "--test-concurrency=1", "--test-reporter=spec")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test failed: %v\n%s\nrecall's log:\n%s\nthe anthropic-upstream recall's log:\n%s\nthe chat-upstream recall's log:\n%s\nthe gemini-upstream recall's log:\n%s",
			err, out, recallProc.log.String(), anthropicProc.log.String(), chatProc.log.String(), geminiProc.log.String())
	}
	if testing.Verbose() {
		t.Logf("node --test:\n%s", out)
	}
	// The spec reporter ends with counts: check them rather than trust
	// the exit status alone.
	if !bytes.Contains(out, []byte("ℹ fail 0")) {
		t.Errorf("node --test: got\n%s\nwant \"ℹ fail 0\"", out)
	}
}

// missingPackages returns the dependencies of the suite's package.json
// that node_modules lacks, so that a node_modules installed before a
// package was added is brought up to date.
func missingPackages(t *testing.T, suite string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(suite, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatalf("e2e/node/package.json: %v", err)
	}
	var missing []string
	for name := range pkg.Dependencies {
		if _, err := os.Stat(filepath.Join(suite, "node_modules", name, "package.json")); err != nil {
			missing = append(missing, name)
		}
	}
	return missing
}

// lookTool finds a program on PATH or fails the test saying how to get it.
func lookTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found on PATH: %s", name, nodeHelp)
	}
	return p
}

// checkNodeVersion fails the test on a Node.js older than 20.
func checkNodeVersion(t *testing.T, node string) {
	t.Helper()
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		t.Fatalf("node --version: %v: %s", err, nodeHelp)
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
	major, err := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	if err != nil || major < 20 {
		t.Fatalf("got node %s, want 20 or later: %s", v, nodeHelp)
	}
}

// deadline is how long the suite may take: max, or less if go test's own
// -timeout ends sooner.
func deadline(t *testing.T, max time.Duration) time.Duration {
	if d, ok := t.Deadline(); ok && time.Until(d)-30*time.Second < max {
		return time.Until(d) - 30*time.Second
	}
	return max
}

// goBuild builds pkg (relative to root) into dir and returns the binary.
func goBuild(t *testing.T, ctx context.Context, root, dir, pkg string) string {
	t.Helper()
	out := filepath.Join(dir, filepath.Base(pkg))
	if b, err := command(ctx, root, nil, "go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// command is exec.CommandContext in dir with env added to the process's.
func command(ctx context.Context, dir string, env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// proc is a started binary: its log, and a channel closed when it exits.
type proc struct {
	log    *syncBuffer
	exited chan struct{}
	cmd    *exec.Cmd
}

// start starts a binary that runs until the test ends, then gets SIGTERM
// (and SIGKILL if it is still there after 10s).
func start(t *testing.T, ctx context.Context, bin string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{log: &syncBuffer{}, exited: make(chan struct{})}
	p.cmd = command(ctx, "", env, bin, args...)
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

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitHTTP polls url until it answers 200, failing if p exits first or a
// deadline passes.
func waitHTTP(t *testing.T, ctx context.Context, url string, p *proc) {
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

// syncBuffer is a log sink safe to read while a process writes to it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
