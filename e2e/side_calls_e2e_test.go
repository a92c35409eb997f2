package e2e

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/thread"
)

// claudeTitleCall is Claude Code's session-title call as it sends one in
// each process before its first turn: no tools, its own system prompt,
// one user message.
func claudeTitleCall(prompt string) string {
	system := "Generate a concise, sentence-case title (3-7 words) that captures the main topic or goal of this coding session. The title should be clear enough that the user recognizes the session in a list."
	user := "<session>\n" + prompt + "\n</session>\n\nWrite the title in the language the user wrote in, regardless of the language of the examples above."
	return `{"model":"claude-haiku-4-5","max_tokens":512,"stream":true,"system":[{"type":"text","text":` + strconv.Quote(system) +
		`}],"messages":[{"role":"user","content":` + strconv.Quote(user) + `}]}`
}

// TestSideCallsPassThroughUntouched: Claude Code on Recall's defaults,
// two processes on one /c/{id}, each making its title call first and
// then its turn (with its tools). The title calls reach the upstream with
// exactly what the agent sent, nothing of the conversation; they are
// never stored nor injected into a turn; the second process's turn
// carries the first's turn and no title call; each title call on a
// stored conversation is an exchange of kind side that says why.
func TestSideCallsPassThroughUntouched(t *testing.T) {
	h := e2etest.New(t, anthropicTenant())
	post := func(body string) { postAgentTurn(h, anHeaders(), "day", "day", body) }
	sentTexts := func() []string { return texts(h.Up.Last().Messages) }
	for i, prompt := range []string{"The code word is KIWI.", "What is the code word?"} {
		post(claudeTitleCall(prompt))
		if got := sentTexts(); len(got) != 1 || !strings.Contains(got[0], "Write the title") {
			t.Errorf("process %d's title call: the upstream got %q, want the agent's one message alone", i+1, got)
		}
		post(agentRequest(prompt))
		got := strings.Join(sentTexts(), "\n")
		if strings.Contains(got, "Write the title") || strings.Contains(got, "<session>") {
			t.Errorf("process %d's turn carries a title call: %q", i+1, got)
		}
		if i == 1 && !strings.Contains(got, "KIWI") {
			t.Errorf("process 2's turn: the upstream got %q, want the first process's turn", got)
		}
	}
	stored := h.Stored("an", "day")
	if len(stored) != 4 {
		t.Errorf("stored %d messages, want the two turns' 4", len(stored))
	}
	for _, m := range stored {
		if strings.Contains(string(m.Raw), "Write the title") {
			t.Errorf("a title call was stored: %s", m.Raw)
		}
	}
	var kinds []string
	for _, r := range exchangesAs(t, h, "rk-an", "day") {
		kinds = append(kinds, r.Kind+"/"+r.ThreadReason)
	}
	// The first title call came before anything was stored: records
	// belong to a stored conversation, and its record is kept only when
	// the writer's batch comes after the first turn's commit.
	want := []string{"chat/", "side/marker", "chat/"}
	if len(kinds) == 4 {
		want = append(want, "side/marker")
	}
	if !slices.Equal(kinds, want) {
		t.Errorf("exchange records, newest first: got %q, want %q", kinds, want)
	}
}

