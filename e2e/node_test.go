package e2e

import (
	"github.com/recallproxy/recall/internal/proctest"

	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

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
	node := proctest.LookTool(t, "node")
	npm := proctest.LookTool(t, "npm")
	proctest.CheckNodeVersion(t, node)

	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	suite := filepath.Join(root, "e2e", "node")
	ctx, cancel := context.WithTimeout(context.Background(), proctest.Deadline(t, 10*time.Minute))
	defer cancel()

	bin := t.TempDir()
	recall := proctest.GoBuild(t, ctx, root, bin, "./cmd/recall")
	fake := proctest.GoBuild(t, ctx, root, bin, "./bench/fakeupstream")

	fakeAddr := proctest.FreeAddr(t)
	fakeProc := proctest.Start(t, ctx, fake, nil, "-listen", fakeAddr, "-control")
	proctest.WaitHTTP(t, ctx, "http://"+fakeAddr+"/v1/models", fakeProc)

	// Three Recalls over the one fake: the default (upstream protocol
	// openai), one whose upstream speaks Anthropic's Messages, so that
	// every protocol is translated to Messages, and one whose upstream
	// speaks only chat completions, so that Responses are translated to
	// chat while Recall serves their state.
	serve := func(protocol string) (string, *proctest.Proc) {
		addr := proctest.FreeAddr(t)
		p := proctest.Start(t, ctx, recall, []string{
			"RECALL_CONFIG=",
			"RECALL_LISTEN=" + addr,
			"RECALL_UPSTREAM_URL=http://" + fakeAddr + "/v1",
			"RECALL_UPSTREAM_PROTOCOL=" + protocol,
			"RECALL_DATA_DIR=" + filepath.Join(t.TempDir(), "data"),
			"RECALL_STORE_URL=",
		}, "serve")
		proctest.WaitHTTP(t, ctx, "http://"+addr+"/readyz", p)
		return addr, p
	}
	recallAddr, recallProc := serve("openai")
	anthropicAddr, anthropicProc := serve("anthropic")
	chatAddr, chatProc := serve("chat")
	geminiAddr, geminiProc := serve("gemini")

	if missing := missingPackages(t, suite); len(missing) > 0 {
		out, err := proctest.Command(ctx, suite, nil, npm, "ci", "--no-audit", "--no-fund").CombinedOutput()
		if err != nil {
			t.Fatalf("npm ci in %s: %v\n%s\n(%s; the npm registry must be reachable)", suite, err, out, proctest.NodeHelp)
		}
	}
	cmd := proctest.Command(ctx, suite, []string{
		"RECALL_BASE_URL=http://" + recallAddr,
		"RECALL_ANTHROPIC_BASE_URL=http://" + anthropicAddr,
		"RECALL_CHAT_BASE_URL=http://" + chatAddr,
		"RECALL_GEMINI_BASE_URL=http://" + geminiAddr,
		"FAKE_UPSTREAM_URL=http://" + fakeAddr,
	}, node, "--test", "--test-concurrency=1", "--test-reporter=spec")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test failed: %v\n%s\nrecall's log:\n%s\nthe anthropic-upstream recall's log:\n%s\nthe chat-upstream recall's log:\n%s\nthe gemini-upstream recall's log:\n%s",
			err, out, recallProc.Log(), anthropicProc.Log(), chatProc.Log(), geminiProc.Log())
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
