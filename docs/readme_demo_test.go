package docs_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/recallproxy/recall/internal/proctest"
)

// demoHeading is the README section whose first sh block is the demo a
// new user pastes: it builds Recall and the fake upstream, starts both in
// the background, waits for them, and sends two requests. Its closing
// comment lines ("# echo: ...") are what it prints.
const demoHeading = "## Try it without a key"

// The addresses the demo uses, which the test moves to free ports.
const (
	demoRecall   = "127.0.0.1:8080"
	demoUpstream = "127.0.0.1:9801"
)

// TestReadmeDemoPrintsWhatItSays runs the README's keyless demo as a user
// pasting it would, with bash in a directory of its own that sees the
// repository's files (so that ./recall-data and the binaries land
// there), its two addresses moved to free ports, and then stops the two
// servers with the README's own kill %1 %2. It fails unless the demo
// prints each line its closing comments promise: a demo whose requests
// run before the servers answer prints nothing.
func TestReadmeDemoPrintsWhatItSays(t *testing.T) {
	if testing.Short() {
		t.Skip("-short builds no binary")
	}
	for _, tool := range []string{"bash", "curl", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the README's demo needs %s on PATH: %v", tool, err)
		}
	}
	block, want := readmeDemo(t)
	if !strings.Contains(block, demoRecall) || !strings.Contains(block, demoUpstream) {
		t.Fatalf("the demo no longer uses %s and %s; update this test:\n%s", demoRecall, demoUpstream, block)
	}
	// The demo's ports are picked free beforehand: another package's
	// server can take one before the demo binds it, and the demo is then
	// run again on two others.
	var stdout, stderr string
	for attempt := 1; ; attempt++ {
		var collided bool
		var err error
		stdout, stderr, collided, err = runDemo(t, block)
		if collided && attempt < 3 {
			t.Logf("attempt %d: a port was taken before the demo bound it; again on others", attempt)
			continue
		}
		if err != nil {
			t.Errorf("the demo: %v", err)
		}
		break
	}
	for _, line := range want {
		if !strings.Contains(stdout, line+"\n") {
			t.Errorf("the demo did not print %q; stdout:\n%s\nstderr:\n%s", line, stdout, stderr)
		}
	}
}

// runDemo runs block, the README's demo, with its two addresses moved to
// ports free a moment ago, in a directory of its own that sees the
// repository's files, then stops its two servers with the README's own
// kill %1 %2, and returns what it printed. A server that finds its port
// taken stops the run at once (collided: the demo would wait for it in
// vain); a demo that does not finish in 5 minutes fails the test.
func runDemo(t *testing.T, block string) (stdout, stderr string, collided bool, err error) {
	t.Helper()
	recall, upstream := proctest.FreeAddr(t), proctest.FreeAddr(t)
	block = strings.ReplaceAll(block, demoRecall, recall)
	block = strings.ReplaceAll(block, demoUpstream, upstream)

	dir := repoView(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", block+"\nkill %1 %2\nwait\n")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RECALL_LISTEN="+recall, "RECALL_CONFIG=", "RECALL_STORE_URL=",
		"RECALL_DATA_DIR=", "RECALL_UPSTREAM_PROTOCOL=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out, errOut proctest.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for exited := false; !exited; {
		wrote := errOut.Wrote()
		if strings.Contains(errOut.String(), "address already in use") {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			return out.String(), errOut.String(), true, nil
		}
		select {
		case err = <-done:
			exited = true
		case <-wrote:
		}
	}
	// Whatever the demo left running in its process group goes with it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if ctx.Err() != nil {
		t.Fatalf("the demo did not finish in 5 minutes; stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
	return out.String(), errOut.String(), false, err
}

// readmeDemo returns the first sh block under demoHeading in the README
// and the lines its closing comments say it prints ("# " removed).
func readmeDemo(t *testing.T) (block string, prints []string) {
	t.Helper()
	var lines []string
	inBlock := false
	for _, line := range sectionLines(t, filepath.Join("..", "README.md"), demoHeading) {
		if !inBlock {
			inBlock = line == "```sh"
			continue
		}
		if line == "```" {
			break
		}
		lines = append(lines, line)
	}
	n := len(lines)
	for n > 0 && strings.HasPrefix(lines[n-1], "# ") {
		n--
	}
	for _, l := range lines[n:] {
		prints = append(prints, strings.TrimPrefix(l, "# "))
	}
	if n == 0 || len(prints) == 0 {
		t.Fatalf("README.md: no sh block ending in comments of what it prints under %q", demoHeading)
	}
	return strings.Join(lines[:n], "\n"), prints
}

// repoView returns a new directory that holds a symbolic link to each
// entry of the repository's root but the ones the demo writes, so that
// the demo's commands find the module and write beside it, not into the
// repository.
func repoView(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, e := range entries {
		switch e.Name() {
		case ".git", "recall", "fakeupstream", "recall-data":
			continue
		}
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