// TestToolLessCallsOfAnAgentsConversationAreSideCalls: once a
// conversation's turns carry tools (an agent's), a request without tools
// is a side call whatever its prompt (opencode's title call, a
// classifier's question); X-Recall-Thread names either kind outright;
// and a client that never sends tools keeps its memory.
func TestToolLessCallsOfAnAgentsConversationAreSideCalls(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{})
	tools := `,"tools":[{"type":"function","function":{"name":"read","parameters":{"type":"object","properties":{}}}}]`
	chatBody := func(system, user, extra string) string {
		return `{"model":"gpt-4o-mini","messages":[{"role":"system","content":` + strconv.Quote(system) + `},{"role":"user","content":` + strconv.Quote(user) + `}]` + extra + `}`
	}
	post := func(conv, body string, header map[string]string) e2etest.Result {
		t.Helper()
		hs := map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"}
		for k, v := range header {
			hs[k] = v
		}
		r := h.PostHeaders("/c/"+conv+"/v1/chat/completions", hs, body)
		if r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		h.WaitDone(conv)
		return r
	}
	post("oc", chatBody("You are opencode.", "the code word is KIWI", tools), nil)
	post("oc", chatBody("Decide whether the user's message starts a new topic.", "is this a new topic?", ""), nil)
	if got := e2etest.RenderAll(h.Up.Last().Messages); len(got) != 2 {
		t.Errorf("a tool-less call of an agent's conversation: the upstream got %q, want its own two messages", got)
	}
	post("oc", chatBody("You are opencode.", "what is the code word?", tools), map[string]string{thread.Header: "side"})
	if got := e2etest.RenderAll(h.Up.Last().Messages); len(got) != 2 {
		t.Errorf("X-Recall-Thread: side: the upstream got %q, want the request's own two messages", got)
	}
	post("oc", chatBody("You are opencode.", "a tool-less turn", ""), map[string]string{thread.Header: "main"})
	post("oc", chatBody("You are opencode.", "what is the code word?", tools), nil)
	got := strings.Join(e2etest.RenderAll(h.Up.Last().Messages), "\n")
	if !strings.Contains(got, "KIWI") || !strings.Contains(got, "a tool-less turn") || strings.Contains(got, "new topic") {
		t.Errorf("the agent's next turn: the upstream got %q, want its turns (the one named main too) and no side call", got)
	}
	if n := len(h.Stored(h.PassNamespace(key), "oc")); n != 6 {
		t.Errorf("stored %d messages, want the three main turns' 6", n)
	}
	var reasons []string
	for _, r := range exchanges(t, h, "oc") {
		reasons = append(reasons, r.ThreadReason)
	}
	if want := []string{"", thread.ReasonHeader, thread.ReasonHeader, thread.ReasonNoTools, ""}; !slices.Equal(reasons, want) {
		t.Errorf("exchange records' thread reasons, newest first: got %q, want %q", reasons, want)
	}

	// A plain chat client: no tools, ever; its memory stays.
	post("plain", chatBody("Be brief.", "my name is Ada", ""), nil)
	post("plain", chatBody("Be brief.", "what is my name?", ""), nil)
	if got := e2etest.RenderAll(h.Up.Last().Messages); len(got) != 4 {
		t.Errorf("a plain client's second turn: the upstream got %q, want the first turn injected", got)
	}
}

// TestASubagentWorksInAThreadOfItsOwn: Claude Code's Agent tool runs a
// subagent through the same base URL, its calls marked with
// x-claude-code-agent-id. Its first call carries none of the main
// thread's turns; its turns are stored in a thread of the conversation
// (proj~<agent id>), never in the main thread, whose next call carries
// none of them; the API lists the thread, reads it by its id, and a
// delete of the conversation erases the thread too.
func TestASubagentWorksInAThreadOfItsOwn(t *testing.T) {
	h := e2etest.New(t, anthropicTenant())
	main, sub := anHeaders(), anHeaders("x-claude-code-agent-id", "a1b2c3d4e5")
	post := func(headers map[string]string, conv, body string) { postAgentTurn(h, headers, "proj", conv, body) }
	sentAll := func() string { return strings.Join(texts(h.Up.Last().Messages), "\n") }
	const thread = "proj~a1b2c3d4e5"
	post(main, "proj", agentRequest("The code word is KIWI."))
	post(sub, thread, agentRequest("Subagent: list the files under src/."))
	if got := sentAll(); strings.Contains(got, "KIWI") || !strings.Contains(got, "list the files") {
		t.Errorf("the subagent's first call: the upstream got %q, want its own prompt and nothing of the main thread", got)
	}
	post(sub, thread, agentRequest("Subagent: and the tests?"))
	if got := sentAll(); !strings.Contains(got, "list the files") || strings.Contains(got, "KIWI") {
		t.Errorf("the subagent's second call: the upstream got %q, want its own first turn, and nothing of the main thread", got)
	}
	post(main, "proj", agentRequest("What is the code word?"))
	if got := sentAll(); !strings.Contains(got, "KIWI") || strings.Contains(got, "Subagent") {
		t.Errorf("the main thread's next call: the upstream got %q, want its own turn and none of the subagent's", got)
	}
	if n := len(h.Stored("an", "proj")); n != 4 {
		t.Errorf("the main thread holds %d messages, want its two turns' 4", n)
	}
	if n := len(h.Stored("an", thread)); n != 4 {
		t.Errorf("the thread holds %d messages, want the subagent's two turns' 4", n)
	}

	a := h.API("rk-an", "", "GET", "/recall/v1/conversations/proj/threads", "")
	var l struct {
		Data []struct {
			ID    string `json:"id"`
			Turns int    `json:"turns"`
		} `json:"data"`
	}
	a.JSON(t, &l)
	if a.Status != 200 || len(l.Data) != 1 || l.Data[0].ID != thread || l.Data[0].Turns != 2 {
		t.Errorf("threads: got %d %s, want the one thread with its 2 turns", a.Status, a.Body)
	}
	if a := h.API("rk-an", "", "GET", "/recall/v1/conversations/"+thread+"/messages", ""); a.Status != 200 || !strings.Contains(string(a.Body), "list the files") {
		t.Errorf("the thread's messages: got %d %s", a.Status, a.Body)
	}
	if a := h.API("rk-an", "", "DELETE", "/recall/v1/conversations/proj", ""); a.Status != 200 {
		t.Fatalf("delete: %d %s", a.Status, a.Body)
	}
	if n := len(h.Stored("an", thread)); n != 0 {
		t.Errorf("after the conversation's delete its thread holds %d messages, want none", n)
	}
	if a := h.API("rk-an", "", "GET", "/recall/v1/conversations/"+thread, ""); a.Status != 404 {
		t.Errorf("the deleted thread: got %d %s, want 404", a.Status, a.Body)
	}
}

