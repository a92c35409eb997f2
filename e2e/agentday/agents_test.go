package agentday

import (
	"github.com/recallproxy/recall/internal/proctest"
	"github.com/recallproxy/recall/internal/upstreamtest"

	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// The prompts of the two processes of every agent: the first makes one
// tool round (the fake answers its first call with a scripted tool call),
// the second only talks. Neither contains the other.
const (
	agentPrompt1 = "read notes.txt and remember the word zebra"
	agentPrompt2 = "which word did I ask you to remember"
	agentNotes   = "the secret is 42"
)

// TestAgents runs real coding agents (Claude Code, Codex CLI, opencode,
// GitHub Copilot CLI, Qwen Code, Pi, Kilo, Gemini CLI; the npm packages
// pinned in e2e/agents) offline against Recall in zero-config mode over
// the fake upstream, each twice in one conversation named in the base
// URL's path prefix: two processes, the first with a tool round. Claude Code runs
// against a Recall whose upstream speaks Anthropic Messages (native) and
// against the default openai kind (translated to chat completions);
// Gemini CLI against a Recall whose upstream speaks Gemini. It
// checks that each process exits 0 printing the fake's echo, that the
// second process's upstream request carries the first process's turn,
// that the upstream and the stored conversation hold every prompt, answer
// and tool result once although the agents resend everything with fresh
// ids and moving cache hints, that every side call reached the upstream
// without the conversation's turns and is recorded as an exchange of kind
// side, and for Claude Code native that no upstream request holds more
// than four cache_control blocks and that signed thinking blocks are
// stored and sent back. The agents added after the first three run under
// strace, when it works here, and must contact nothing but Recall. An
// agent whose command is missing after npm install is skipped.
func TestAgents(t *testing.T) {
	s := newAgentSuite(t, 10*time.Minute)
	for _, a := range s.agents {
		t.Run(a.name, func(t *testing.T) {
			runAgent(t, s.ctx, s.f, s.prepare(t, a))
		})
	}
}

// agentSuite is the agents of TestAgents, each with the Recall it runs
// against, all in front of one strict fake upstream.
type agentSuite struct {
	ctx    context.Context
	f      *fakeControl
	agents []agentCase
	binDir string // the agents' commands
	tracer string // strace's path, "" when it cannot run here
}

// newAgentSuite builds Recall and the fake, starts the fake and three
// Recalls on their defaults (upstreams openai, anthropic and gemini),
// installs the agents when any is missing, and returns them, with a
// context that ends after max (or the test's deadline).
func newAgentSuite(t *testing.T, max time.Duration) *agentSuite {
	t.Helper()
	if testing.Short() {
		t.Skip("-short runs no agents")
	}
	r := proctest.NewNodeRun(t, "e2e/agents", max)
	ctx := r.Ctx
	recall, fake := r.BuildServers(t)
	// The agents run on their defaults: their side calls (titles) come
	// through Recall to the one fake, between the calls that take the
	// scripted tool calls.
	fakeAddr := proctest.StartFake(t, ctx, fake, "-control", "-keep", "100000", "-tool-calls-for-tools")

	startRecall := func(protocol, root string) string {
		addr, _ := proctest.ServeRecall(t, ctx, recall, "http://"+fakeAddr+root, protocol)
		return "http://" + addr
	}
	openaiRecall := startRecall("openai", "/v1")
	anthropicRecall := startRecall("anthropic", "/v1")
	// A Gemini upstream's base URL is Google's API root: Recall appends
	// /models/{model}:generateContent.
	geminiRecall := startRecall("gemini", "/v1beta")

	binDir := filepath.Join(r.Suite, "node_modules", ".bin")
	installed := true
	for _, name := range []string{"claude", "codex", "opencode", "copilot", "qwen", "pi", "kilo", "gemini"} {
		if _, err := os.Stat(filepath.Join(binDir, name)); err != nil {
			installed = false
		}
	}
	if !installed {
		// npm install with the lock, not npm ci: opencode's platform
		// binaries are optional dependencies the registry's lock leaves
		// out, which npm ci refuses ("Missing: opencode-darwin-arm64").
		r.Install(t, "install", "--no-save", "--no-audit", "--no-fund")
	}

	f := &fakeControl{url: "http://" + fakeAddr}
	claude := func(base string) agentRun {
		return func(t *testing.T, ctx context.Context, e agentEnv, prompt string) *exec.Cmd {
			cmd := exec.CommandContext(ctx, filepath.Join(binDir, "claude"), "-p", prompt)
			cmd.Env = e.env(
				"ANTHROPIC_BASE_URL="+base+"/c/"+e.conv,
				"ANTHROPIC_API_KEY="+e.key,
				"DISABLE_TELEMETRY=1",
				"DISABLE_AUTOUPDATER=1",
				"DISABLE_ERROR_REPORTING=1",
				"CLAUDE_CODE_MAX_RETRIES=0",
			)
			return cmd
		}
	}
	claudeTool := readNotes("toolu_agents_1", "Read", "file_path")
	// Copilot CLI in BYOK mode, its provider of kind (openai or
	// anthropic) at base (%s: the conversation).
	copilot := func(kind, base, model string) agentRun {
		return func(t *testing.T, ctx context.Context, e agentEnv, prompt string) *exec.Cmd {
			cmd := exec.CommandContext(ctx, filepath.Join(binDir, "copilot"), "-p", prompt, "--allow-all-tools")
			cmd.Env = e.env(
				"COPILOT_PROVIDER_BASE_URL="+fmt.Sprintf(base, e.conv),
				"COPILOT_PROVIDER_TYPE="+kind,
				"COPILOT_PROVIDER_API_KEY="+e.key,
				"COPILOT_MODEL="+model,
				"COPILOT_OFFLINE=true",
				"COPILOT_AUTO_UPDATE=false",
			)
			return cmd
		}
	}
	copilotTool := func(id string) func(agentEnv) string { return readNotes(id, "view", "path") }
	agents := []agentCase{
		{
			name: "claude-code-anthropic", recall: anthropicRecall, route: "/v1/messages", key: "sk-ant-agents",
			keyHeader: "X-Api-Key", callID: "toolu_agents_1", tool: claudeTool, run: claude(anthropicRecall), native: true,
		},
		{
			name: "claude-code-openai", recall: openaiRecall, route: "/v1/chat/completions", key: "sk-ant-agents-oa",
			keyHeader: "X-Api-Key", callID: "toolu_agents_1", tool: claudeTool, run: claude(openaiRecall),
			// See knownCrossProtocolDuplicates.
		},
		{
			name: "codex", recall: openaiRecall, route: "/v1/responses", key: "sk-codex-agents",
			keyHeader: "Authorization", callID: "call_agents_2",
			tool: catNotes("call_agents_2"),
			run:  codexAgent(binDir, openaiRecall+"/c/%s/v1", false),
		},
		{
			// Codex on a provider that supports_websockets: each process
			// opens a WebSocket on /v1/responses and sends its turns as
			// response.create messages, which Recall serves with memory
			// as it serves the streamed POSTs (the fake sees the same).
			name: "codex-websocket", recall: openaiRecall, route: "/v1/responses", key: "sk-codex-ws-agents",
			keyHeader: "Authorization", callID: "call_agents_4",
			tool: catNotes("call_agents_4"),
			run:  codexAgent(binDir, openaiRecall+"/c/%s/v1", true),
			check: func(t *testing.T) {
				// Both processes' turns came over a socket each.
				if n := metricSum(t, openaiRecall, `recall_requests_total{`, `route="responses",status="101"`); n < 2 {
					t.Errorf("Recall upgraded %v WebSockets, want one per process (2)", n)
				}
			},
		},
		{
			name: "opencode", recall: openaiRecall, route: "/v1/chat/completions", key: "sk-opencode-agents",
			keyHeader: "Authorization", callID: "call_agents_3",
			tool: readNotes("call_agents_3", "read", "filePath"),
			run:  opencodeAgent(binDir, "opencode", "OPENCODE_", opencodeConfig, openaiRecall+"/c/%s/v1"),
		},
		{
			name: "copilot", bin: "copilot", recall: openaiRecall, route: "/v1/chat/completions", key: "sk-copilot-agents",
			keyHeader: "Authorization", callID: "call_agents_4", traced: true,
			tool: copilotTool("call_agents_4"),
			run:  copilot("openai", openaiRecall+"/c/%s/v1", "gpt-4o"),
		},
		{
			name: "copilot-anthropic", bin: "copilot", recall: anthropicRecall, route: "/v1/messages", key: "sk-ant-copilot-agents",
			keyHeader: "X-Api-Key", callID: "toolu_agents_8", traced: true,
			tool: copilotTool("toolu_agents_8"),
			run:  copilot("anthropic", anthropicRecall+"/c/%s", "claude-sonnet-4-5"),
		},
		{
			name: "qwen-code", bin: "qwen", recall: openaiRecall, route: "/v1/chat/completions", key: "sk-qwen-agents",
			keyHeader: "Authorization", callID: "call_agents_5", traced: true,
			// Its managed-memory extraction after each answer, and its
			// memory consolidation after some sessions, send tools of
			// their own: side calls by their system prompts.
			side: func(body gjson.Result) bool {
				sys := body.Get("messages.0.content").Str
				return strings.HasPrefix(sys, "You are now acting as the managed memory extraction subagent") ||
					strings.HasPrefix(sys, "You are performing a managed memory dream")
			},
			tool: readNotes("call_agents_5", "read_file", "file_path"),
			run: func(t *testing.T, ctx context.Context, e agentEnv, prompt string) *exec.Cmd {
				writeFile(t, filepath.Join(e.home, ".qwen", "settings.json"), qwenSettings)
				cmd := exec.CommandContext(ctx, filepath.Join(binDir, "qwen"), "--auth-type", "openai", "--approval-mode", "yolo", prompt)
				cmd.Env = e.env(
					"OPENAI_BASE_URL="+openaiRecall+"/c/"+e.conv+"/v1",
					"OPENAI_API_KEY="+e.key,
					"OPENAI_MODEL=gpt-4o",
					"QWEN_CODE_SUPPRESS_YOLO_WARNING=1",
				)
				return cmd
			},
		},
		{
			name: "pi", bin: "pi", recall: openaiRecall, route: "/v1/chat/completions", key: "sk-pi-agents",
			keyHeader: "Authorization", callID: "call_agents_6", traced: true,
			tool: readNotes("call_agents_6", "read", "path"),
			run: func(t *testing.T, ctx context.Context, e agentEnv, prompt string) *exec.Cmd {
				writeFile(t, filepath.Join(e.home, ".pi", "agent", "models.json"), piModels(openaiRecall+"/c/"+e.conv+"/v1", e.key))
				cmd := exec.CommandContext(ctx, filepath.Join(binDir, "pi"), "-p", "--provider", "recall", "--model", "gpt-4o", prompt)
				cmd.Env = e.env("PI_OFFLINE=1")
				return cmd
			},
		},
		{
			name: "kilo", bin: "kilo", recall: openaiRecall, route: "/v1/chat/completions", key: "sk-kilo-agents",
			keyHeader: "Authorization", callID: "call_agents_7", traced: true,
			tool: readNotes("call_agents_7", "read", "filePath"),
			run: opencodeAgent(binDir, "kilo", "KILO_", kiloConfig, openaiRecall+"/c/%s/v1",
				"KILO_DISABLE_SESSION_INGEST=1",
				"KILO_DISABLE_PRESENCE=1",
				"KILO_TELEMETRY_LEVEL=off",
			),
		},
		{
			name: "gemini-cli", bin: "gemini", recall: geminiRecall, key: "sk-gemini-agents",
			route: "/v1beta/models/", keyHeader: "X-Goog-Api-Key", callID: "call_agents_9", traced: true,
			// The router call is told by its prompt, not only by
			// coming without tools in a conversation with them.
			sideReason: "marker",
			// Its model router's call, first in each process, wants
			// JSON: the fake's echo makes it retry with backoff (five
			// calls, a minute and a half per process).
			first: `{"content":"{\"complexity_reasoning\":\"a simple task\",\"complexity_score\":10}"}`,
			// Its model router (a side call on a flash model, before
			// every prompt) sends the prompt as a second user content
			// after its session context, as it came.
			tool: readNotes("call_agents_9", "read_file", "file_path"),
			run: func(t *testing.T, ctx context.Context, e agentEnv, prompt string) *exec.Cmd {
				writeFile(t, filepath.Join(e.home, ".gemini", "settings.json"), geminiSettings)
				cmd := exec.CommandContext(ctx, filepath.Join(binDir, "gemini"), "-p", prompt, "--yolo")
				cmd.Env = e.env(
					"GOOGLE_GEMINI_BASE_URL="+geminiRecall+"/c/"+e.conv,
					"GEMINI_API_KEY="+e.key,
					"GEMINI_CLI_TRUST_WORKSPACE=true",
				)
				return cmd
			},
		},
	}
	return &agentSuite{ctx: ctx, f: f, agents: agents, binDir: binDir, tracer: straceUsable(ctx)}
}

// prepare returns a ready to run in the subtest t: it skips t when a's
// command is missing, and sets strace when a is traced.
func (s *agentSuite) prepare(t *testing.T, a agentCase) agentCase {
	t.Helper()
	if a.bin != "" {
		if _, err := os.Stat(filepath.Join(s.binDir, a.bin)); err != nil {
			t.Skipf("%s is not installed in %s: %v", a.bin, s.binDir, err)
		}
	}
	if a.traced {
		a.strace = s.tracer
	}
	return a
}

// agentRun returns the command of one agent process in e's conversation.
type agentRun func(t *testing.T, ctx context.Context, e agentEnv, prompt string) *exec.Cmd

// agentCase is one agent against one Recall.
type agentCase struct {
	name   string
	recall string // Recall's root URL
	// route is the path the fake upstream receives the agent's calls on;
	// one ending in "/" is a prefix (Gemini's paths name the model).
	route     string
	key       string
	keyHeader string // how the agent sends key: X-Api-Key or Authorization (Bearer)
	callID    string // the id of the scripted tool call
	tool      func(agentEnv) string
	run       agentRun
	// native: Claude Code over an anthropic upstream, where cache_control
	// and thinking blocks reach the upstream.
	native bool
	// check, if set, checks more once both processes ran.
	check func(t *testing.T)
	// bin is the agent's command in node_modules/.bin: the case skips
	// when it is missing.
	bin string
	// side reports that an upstream request offering tools is one of
	// the agent's side calls (one offering none always is).
	side func(body gjson.Result) bool
	// traced: the agent's processes run under strace (when it works
	// here), which proves they contacted nothing but Recall (strace).
	traced bool
	strace string
	// sideReason, if set, is the thread_reason every side call's
	// exchange record must give.
	sideReason string
	// first, if set, is a scripted reply of the fake's queued before
	// each process, for the side call the agent makes first in each.
	first string
	// timed, if set, is told each process's start, how long it ran, and
	// the requests the fake received meanwhile.
	timed func(start time.Time, took time.Duration, reqs []upstreamtest.Recorded)
}

// agentEnv is where an agent's processes run.
type agentEnv struct {
	conv, key, home, work string
}

// env is a clean environment (no credentials or proxies of the machine's)
// with a temporary HOME and vars added.
func (e agentEnv) env(vars ...string) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + e.home,
		"TMPDIR=" + filepath.Join(e.home, "tmp"),
		"LANG=C.UTF-8",
		"NO_COLOR=1",
		"CI=1",
	}
	return append(env, vars...)
}

