// Package e2e runs Recall's end-to-end suites, the ones whose subject
// crosses packages:
//
//   - in Go, the whole server as internal/app assembles it (internal/e2etest)
//     driven over HTTP with the OpenAI SDK and the conversation API: the
//     API's routes, summaries, curation, import and erasure end to end;
//   - from outside Go, the official OpenAI Node SDK (e2e/node) against the
//     real cmd/recall binary in front of bench/fakeupstream (TestNodeSDK,
//     which -short skips);
//   - the inspector's web page in headless chromium, driven with chromedp
//     by keyboard and by accessible names (TestInspectorInABrowser, which
//     -short skips).
//
// The Go suites need neither Node.js nor a browser and run under -short;
// the few that also run over PostgreSQL (TestErasureReachesEveryCopy)
// start a private server (internal/pgtest), which -short skips.
package e2e

import (
	"testing"

	"github.com/recallproxy/recall/internal/pgtest"
)

// TestMain stops the PostgreSQL server a test started, if any.
func TestMain(m *testing.M) { pgtest.Main(m) }

// key is the client key of the tests' pass-through conversations.
const key = "sk-client-1"
