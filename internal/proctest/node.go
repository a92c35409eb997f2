package proctest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// NodeRun is where a test that runs a Node.js suite of the module
// starts: node and npm (Node.js 20 or later, on PATH), the module's
// root, the suite's folder and a context that ends after the test's
// budget, or sooner at its deadline.
type NodeRun struct {
	Ctx       context.Context
	Node, NPM string
	Root      string // the module's root: the folder of go.mod
	Suite     string // the suite's folder, with its package.json
}

// NewNodeRun finds node and npm, checks node's version and returns the
// run of the suite at dir (relative to the module's root, "e2e/node"),
// its context ending after max.
func NewNodeRun(t *testing.T, dir string, max time.Duration) NodeRun {
	t.Helper()
	r := NodeRun{Node: LookTool(t, "node"), NPM: LookTool(t, "npm")}
	CheckNodeVersion(t, r.Node)
	r.Root = moduleRoot(t)
	r.Suite = filepath.Join(r.Root, filepath.FromSlash(dir))
	ctx, cancel := context.WithTimeout(context.Background(), Deadline(t, max))
	t.Cleanup(cancel)
	r.Ctx = ctx
	return r
}

// Install runs npm with args in the suite (ci or install), failing the
// test with what it printed.
func (r NodeRun) Install(t *testing.T, args ...string) {
	t.Helper()
	out, err := Command(r.Ctx, r.Suite, nil, r.NPM, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("npm %s in %s: %v\n%s\n(%s; the npm registry must be reachable)", args[0], r.Suite, err, out, NodeHelp)
	}
}

// CIIfMissing runs npm ci when node_modules lacks a dependency of the
// suite's package.json, so that a node_modules installed before a
// package was added is brought up to date.
func (r NodeRun) CIIfMissing(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.Suite, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatalf("%s: %v", filepath.Join(r.Suite, "package.json"), err)
	}
	for name := range pkg.Dependencies {
		if _, err := os.Stat(filepath.Join(r.Suite, "node_modules", name, "package.json")); err != nil {
			r.Install(t, "ci", "--no-audit", "--no-fund")
			return
		}
	}
}

// BuildServers builds recall and the fake upstream (bench/fakeupstream)
// into a temporary folder and returns the two binaries.
func (r NodeRun) BuildServers(t *testing.T) (recall, fake string) {
	t.Helper()
	bin := t.TempDir()
	return GoBuild(t, r.Ctx, r.Root, bin, "./cmd/recall"), GoBuild(t, r.Ctx, r.Root, bin, "./bench/fakeupstream")
}

// StartFake starts the fake upstream binary on a loopback port of its
// own choosing (port 0, read back from its "fakeupstream: serving" line,
// for the reason ServeRecall gives) with args added to -listen, waits
// until it answers and returns its address.
func StartFake(t *testing.T, ctx context.Context, fake string, args ...string) string {
	t.Helper()
	p := Start(t, ctx, fake, nil, append([]string{"-listen", "127.0.0.1:0"}, args...)...)
	addr := loggedAddr(t, ctx, p, "fakeupstream", func(line string) string {
		rest, ok := strings.CutPrefix(line, "fakeupstream: serving http://")
		if !ok {
			return ""
		}
		return strings.TrimSuffix(rest, "/v1")
	})
	WaitHTTP(t, ctx, "http://"+addr+"/v1/models", p)
	return addr
}

// ServeRecall starts the recall binary's serve on a loopback port of its
// own choosing (port 0, read back from its "recall serving" log line: a
// port picked free beforehand can be taken by another test's process
// before Recall binds it, and whatever answers there then passes for
// Recall), on its defaults but for no configuration file, a fresh data
// directory and no store URL, in front of upstream (a base URL)
// speaking protocol; it waits until /readyz answers and returns the
// address and the process.
func ServeRecall(t *testing.T, ctx context.Context, recall, upstream, protocol string) (string, *Proc) {
	t.Helper()
	p := Start(t, ctx, recall, []string{
		"RECALL_CONFIG=",
		"RECALL_LISTEN=127.0.0.1:0",
		"RECALL_UPSTREAM_URL=" + upstream,
		"RECALL_UPSTREAM_PROTOCOL=" + protocol,
		"RECALL_DATA_DIR=" + filepath.Join(t.TempDir(), "data"),
		"RECALL_STORE_URL=",
	}, "serve")
	addr := ServingAddr(t, ctx, p)
	WaitHTTP(t, ctx, "http://"+addr+"/readyz", p)
	return addr, p
}

// ServingAddr waits for p, a recall serve, to log the address it
// listens on, and returns it; it fails if p exits first or a deadline
// passes.
func ServingAddr(t *testing.T, ctx context.Context, p *Proc) string {
	t.Helper()
	return loggedAddr(t, ctx, p, "recall serve", func(line string) string {
		var l struct{ Msg, Listen string }
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "recall serving" {
			return l.Listen
		}
		return ""
	})
}

// loggedAddr waits for a line of p's log that addr finds an address in
// (a non-empty answer), and returns that address; it fails, naming p as
// what, if p exits first or a deadline passes.
func loggedAddr(t *testing.T, ctx context.Context, p *Proc, what string, addr func(line string) string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		wrote := p.log.Wrote()
		for _, line := range strings.Split(p.log.String(), "\n") {
			if a := addr(line); a != "" {
				return a
			}
		}
		select {
		case <-wrote:
		case <-p.exited:
			t.Fatalf("%s exited before it listened: %v\n%s", what, p.cmd.ProcessState, p.log.String())
		case <-ctx.Done():
			t.Fatalf("%s did not log its address within the deadline:\n%s", what, p.log.String())
		}
	}
}

// moduleRoot is the folder of the go.mod above the test's working
// directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// ModulePath reads the module path from root's go.mod.
func ModulePath(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.TrimSpace(p)
		}
	}
	t.Fatal("go.mod names no module")
	return ""
}