// xdg is the XDG base directories under the temporary HOME, for the
// agents (opencode, kilo) that keep their state there.
func (e agentEnv) xdg() []string {
	return []string{
		"XDG_CONFIG_HOME=" + filepath.Join(e.home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(e.home, ".local", "share"),
		"XDG_CACHE_HOME=" + filepath.Join(e.home, ".cache"),
		"XDG_STATE_HOME=" + filepath.Join(e.home, ".local", "state"),
	}
}

// runAgent runs the agent's two processes and checks the traffic.
func runAgent(t *testing.T, ctx context.Context, f *fakeControl, a agentCase) {
	home := t.TempDir()
	e := agentEnv{conv: "agents-" + a.name, key: a.key, home: home, work: filepath.Join(home, "work")}
	writeFile(t, filepath.Join(e.work, "notes.txt"), agentNotes+"\n")
	writeFile(t, filepath.Join(home, "tmp", ".keep"), "")

	var dups []string // what the duplicate checks found
	dup := func(format string, args ...any) { dups = append(dups, fmt.Sprintf(format, args...)) }

	// First process: one tool round, then the echo.
	if a.first != "" {
		f.reply(t, a.first)
	}
	f.reply(t, a.tool(e))
	first, side1, early := runProcess(t, ctx, f, a, e, agentPrompt1)
	if len(first) != 2 {
		t.Fatalf("first process: got %d upstream calls on %s, want 2 (the tool call, then the answer)", len(first), a.route)
	}
	second := conversation(first[1].Body)
	if n := second.results(a.callID); n != 1 {
		dup("first process, second call: got %d results of %s upstream, want 1", n, a.callID)
	}
	if n := second.users(agentPrompt1); n != 1 {
		dup("first process, second call: got the prompt %d times upstream, want 1", n)
	}

	// Second process, same conversation: it sends only its own prompt;
	// Recall adds the first process's turn.
	if a.first != "" {
		f.reply(t, a.first)
	}
	calls, side2, _ := runProcess(t, ctx, f, a, e, agentPrompt2)
	if len(calls) != 1 {
		t.Fatalf("second process: got %d upstream calls on %s, want 1", len(calls), a.route)
	}
	up := conversation(calls[0].Body)
	if up.users(agentPrompt1) == 0 || up.answers(agentPrompt1) == 0 || up.results(a.callID) == 0 {
		t.Errorf("second process: the upstream got %s, want the first process's prompt, tool result and answer", up)
	}
	for what, n := range map[string]int{
		"the first prompt": up.users(agentPrompt1), "the first answer": up.answers(agentPrompt1),
		"the tool result": up.results(a.callID), "the second prompt": up.users(agentPrompt2),
	} {
		if n > 1 {
			dup("second process: the upstream got %s %d times, want once", what, n)
		}
	}

	// What Recall stored: each prompt, answer and tool result once.
	stored := f.stored(t, a, e.conv)
	for what, n := range map[string]int{
		"the first prompt": stored.users(agentPrompt1), "the first answer": stored.answers(agentPrompt1),
		"the tool result": stored.results(a.callID), "the second prompt": stored.users(agentPrompt2),
		"the second answer": stored.answers(agentPrompt2),
	} {
		switch {
		case n == 0:
			t.Errorf("stored: %s is missing: %s", what, stored)
		case n > 1:
			dup("stored: %s %d times, want once", what, n)
		}
	}

	// Codex opens each process with the same <environment_context> item:
	// kept once, not a turn of every process.
	if n := stored.users("<environment_context>"); n > 1 {
		dup("stored: the agent's environment preamble %d times, want once", n)
	}
	if n := up.users("<environment_context>"); n > 1 {
		dup("second process: the upstream got the agent's environment preamble %d times, want once", n)
	}

	// Every side call is recorded as an exchange of kind side, and
	// nothing else is; those before the conversation's first turn was
	// answered (Claude Code's first title call, opencode's, sent beside
	// the first turn) may not be: there is no conversation to record them
	// in yet.
	got, reasons := f.sideExchanges(t, a, e.conv)
	if most := side1 + side2; got < most-early || got > most {
		t.Errorf("exchanges: got %d of kind side, want %d (the agent's side calls upstream, %d of them before the first turn was answered)", got, most, early)
	}
	if a.sideReason != "" {
		for _, r := range reasons {
			if r != a.sideReason {
				t.Errorf("exchanges: a side call's thread_reason is %q, want %q", r, a.sideReason)
			}
		}
	}

	var misplaced []string
	if a.native {
		misplaced = checkNative(t, append(first, calls...), stored)
	}
	if a.check != nil {
		a.check(t)
	}
	if len(dups) > 0 {
		t.Errorf("duplicates:\n%s", strings.Join(dups, "\n"))
	}
	if len(misplaced) > 0 {
		t.Errorf("in-place system messages out of place:\n%s", strings.Join(misplaced, "\n"))
	}
}

// checkNative checks Claude Code's native calls: at most four
// cache_control blocks each; thinking blocks stored and sent back signed
// (the fake refuses a bad signature, so an accepted call proves it). It
// returns where an in-place system message is not where the client put it
// (after a user message).
func checkNative(t *testing.T, calls []upstreamtest.Recorded, stored agentMessages) (misplaced []string) {
	t.Helper()
	for i, c := range calls {
		if n := upstreamtest.Breakpoints(gjson.ParseBytes(c.Body)); n > 4 {
			t.Errorf("call %d: got %d cache_control blocks upstream, want at most 4", i, n)
		}
	}
	if n := stored.thinking(); n != 3 {
		t.Errorf("stored: got %d thinking blocks, want 3 (one per answer)", n)
	}
	if n := conversation(calls[len(calls)-1].Body).thinking(); n != 2 {
		t.Errorf("second process: got %d thinking blocks upstream, want the first process's 2", n)
	}
	for i, c := range calls {
		msgs := gjson.GetBytes(c.Body, "messages").Array()
		for j, m := range msgs {
			if m.Get("role").Str == "system" && (j == 0 || msgs[j-1].Get("role").Str != "user") {
				misplaced = append(misplaced, fmt.Sprintf("call %d: system message at %d follows %s", i, j, roleOf(msgs, j-1)))
			}
		}
	}
	return misplaced
}

func roleOf(msgs []gjson.Result, i int) string {
	if i < 0 {
		return "nothing"
	}
	return msgs[i].Get("role").Str
}

// runProcess runs one agent process with prompt and returns the calls the
// fake received on the agent's route meanwhile that are its turns, and how
// many were its side calls (those offering no tools, and those a.side
// names; checked here), and how many of those came before its second turn
// (while its first may not have been answered yet).
// The process must exit 0, print the fake's echo of prompt, and no call
// may have been refused. Under strace, it must have contacted nothing but
// Recall.
func runProcess(t *testing.T, ctx context.Context, f *fakeControl, a agentCase, e agentEnv, prompt string) (calls []upstreamtest.Recorded, sides, early int) {
	t.Helper()
	before := len(f.requests(t))
	pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	p := runAgentCmd(a.run(t, pctx, e, prompt), a, e)
	all := f.requests(t)[before:]
	if a.timed != nil {
		a.timed(p.start, p.took, all)
	}
	var side []upstreamtest.Recorded
	for _, r := range all {
		target := r.Path
		if r.Query != "" {
			target += "?" + r.Query
		}
		t.Logf("%s: %s %s %d bytes%s", a.name, r.Method, target, len(r.Body), rejection(r))
		if r.Rejected != "" {
			t.Errorf("the fake refused %s: %s", r.Path, r.Rejected)
		}
		if !a.onRoute(r.Path) {
			continue
		}
		body := gjson.ParseBytes(r.Body)
		if !body.Get("tools.0").Exists() || a.side != nil && a.side(body) {
			side = append(side, r)
			if len(calls) < 2 {
				early++
			}
		} else {
			calls = append(calls, r)
		}
	}
	t.Logf("%s: process done in %v, %d side calls", a.name, p.took.Round(time.Millisecond), len(side))
	p.check(t, a, prompt, true)
	// A side call (a title: no tools) reaches the upstream as the agent
	// sent it: nothing of an earlier process's turns in it.
	for _, r := range side {
		if prompt != agentPrompt1 && bytes.Contains(r.Body, []byte(agentPrompt1)) {
			t.Errorf("%s: a side call carries the first process's prompt: %.300s", a.name, r.Body)
		}
	}
	return calls, len(side), early
}

// traceNetwork makes cmd run under a.strace, when a is traced, writing
// the calls by which it reaches the network to a file in e.home, and
// returns that file ("" when untraced).
func traceNetwork(cmd *exec.Cmd, a agentCase, e agentEnv) string {
	if a.strace == "" {
		return ""
	}
	trace := filepath.Join(e.home, "strace.out")
	cmd.Args = append([]string{a.strace, "-f", "-qq", "-e", "trace=connect,sendto,sendmsg,sendmmsg", "-o", trace}, cmd.Args...)
	cmd.Path = a.strace
	return trace
}

// checkContacted fails t when trace, if any, shows that the process
// run with prompt contacted more than a's Recall.
func checkContacted(t *testing.T, trace string, a agentCase, prompt string) {
	t.Helper()
	if trace == "" {
		return
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	if elsewhere := contacted(b, a.recall); len(elsewhere) > 0 {
		t.Errorf("%s %q contacted more than Recall (%s):\n%s", a.name, prompt, a.recall, strings.Join(elsewhere, "\n"))
	}
}

// straceUsable returns strace's path when it can trace a process here
// (installed, and ptrace allowed), else "": the agents then run untraced.
func straceUsable(ctx context.Context) string {
	path, err := exec.LookPath("strace")
	if err != nil {
		return ""
	}
	if err := exec.CommandContext(ctx, path, "-f", "-qq", "-e", "trace=connect", "-o", os.DevNull, "true").Run(); err != nil {
		return ""
	}
	return path
}

// inetAddr matches an IPv4 or IPv6 socket address in strace's output.
var inetAddr = regexp.MustCompile(`sin6?_port=htons\((\d+)\)[^}]*?(?:inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)")`)

// contacted returns the lines of an strace log (connect and send calls)
// that address any IP endpoint but recall's (its root URL): a DNS
// query, a telemetry host, an update check.
func contacted(log []byte, recall string) []string {
	host, port, _ := strings.Cut(strings.TrimPrefix(recall, "http://"), ":")
	var out []string
	for _, line := range strings.Split(string(log), "\n") {
		for _, m := range inetAddr.FindAllStringSubmatch(line, -1) {
			addr := m[2] + m[3]
			if m[1] == port && (addr == host || addr == "::ffff:"+host) {
				continue
			}
			out = append(out, line)
			break
		}
	}
	return out
}

// onRoute reports whether a call to path is on the agent's route (under
// it, for a route ending in /).
func (a agentCase) onRoute(path string) bool {
	return path == a.route || strings.HasSuffix(a.route, "/") && strings.HasPrefix(path, a.route)
}

// agentProcess is an agent's process run to its end: what it printed,
// when it started and how long it took, how it ended, and its trace (see
// traceNetwork).
type agentProcess struct {
	stdout, stderr bytes.Buffer
	start          time.Time
	took           time.Duration
	err            error
	trace          string
}

// runAgentCmd runs cmd, a process of a, in e's work directory to its
// end.
func runAgentCmd(cmd *exec.Cmd, a agentCase, e agentEnv) *agentProcess {
	cmd.Dir = e.work
	p := &agentProcess{trace: traceNetwork(cmd, a, e)}
	cmd.Stdout, cmd.Stderr = &p.stdout, &p.stderr
	p.start = time.Now()
	p.err = cmd.Run()
	p.took = time.Since(p.start)
	return p
}

// check fails the test unless the process exited 0, printed the fake's
// echo of prompt last (when echo) and, under strace, contacted nothing
// but Recall.
func (p *agentProcess) check(t *testing.T, a agentCase, prompt string, echo bool) {
	t.Helper()
	if p.err != nil {
		t.Fatalf("%s %q: %v\nstdout:\n%s\nstderr:\n%s", a.name, prompt, p.err, p.stdout.String(), p.stderr.String())
	}
	out := p.stdout.String()
	if i := strings.LastIndex(out, "echo: "); echo && (i < 0 || !strings.Contains(out[i:], prompt)) {
		t.Errorf("%s %q: got stdout\n%s\nwant the fake's echo of the prompt", a.name, prompt, out)
	}
	checkContacted(t, p.trace, a, prompt)
}

// sideExchanges counts the conversation's exchange records of kind side,
// and returns their thread_reason.
func (f *fakeControl) sideExchanges(t *testing.T, a agentCase, conv string) (n int, reasons []string) {
	t.Helper()
	h := apiHeader(a)
	var page struct {
		Data []struct {
			Kind         string `json:"kind"`
			ThreadReason string `json:"thread_reason"`
		} `json:"data"`
		HasMore bool `json:"has_more"`
	}
	getJSON(t, a.recall+"/recall/v1/conversations/"+conv+"/exchanges?limit=100", h, &page)
	if page.HasMore {
		t.Fatalf("exchanges: more than 100")
	}
	for _, d := range page.Data {
		if d.Kind == "side" {
			n++
			reasons = append(reasons, d.ThreadReason)
		}
	}
	return n, reasons
}

// fakeControl reads the fake upstream's control paths (bench/fakeupstream
// -control).
type fakeControl struct{ url string }

// rejection is what a log line says of r's rejection by the fake.
func rejection(r upstreamtest.Recorded) string {
	if r.Rejected == "" {
		return ""
	}
	return " REFUSED: " + r.Rejected
}

func (f *fakeControl) requests(t *testing.T) []upstreamtest.Recorded {
	t.Helper()
	return f.requestsFrom(t, 0)
}

// requestsFrom returns the requests the fake recorded after its first n.
func (f *fakeControl) requestsFrom(t *testing.T, n int) []upstreamtest.Recorded {
	t.Helper()
	var reqs []upstreamtest.Recorded
	getJSON(t, fmt.Sprintf("%s/_fake/requests?from=%d", f.url, n), nil, &reqs)
	return reqs
}

// reply queues a scripted reply (an upstreamtest.Reply as JSON).
func (f *fakeControl) reply(t *testing.T, reply string) {
	t.Helper()
	resp, err := http.Post(f.url+"/_fake/reply", "application/json", strings.NewReader(reply))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("queue reply %s: status %d", reply, resp.StatusCode)
	}
}

// stored reads the conversation's messages from Recall with the agent's key.
func (f *fakeControl) stored(t *testing.T, a agentCase, conv string) agentMessages {
	t.Helper()
	h := apiHeader(a)
	var page struct {
		Data []struct {
			Message json.RawMessage `json:"message"`
		} `json:"data"`
		HasMore bool `json:"has_more"`
	}
	getJSON(t, a.recall+"/recall/v1/conversations/"+conv+"/messages?limit=1000", h, &page)
	if page.HasMore {
		t.Fatalf("stored: more than 1000 messages")
	}
	var msgs agentMessages
	for _, d := range page.Data {
		msgs = append(msgs, flatten(gjson.ParseBytes(d.Message)))
	}
	return msgs
}

func getJSON(t *testing.T, url string, h http.Header, v any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range h {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, b)
	}
}

