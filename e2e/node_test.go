package e2e

import (
	"github.com/recallproxy/recall/internal/proctest"

	"bytes"
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
	r := proctest.NewNodeRun(t, "e2e/node", 10*time.Minute)
	recall, fake := r.BuildServers(t)
	fakeAddr := proctest.StartFake(t, r.Ctx, fake, "-control")

	// Four Recalls over the one fake: the default (upstream protocol
	// openai), one whose upstream speaks Anthropic's Messages, so that
	// every protocol is translated to Messages, one whose upstream
	// speaks only chat completions, so that Responses are translated to
	// chat while Recall serves their state, and one whose upstream is
	// Gemini.
	serve := func(protocol string) (string, *proctest.Proc) {
		return proctest.ServeRecall(t, r.Ctx, recall, "http://"+fakeAddr+"/v1", protocol)
	}
	recallAddr, recallProc := serve("openai")
	anthropicAddr, anthropicProc := serve("anthropic")
	chatAddr, chatProc := serve("chat")
	geminiAddr, geminiProc := serve("gemini")

	r.CIIfMissing(t)
	cmd := proctest.Command(r.Ctx, r.Suite, []string{
		"RECALL_BASE_URL=http://" + recallAddr,
		"RECALL_ANTHROPIC_BASE_URL=http://" + anthropicAddr,
		"RECALL_CHAT_BASE_URL=http://" + chatAddr,
		"RECALL_GEMINI_BASE_URL=http://" + geminiAddr,
		"FAKE_UPSTREAM_URL=http://" + fakeAddr,
	}, r.Node, "--test", "--test-concurrency=1", "--test-reporter=spec")
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