// agentRequestOf is agentRequest with the messages given (JSON).
func agentRequestOf(msgs ...string) string {
	body := agentRequest("x")
	i := strings.LastIndex(body, `,"messages":[`)
	return body[:i] + `,"messages":[` + strings.Join(msgs, ",") + `]}`
}

// TestAnAgentsOwnCompaction: Claude Code compacts its own context when it
// fills: a call that asks the model for a summary of the conversation (a
// side call, tools and all: sent as it came, not stored), then calls that
// restart from that summary. Those are not fed the verbatim turns the
// summary replaced: the stored turns are superseded, the restart's own
// messages stored; the next process gets the restart's turn as memory.
func TestAnAgentsOwnCompaction(t *testing.T) {
	h := e2etest.New(t, anthropicTenant())
	post := func(body string) { postAgentTurn(h, anHeaders(), "compact", "compact", body) }
	sentAll := func() string { return strings.Join(texts(h.Up.Last().Messages), "\n") }
	user := func(s string) string { return `{"role":"user","content":` + strconv.Quote(s) + `}` }
	asst := func(s string) string {
		return `{"role":"assistant","content":[{"type":"text","text":` + strconv.Quote(s) + `}]}`
	}
	post(agentRequestOf(user("old turn one: the code word is KIWI")))
	post(agentRequestOf(user("old turn one: the code word is KIWI"), asst("echo: old turn one: the code word is KIWI"), user("old turn two")))

	compaction := agentRequestOf(user("old turn one: the code word is KIWI"), asst("echo: old turn one: the code word is KIWI"),
		user("old turn two"), asst("echo: old turn two"),
		user("Your task is to create a detailed summary of the conversation so far, paying close attention to the user's explicit requests."))
	post(compaction)
	if got := sentAll(); strings.Count(got, "old turn one") != 2 {
		t.Errorf("the compaction call: the upstream got %q, want the agent's messages as it sent them", got)
	}
	restart := user("This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.\n\nSummary: the code word is KIWI.")
	post(agentRequestOf(restart))
	if got := sentAll(); strings.Contains(got, "old turn") || !strings.Contains(got, "continued from a previous conversation") {
		t.Errorf("the restart from the agent's summary: the upstream got %q, want its own messages and none of the turns the summary replaced", got)
	}
	active := e2etest.Active(h.Stored("an", "compact"))
	if got := strings.Join(active, "\n"); strings.Contains(got, "old turn") || strings.Contains(got, "Your task is to create") || len(active) != 2 {
		t.Errorf("stored after the restart: %q, want the restart's turn alone active", active)
	}
	post(agentRequest("What is the code word?"))
	if got := sentAll(); !strings.Contains(got, "Summary: the code word is KIWI") || strings.Contains(got, "old turn") {
		t.Errorf("the next process: the upstream got %q, want the restart's turn as memory, not the old turns", got)
	}
}