// agentMessage is a message of any protocol (chat message, Responses
// item, Anthropic message) reduced to what the checks read.
type agentMessage struct {
	role     string   // user, assistant, tool (results only), system, developer, reasoning
	text     string   // its text, tool results' included
	results  []string // the tool call ids it answers
	thinking int      // thinking blocks
}

type agentMessages []agentMessage

// conversation reads a request body's messages (or Responses input).
func conversation(body []byte) agentMessages {
	root := gjson.ParseBytes(body)
	list := root.Get("messages")
	if !list.Exists() {
		list = root.Get("input")
	}
	if !list.Exists() {
		list = root.Get("contents")
	}
	var msgs agentMessages
	for _, m := range list.Array() {
		msgs = append(msgs, flatten(m))
	}
	return msgs
}

// flatten reduces m to an agentMessage.
func flatten(m gjson.Result) agentMessage {
	if parts := m.Get("parts"); parts.IsArray() {
		return flattenGemini(m.Get("role").Str, parts.Array())
	}
	var am agentMessage
	am.role = m.Get("role").Str
	var text []string
	addText := func(c gjson.Result) {
		if c.Type == gjson.String {
			text = append(text, c.Str)
			return
		}
		for _, b := range c.Array() {
			if t := b.Get("text"); t.Exists() {
				text = append(text, t.Str)
			}
		}
	}
	switch m.Get("type").Str {
	case "function_call_output":
		am.role = "tool"
		am.results = append(am.results, m.Get("call_id").Str)
		addText(m.Get("output"))
	case "function_call":
		am.role = "assistant"
	case "reasoning":
		am.role = "reasoning"
	}
	if id := m.Get("tool_call_id"); id.Exists() {
		am.results = append(am.results, id.Str)
	}
	c := m.Get("content")
	addText(c)
	onlyResults := c.IsArray() && len(c.Array()) > 0
	for _, b := range c.Array() {
		switch b.Get("type").Str {
		case "tool_result":
			am.results = append(am.results, b.Get("tool_use_id").Str)
			addText(b.Get("content"))
			continue
		case "thinking":
			am.thinking++
		}
		onlyResults = false
	}
	if am.role == "user" && onlyResults {
		am.role = "tool"
	}
	am.text = strings.Join(text, "\n")
	return am
}

