package e2e

import (
	"github.com/recallproxy/recall/internal/proctest"

	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/summary"
)

// openresponsesPending are the compliance suite's tests of what Recall
// does not serve yet; TestOpenResponsesCompliance runs them with the
// rest but does not count their results. Each goes when its feature
// lands.
var openresponsesPending = map[string]string{}

// openresponsesResult is one test's result in the suite's --json output.
type openresponsesResult struct {
	ID       string          `json:"id"`
	Status   string          `json:"status"`
	Errors   []string        `json:"errors"`
	Response json.RawMessage `json:"response"`
}

// openresponsesReport is the suite's --json output.
type openresponsesReport struct {
	Summary struct {
		Passed  int `json:"passed"`
		Failed  int `json:"failed"`
		Skipped int `json:"skipped"`
		Total   int `json:"total"`
	} `json:"summary"`
	Results []openresponsesResult `json:"results"`
}

// TestOpenResponsesCompliance runs the Open Responses compliance suite
// (vendored in e2e/openresponses, run by its own CLI under Node.js with
// tsx) against Recall in front of the strict fake upstream: native over
// a Responses upstream and bridged over chat completions and Anthropic
// Messages, each with no conversation named and with one named by the
// base URL's /c/{id} prefix. The fake answers the suite's tool-calling
// request with a scripted function call. The branch tests Recall keeps
// in e2e/openresponses/recall (previous-response-id,
// function-call-roundtrip, file-input) run after the suite, checked by
// the same schema. Every test not pending must pass, and a named
// conversation must hold the suite's turns; each summary is logged per
// configuration.
func TestOpenResponsesCompliance(t *testing.T) {
	if testing.Short() {
		t.Skip("-short runs no Node.js suite")
	}
	r := proctest.NewNodeRun(t, "e2e/openresponses", 10*time.Minute)
	r.CIIfMissing(t)

	// Summaries on, as Recall serves by default: the compact tests are
	// answered from Recall's summary.
	o := threeUpstreams()
	o.Global = func(g *config.Global) { g.Defaults.Summary.Enabled = true }
	o.Summary = func(*summary.Config) {}
	o.Upstream = []upstreamtest.Option{upstreamtest.WithToolCallsForTools()}
	h := e2etest.New(t, o)
	kinds := []struct{ name, key, tenant string }{
		{"openai", "rk-oa", "oa"},
		{"chat", "rk-ch", "ch"},
		{"anthropic", "rk-an", "an"},
	}
	for _, k := range kinds {
		for _, named := range []bool{false, true} {
			name, base, conv := k.name, h.URL+"/v1", "compliance-"+k.name
			if named {
				name += "_conversation"
				base = h.URL + "/c/" + conv + "/v1"
			}
			t.Run(name, func(t *testing.T) {
				h.Up.Reset()
				h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{
					{Name: "get_weather", Arguments: `{"location":"San Francisco, CA"}`},
				}})
				rep := runOpenResponses(t, r, "third_party/bin/compliance-test.ts", base, k.key)
				checkOpenResponses(t, rep)
				// The branch tests after the suite, one call scripted again
				// for function-call-roundtrip's forced call.
				h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{
					{Name: "get_weather", Arguments: `{"location":"San Francisco, CA"}`},
				}})
				branch := runOpenResponses(t, r, "recall/branch-test.ts", base, k.key)
				checkOpenResponses(t, branch)
				for _, id := range openresponsesBranchTests {
					if !branch.ran(id) {
						t.Errorf("branch test %s did not run", id)
					}
				}
				if named && len(h.Stored(k.tenant, conv)) == 0 {
					t.Errorf("conversation %s: got nothing stored, want the suite's turns", conv)
				}
			})
		}
	}
}

// openresponsesBranchTests are the Open Responses tests kept on the
// project's open branches that e2e/openresponses/recall holds, run by
// its recall/branch-test.ts.
var openresponsesBranchTests = []string{"previous-response-id", "function-call-roundtrip", "file-input"}

// ran reports whether the report holds a result of the test id.
func (r openresponsesReport) ran(id string) bool {
	for _, res := range r.Results {
		if res.ID == id {
			return true
		}
	}
	return false
}

// runOpenResponses runs script (the suite's CLI, or Recall's runner of
// the branch tests) against base with key and returns its report.
func runOpenResponses(t *testing.T, r proctest.NodeRun, script, base, key string) openresponsesReport {
	t.Helper()
	// --experimental-websocket: Node 20's WebSocket client (Bun's, which
	// the suite was written for, has one built in), with the request
	// headers the suite sets.
	cmd := proctest.Command(r.Ctx, r.Suite, nil, r.Node, "--experimental-websocket", "--no-warnings", "--import", "tsx",
		script, "--json", "--base-url", base, "--api-key", key)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output() // exits 1 when a test failed: the report says which
	var rep openresponsesReport
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		t.Fatalf("compliance suite: %v, and its output is not a report (%v):\n%s\n%s", err, jerr, out, stderr.String())
	}
	return rep
}

// checkOpenResponses logs the report's summary and fails the test for
// every test not pending that did not pass, or that did not run.
func checkOpenResponses(t *testing.T, rep openresponsesReport) {
	t.Helper()
	s := rep.Summary
	ran := map[string]bool{}
	passed, counted := 0, 0
	pending := map[string]int{}
	for _, r := range rep.Results {
		ran[r.ID] = true
		if _, ok := openresponsesPending[r.ID]; ok {
			pending[r.Status]++
			if testing.Verbose() {
				t.Logf("pending %s: %s: %.300s", r.ID, r.Status, strings.Join(r.Errors, "; "))
			}
			continue
		}
		counted++
		if r.Status == "passed" {
			passed++
		} else {
			t.Errorf("%s: got %s, want passed: %s\nresponse: %.2000s", r.ID, r.Status, strings.Join(r.Errors, "; "), r.Response)
		}
	}
	t.Logf("suite summary: %d passed, %d failed, %d skipped, %d total; not pending: %d of %d passed; pending (not counted): %d failed, %d passed",
		s.Passed, s.Failed, s.Skipped, s.Total, passed, counted, pending["failed"], pending["passed"])
	if counted == 0 {
		t.Errorf("the suite ran no test that is not pending")
	}
	for id := range openresponsesPending {
		if !ran[id] {
			t.Logf("pending test %s is not in the suite any more: remove it from openresponsesPending", id)
		}
	}
}