// flattenGemini reduces a Gemini content (role user or model, parts) to
// an agentMessage: a user content of function responses only is a tool
// message, the responses' output its text.
func flattenGemini(role string, parts []gjson.Result) agentMessage {
	am := agentMessage{role: role}
	if role == "model" {
		am.role = "assistant"
	}
	var text []string
	onlyResults := len(parts) > 0
	for _, p := range parts {
		if r := p.Get("functionResponse"); r.Exists() {
			am.results = append(am.results, r.Get("id").Str)
			text = append(text, r.Get("response").Raw)
			continue
		}
		onlyResults = false
		if t := p.Get("text"); t.Type == gjson.String && !p.Get("thought").Bool() {
			text = append(text, t.Str)
		}
	}
	if am.role == "user" && onlyResults {
		am.role = "tool"
	}
	am.text = strings.Join(text, "\n")
	return am
}

// users counts user messages whose text contains s.
func (ms agentMessages) users(s string) int {
	n := 0
	for _, m := range ms {
		if m.role == "user" && strings.Contains(m.text, s) {
			n++
		}
	}
	return n
}

// answers counts assistant messages holding the fake's echo of prompt.
func (ms agentMessages) answers(prompt string) int {
	n := 0
	for _, m := range ms {
		if m.role == "assistant" && strings.HasPrefix(m.text, "echo: ") && strings.Contains(m.text, prompt) {
			n++
		}
	}
	return n
}

// results counts tool results answering id.
func (ms agentMessages) results(id string) int {
	n := 0
	for _, m := range ms {
		for _, r := range m.results {
			if r == id {
				n++
			}
		}
	}
	return n
}

// thinking counts thinking blocks.
func (ms agentMessages) thinking() int {
	n := 0
	for _, m := range ms {
		n += m.thinking
	}
	return n
}

func (ms agentMessages) String() string {
	var b strings.Builder
	for _, m := range ms {
		text := m.text
		if len(text) > 60 {
			text = "…" + text[len(text)-60:]
		}
		fmt.Fprintf(&b, "\n  %s %q results %v thinking %d", m.role, text, m.results, m.thinking)
	}
	return b.String()
}

// toolReply is a scripted reply of the fake: one call of name with args.
// readNotes is the fake's answer that calls the agent's file-reading tool
// name on notes.txt in the agent's work directory, the path in the
// argument param.
func readNotes(id, name, param string) func(agentEnv) string {
	return func(e agentEnv) string {
		return toolReply(id, name, map[string]string{param: filepath.Join(e.work, "notes.txt")})
	}
}

// catNotes is the fake's answer that has Codex run cat notes.txt.
func catNotes(id string) func(agentEnv) string {
	return func(agentEnv) string {
		return toolReply(id, "exec_command", map[string]string{"cmd": "cat notes.txt"})
	}
}

// codexAgent is one Codex process (in binDir) in e's conversation on base
// (%s: the conversation), on codexConfig, with WebSocket on when
// websocket.
func codexAgent(binDir, base string, websocket bool) agentRun {
	config := codexConfig
	if websocket {
		config = strings.Replace(config, "wire_api = \"responses\"\n", "wire_api = \"responses\"\nsupports_websockets = true\n", 1)
	}
	return func(t *testing.T, ctx context.Context, e agentEnv, prompt string) *exec.Cmd {
		codexHome := filepath.Join(e.home, "codex")
		writeFile(t, filepath.Join(codexHome, "config.toml"), config)
		cmd := exec.CommandContext(ctx, filepath.Join(binDir, "codex"), "exec", "--skip-git-repo-check",
			"-c", `model_providers.recall.base_url="`+strings.ReplaceAll(base, "%s", e.conv)+`"`, prompt)
		cmd.Env = e.env("CODEX_HOME="+codexHome, "RECALL_API_KEY="+e.key)
		return cmd
	}
}

// opencodeAgent is one process of opencode or its fork Kilo (bin in
// binDir) in e's conversation on base (%s: the conversation): its run
// command with the prompt's words, its config (config's, at base with
// e's key) in <bin>.json, and its environment variables (prefix
// OPENCODE_ or KILO_) turning off what would reach past Recall, plus
// more.
func opencodeAgent(binDir, bin, prefix string, config func(base, key string) string, base string, more ...string) agentRun {
	return func(t *testing.T, ctx context.Context, e agentEnv, prompt string) *exec.Cmd {
		path := filepath.Join(e.home, bin+".json")
		writeFile(t, path, config(strings.ReplaceAll(base, "%s", e.conv), e.key))
		cmd := exec.CommandContext(ctx, filepath.Join(binDir, bin), append([]string{"run"}, strings.Fields(prompt)...)...)
		vars := append(e.xdg(),
			prefix+"CONFIG="+path,
			prefix+"DISABLE_AUTOUPDATE=1",
			prefix+"DISABLE_MODELS_FETCH=1",
			prefix+"DISABLE_DEFAULT_PLUGINS=1",
			prefix+"DISABLE_LSP_DOWNLOAD=1",
			prefix+"DISABLE_SHARE=1",
		)
		cmd.Env = e.env(append(append(vars, more...), "npm_config_offline=true")...)
		return cmd
	}
}

func toolReply(id, name string, args map[string]string) string {
	a, _ := json.Marshal(args)
	b, _ := json.Marshal(map[string]any{"toolCalls": []map[string]string{{"id": id, "name": name, "arguments": string(a)}}})
	return string(b)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// codexConfig is Codex CLI's config.toml: the recall provider (its
// base_url is set per run with -c), no retries, nothing contacted but the
// base URL. gpt-5.1-codex is a reasoning model: the fake answers it with
// encrypted reasoning items.
const codexConfig = `model_provider = "recall"
model = "gpt-5.1-codex"
check_for_update_on_startup = false
web_search = "disabled"

[model_providers.recall]
name = "Recall"
base_url = "http://127.0.0.1:9/unset"
env_key = "RECALL_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[feedback]
enabled = false

[history]
persistence = "none"

[features]
plugins = false
remote_models = false
apps = false
memories = false
`

// qwenSettings is Qwen Code's ~/.qwen/settings.json: its usage
// statistics (sent to Alibaba Cloud's RUM service), telemetry and update
// check off.
const qwenSettings = `{
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "general": {"enableAutoUpdate": false}
}
`

// geminiSettings is Gemini CLI's ~/.gemini/settings.json: an API key
// (GOOGLE_GEMINI_BASE_URL alone selects its "gateway" auth, which -p
// refuses), usage statistics, telemetry, update checks and IDE
// integration off.
const geminiSettings = `{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
  "ide": {"enabled": false}
}
`

// piModels is Pi's ~/.pi/agent/models.json: one chat-completions
// provider on Recall's conversation URL.
func piModels(base, key string) string {
	b, _ := json.MarshalIndent(map[string]any{
		"providers": map[string]any{
			"recall": map[string]any{
				"baseUrl": base, "api": "openai-completions", "apiKey": key,
				"models": []map[string]string{{"id": "gpt-4o"}},
			},
		},
	}, "", "  ")
	return string(b)
}

// kiloConfig is Kilo's config: opencode's, with only the recall provider
// enabled (Kilo's built-in Kilo Gateway provider otherwise looks up
// api.kilo.ai at start, whatever KILO_DISABLE_MODELS_FETCH says).
func kiloConfig(base, key string) string {
	var c map[string]any
	if err := json.Unmarshal([]byte(opencodeConfig(base, key)), &c); err != nil {
		panic(err)
	}
	c["$schema"] = "https://app.kilo.ai/config.json"
	c["enabled_providers"] = []string{"recall"}
	b, _ := json.MarshalIndent(c, "", "  ")
	return string(b)
}

// opencodeConfig is opencode's config on its defaults: the model on
// Recall's conversation URL, and no small model, so its title calls go
// there too.
func opencodeConfig(base, key string) string {
	provider := func(name, url, model string) map[string]any {
		return map[string]any{
			"npm": "@ai-sdk/openai-compatible", "name": name,
			"options": map[string]string{"baseURL": url, "apiKey": key},
			"models":  map[string]any{model: map[string]string{"name": model}},
		}
	}
	b, _ := json.MarshalIndent(map[string]any{
		"$schema":    "https://opencode.ai/config.json",
		"autoupdate": false,
		"share":      "disabled",
		"model":      "recall/gpt-4o",
		"provider": map[string]any{
			"recall": provider("Recall", base, "gpt-4o"),
		},
	}, "", "  ")
	return string(b)
}

// metricSum sums the series of Recall's /metrics at base that start with
// prefix and hold labels.
func metricSum(t *testing.T, base, prefix, labels string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var sum float64
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, prefix) || !strings.Contains(line, labels) {
			continue
		}
		var v float64
		if _, err := fmt.Sscanf(line[strings.LastIndexByte(line, ' ')+1:], "%g", &v); err == nil {
			sum += v
		}
	}
	return sum
}
