package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/openai/openai-go/v3"
)

const convBase = "/recall/v1/conversations/"

// say sends one user message on conv as key and waits for its commit.
func (h *harness) say(key, conv, text string) {
	h.t.Helper()
	c := h.client(key, conv)
	if _, err := c.Chat.Completions.New(context.Background(), params(openai.UserMessage(text))); err != nil {
		h.t.Fatal(err)
	}
	h.waitDone(conv)
}

// memorizeBody is a memorize call's body for msgs (raw JSON messages).
func memorizeBody(msgs ...string) string { return `{"messages":[` + strings.Join(msgs, ",") + `]}` }

func userJSON(text string) string { return `{"role":"user","content":` + quote(text) + `}` }
func asstJSON(text string) string { return `{"role":"assistant","content":` + quote(text) + `}` }
func callJSON(id string) string {
	return `{"role":"assistant","content":null,"tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"f","arguments":"{}"}}]}`
}
func resultJSON(id, text string) string {
	return `{"role":"tool","tool_call_id":"` + id + `","content":` + quote(text) + `}`
}
func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// convDetail is the part of a conversation answer the tests read.
type convDetail struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Turns    int    `json:"turns"`
	Messages int    `json:"messages"`
	Tokens   int    `json:"tokens"`
	Capacity struct {
		TurnsStored    int `json:"turns_stored"`
		MessagesStored int `json:"messages_stored"`
		TokensStored   int `json:"tokens_stored"`
		BudgetTokens   int `json:"budget_tokens"`
	} `json:"capacity"`
}

type msgList struct {
	Data []struct {
		Seq       uint64          `json:"seq"`
		Turn      uint32          `json:"turn"`
		Episode   uint32          `json:"episode"`
		CreatedAt int64           `json:"created_at"`
		Tokens    int             `json:"tokens"`
		Flags     []string        `json:"flags"`
		Message   json.RawMessage `json:"message"`
	} `json:"data"`
	FirstID *uint64 `json:"first_id"`
	LastID  *uint64 `json:"last_id"`
	HasMore bool    `json:"has_more"`
}

func (l msgList) rendered() []string {
	out := make([]string, len(l.Data))
	for i, m := range l.Data {
		out[i] = render(m.Message)
		if len(m.Flags) > 0 {
			out[i] += " [" + strings.Join(m.Flags, ",") + "]"
		}
	}
	return out
}

func TestAPITenantsSeeOnlyTheirOwnConversations(t *testing.T) {
	h := newHarness(t, twoTenantsAdmin)
	h.say("rk-acme-1", "shared-id", "acme secret plan")
	if a := h.api("rk-acme-1", "", "GET", convBase+"shared-id", ""); a.status != 200 {
		t.Fatalf("acme reads its conversation: %d %s", a.status, a.body)
	}
	// globex: the same id is unknown, for every route, and says so the
	// same way a never-used id does.
	for _, tc := range []struct{ method, path, body string }{
		{"GET", convBase + "shared-id", ""},
		{"GET", convBase + "shared-id/messages", ""},
		{"GET", convBase + "shared-id/search?q=secret", ""},
		{"GET", convBase + "shared-id/export", ""},
		{"GET", convBase + "shared-id/context", ""},
		{"POST", convBase + "shared-id/forget", `{"instruction":"oldest","mode":"hard"}`},
		{"DELETE", convBase + "shared-id", ""},
	} {
		a := h.api("rk-globex-1", "", tc.method, tc.path, tc.body)
		never := h.api("rk-globex-1", "", tc.method, strings.Replace(tc.path, "shared-id", "never-used", 1), tc.body)
		if tc.path == convBase+"shared-id/context" && a.status == 501 {
			continue // not wired in this server: it answers 501 for any id
		}
		if a.status != 404 || a.errCode() != "conversation_not_found" || !bytes.Equal(a.body, never.body) {
			t.Errorf("globex %s %s: %d %s, want the 404 of an unknown id (%s)", tc.method, tc.path, a.status, a.body, never.body)
		}
	}
	var list struct {
		Data []struct{ ID string } `json:"data"`
	}
	h.api("rk-globex-1", "", "GET", "/recall/v1/conversations", "").json(t, &list)
	if len(list.Data) != 0 {
		t.Errorf("globex lists %v", list.Data)
	}
	var found struct {
		Data []any `json:"data"`
	}
	h.api("rk-globex-1", "", "GET", "/recall/v1/search?q=secret", "").json(t, &found)
	if len(found.Data) != 0 {
		t.Errorf("globex finds %v", found.Data)
	}
	// An import by globex lands in globex's namespace: acme's is untouched.
	line := `{"object":"conversation.message","seq":1,"turn":1,"episode":1,"created_at":1767225600,"tokens":3,"flags":[],"message":{"role":"user","content":"globex"}}`
	if a := h.api("rk-globex-1", "", "POST", convBase+"shared-id/import", line+"\n", "application/x-ndjson"); a.status != 201 {
		t.Fatalf("globex import: %d %s", a.status, a.body)
	}
	var acme msgList
	h.api("rk-acme-1", "", "GET", convBase+"shared-id/messages", "").json(t, &acme)
	if got := acme.rendered(); !equalStrings(got, []string{"user:acme secret plan", "assistant:echo: acme secret plan"}) {
		t.Errorf("acme's messages after globex's import: %q", got)
	}
	// The admin key acts on the tenant it names, and must name one.
	if a := h.api("rk-admin", "acme", "GET", convBase+"shared-id/messages", ""); a.status != 200 || !bytes.Contains(a.body, []byte("acme secret plan")) {
		t.Errorf("admin on acme: %d %s", a.status, a.body)
	}
	if a := h.api("rk-admin", "", "GET", "/recall/v1/conversations", ""); a.status != 400 || a.errCode() != "missing_tenant" {
		t.Errorf("admin without a tenant: %d %s", a.status, a.body)
	}
	if a := h.api("rk-admin", "initech", "GET", "/recall/v1/conversations", ""); a.status != 400 || a.errCode() != "unknown_tenant" {
		t.Errorf("admin on an unknown tenant: %d %s", a.status, a.body)
	}
	// A key of one tenant cannot borrow the admin's header.
	if a := h.api("rk-globex-1", "acme", "GET", convBase+"shared-id/messages", ""); a.status != 200 || bytes.Contains(a.body, []byte("acme")) {
		t.Errorf("globex naming acme: %d %s", a.status, a.body)
	}
	for _, k := range []string{"", "rk-nobody"} {
		if a := h.api(k, "", "GET", "/recall/v1/conversations", ""); a.status != 401 {
			t.Errorf("key %q: %d %s", k, a.status, a.body)
		}
	}
}

func init() {
	twoTenantsAdmin = twoTenants
	twoTenantsAdmin.global = func(g *configGlobal) { g.AdminKey = "rk-admin" }
}

var twoTenantsAdmin harnessOptions

func TestAPIPassThroughKeysSeeOnlyTheirNamespace(t *testing.T) {
	h := newHarness(t, harnessOptions{global: func(g *configGlobal) { g.AdminKey = "rk-admin" }})
	for _, k := range []string{"sk-one", "sk-two"} {
		h.say(k, "p-1", "from "+k)
	}
	for _, k := range []string{"sk-one", "sk-two"} {
		var l msgList
		h.api(k, "", "GET", convBase+"p-1/messages", "").json(t, &l)
		if got := l.rendered(); len(got) != 2 || got[0] != "user:from "+k {
			t.Errorf("%s sees %q", k, got)
		}
	}
	if a := h.api("sk-three", "", "GET", convBase+"p-1", ""); a.status != 404 {
		t.Errorf("a third key reads p-1: %d %s", a.status, a.body)
	}
	// The admin key reads a credential's namespace by name, and never
	// becomes a pass-through credential itself.
	if a := h.api("rk-admin", h.passNamespace("sk-one"), "GET", convBase+"p-1/messages", ""); a.status != 200 || !bytes.Contains(a.body, []byte("from sk-one")) {
		t.Errorf("admin on sk-one's namespace: %d %s", a.status, a.body)
	}
	if a := h.api("rk-admin", "default", "GET", convBase+"p-1", ""); a.status != 404 {
		t.Errorf("admin on the bare tenant: %d %s", a.status, a.body)
	}
	if a := h.api("rk-admin", "", "GET", convBase+"p-1", ""); a.status != 400 {
		t.Errorf("admin without a tenant: %d %s", a.status, a.body)
	}
	if a := h.api("rk-admin", "default.pt.xyz", "GET", convBase+"p-1", ""); a.status != 400 {
		t.Errorf("admin on a malformed namespace: %d %s", a.status, a.body)
	}
}

func TestAPIMemorizeThenChatSeesIt(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	a := h.api(key, "", "POST", convBase+"m-1/messages", memorizeBody(userJSON("my name is Ada"), asstJSON("noted, Ada")))
	if a.status != 201 {
		t.Fatalf("memorize: %d %s", a.status, a.body)
	}
	var d convDetail
	a.json(t, &d)
	if d.Turns != 1 || d.Messages != 2 || d.Capacity.TokensStored == 0 || d.Capacity.BudgetTokens != 16000 {
		t.Errorf("after memorize: %+v", d)
	}
	h.say(key, "m-1", "who am I?")
	want := []string{"user:my name is Ada", "assistant:noted, Ada", "user:who am I?"}
	if got := renderAll(h.up.Last().Messages); !equalStrings(got, want) {
		t.Errorf("upstream got %q, want %q", got, want)
	}
	// A second memorize appends (200); the tool pairing is checked
	// against the stored history.
	if a := h.api(key, "", "POST", convBase+"m-1/messages", memorizeBody(callJSON("c1"))); a.status != 200 {
		t.Fatalf("memorize a call: %d %s", a.status, a.body)
	}
	if a := h.api(key, "", "POST", convBase+"m-1/messages", memorizeBody(resultJSON("c1", "42"))); a.status != 200 {
		t.Errorf("memorize its result: %d %s", a.status, a.body)
	}
}

func TestAPIMemorizeRefusesBadInputAndStoresNothing(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, tc := range []struct{ name, body, param string }{
		{"not json", `{"messages":[`, ""},
		{"no messages", `{}`, "messages"},
		{"empty", `{"messages":[]}`, "messages"},
		{"bad role", `{"messages":[{"role":"wizard","content":"x"}]}`, "messages[0].role"},
		{"instructions", memorizeBody(`{"role":"system","content":"x"}`), "messages[0].role"},
		{"orphan result", memorizeBody(userJSON("hi"), resultJSON("nope", "x")), "messages.[1].role"},
		{"too deep", `{"messages":[` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `]}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := h.api(key, "", "POST", convBase+"bad-1/messages", tc.body)
			var e struct {
				Error struct {
					Param *string `json:"param"`
				} `json:"error"`
			}
			a.json(t, &e)
			if a.status != 400 || (tc.param != "" && (e.Error.Param == nil || *e.Error.Param != tc.param)) {
				t.Errorf("got %d %s, want 400 naming %q", a.status, a.body, tc.param)
			}
		})
	}
	if a := h.api(key, "", "GET", convBase+"bad-1", ""); a.status != 404 {
		t.Errorf("after refused input the conversation exists: %d %s", a.status, a.body)
	}
}

func TestAPIMessagesPagingOrderAndInclude(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	var msgs []string
	for i := 1; i <= 5; i++ {
		msgs = append(msgs, userJSON(fmt.Sprint("u", i)), asstJSON(fmt.Sprint("a", i)))
	}
	if a := h.api(key, "", "POST", convBase+"pg-1/messages", memorizeBody(msgs...)); a.status != 201 {
		t.Fatalf("memorize: %d %s", a.status, a.body)
	}
	var page msgList
	h.api(key, "", "GET", convBase+"pg-1/messages?limit=4", "").json(t, &page)
	if got := page.rendered(); !page.HasMore || !equalStrings(got, []string{"user:u1", "assistant:a1", "user:u2", "assistant:a2"}) || *page.LastID != 4 {
		t.Errorf("first page %q more=%v", got, page.HasMore)
	}
	h.api(key, "", "GET", convBase+"pg-1/messages?limit=4&after=8", "").json(t, &page)
	if got := page.rendered(); page.HasMore || !equalStrings(got, []string{"user:u5", "assistant:a5"}) {
		t.Errorf("last page %q more=%v", got, page.HasMore)
	}
	h.api(key, "", "GET", convBase+"pg-1/messages?limit=3&order=desc", "").json(t, &page)
	if got := page.rendered(); !page.HasMore || !equalStrings(got, []string{"assistant:a5", "user:u5", "assistant:a4"}) {
		t.Errorf("newest first %q", got)
	}
	h.api(key, "", "GET", convBase+fmt.Sprintf("pg-1/messages?limit=3&order=desc&after=%d", *page.LastID), "").json(t, &page)
	if got := page.rendered(); !equalStrings(got, []string{"user:u4", "assistant:a3", "user:u3"}) {
		t.Errorf("second page newest first %q", got)
	}
	// Forget a turn softly: gone from the default listing, listed with
	// include=forgotten, flagged.
	if a := h.api(key, "", "POST", convBase+"pg-1/forget", `{"instruction":"before:turn_2"}`); a.status != 200 {
		t.Fatalf("forget: %d %s", a.status, a.body)
	}
	h.api(key, "", "GET", convBase+"pg-1/messages?limit=2", "").json(t, &page)
	if got := page.rendered(); !equalStrings(got, []string{"user:u2", "assistant:a2"}) {
		t.Errorf("after forget %q", got)
	}
	h.api(key, "", "GET", convBase+"pg-1/messages?limit=2&include=forgotten", "").json(t, &page)
	if got := page.rendered(); !equalStrings(got, []string{"user:u1 [forgotten]", "assistant:a1 [forgotten]"}) {
		t.Errorf("with include=forgotten %q", got)
	}
	for _, q := range []string{"limit=0", "limit=1001", "order=up", "include=erased", "after=x"} {
		if a := h.api(key, "", "GET", convBase+"pg-1/messages?"+q, ""); a.status != 400 {
			t.Errorf("%s: %d %s", q, a.status, a.body)
		}
	}
}

func TestAPIForgetKeepsToolPairingValid(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	seed := memorizeBody(userJSON("weather?"), callJSON("c1"), resultJSON("c1", "sunny"), asstJSON("it is sunny"),
		userJSON("and tomorrow?"), asstJSON("rain"))
	for _, mode := range []string{"soft", "hard"} {
		conv := "tools-" + mode
		if a := h.api(key, "", "POST", convBase+conv+"/messages", seed); a.status != 201 {
			t.Fatalf("seed: %d %s", a.status, a.body)
		}
		// position:3 is the tool result: its call goes with it.
		a := h.api(key, "", "POST", convBase+conv+"/forget", `{"instruction":"position:3","mode":"`+mode+`"}`)
		var f struct {
			Forgotten    []int      `json:"forgotten"`
			Conversation convDetail `json:"conversation"`
		}
		a.json(t, &f)
		if a.status != 200 || !slices.Equal(f.Forgotten, []int{2, 3}) || f.Conversation.Messages != 4 {
			t.Fatalf("%s forget: %d %s", mode, a.status, a.body)
		}
		h.say(key, conv, "thanks")
		last := h.up.Last()
		if last.Rejected != nil {
			t.Fatalf("%s: upstream rejected the context: %v", mode, last.Rejected)
		}
		want := []string{"user:weather?", "assistant:it is sunny", "user:and tomorrow?", "assistant:rain", "user:thanks"}
		if got := renderAll(last.Messages); !equalStrings(got, want) {
			t.Errorf("%s: upstream got %q, want %q", mode, got, want)
		}
		var l msgList
		h.api(key, "", "GET", convBase+conv+"/messages?include=forgotten", "").json(t, &l)
		kept := 6 + 2 // seed plus the exchange
		if mode == "hard" {
			kept -= 2 // erased: listed nowhere
		}
		if len(l.Data) != kept {
			t.Errorf("%s: %d messages listed with include=forgotten, want %d: %q", mode, len(l.Data), kept, l.rendered())
		}
	}
	for _, body := range []string{`{"instruction":"newest"}`, `{"instruction":"oldest","mode":"gentle"}`, `{"instr":"oldest"}`, `[`} {
		if a := h.api(key, "", "POST", convBase+"tools-soft/forget", body); a.status != 400 {
			t.Errorf("%s: %d %s", body, a.status, a.body)
		}
	}
}

// keysHolding returns the store's keys whose key or value holds s.
func keysHolding(t *testing.T, db *badger.DB, s string) []string {
	t.Helper()
	var out []string
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			v, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			if bytes.Contains(item.Key(), []byte(s)) || bytes.Contains(v, []byte(s)) {
				out = append(out, fmt.Sprintf("%q", item.Key()))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAPIDeleteLeavesNoKey(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	const conv = "erase-me-7f3a"
	if a := h.api(key, "", "POST", convBase+conv+"/messages", memorizeBody(userJSON("zebra-unique-word"), asstJSON("ok"))); a.status != 201 {
		t.Fatalf("memorize: %d %s", a.status, a.body)
	}
	h.say(key, conv, "more")
	if len(keysHolding(t, h.store.DB(), conv)) == 0 {
		t.Fatal("nothing stored to delete: the check below would prove nothing")
	}
	a := h.api(key, "", "DELETE", convBase+conv, "")
	if a.status != 200 || !bytes.Contains(a.body, []byte(`"deleted":true`)) {
		t.Fatalf("delete: %d %s", a.status, a.body)
	}
	if left := keysHolding(t, h.store.DB(), conv); len(left) > 0 {
		t.Errorf("keys left after delete: %v", left)
	}
	if left := keysHolding(t, h.store.DB(), "zebra-unique-word"); len(left) > 0 {
		t.Errorf("content left after delete: %v", left)
	}
	if a := h.api(key, "", "GET", convBase+conv, ""); a.status != 404 {
		t.Errorf("after delete: %d %s", a.status, a.body)
	}
	if a := h.api(key, "", "DELETE", convBase+conv, ""); a.status != 404 {
		t.Errorf("second delete: %d %s", a.status, a.body)
	}
	// The id starts fresh.
	if a := h.api(key, "", "POST", convBase+conv+"/messages", memorizeBody(userJSON("again"))); a.status != 201 {
		t.Errorf("memorize after delete: %d %s", a.status, a.body)
	}
	var l msgList
	h.api(key, "", "GET", convBase+conv+"/messages", "").json(t, &l)
	if len(l.Data) != 1 || l.Data[0].Seq != 1 {
		t.Errorf("after delete and memorize: %q", l.rendered())
	}
}

func TestAPIExportDeleteImportGivesTheSameContext(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	// History with a forgotten message and tool calls.
	for _, text := range []string{"one", "two", "three"} {
		h.say(key, "x-1", text)
	}
	if a := h.api(key, "", "POST", convBase+"x-1/messages", memorizeBody(userJSON("weather?"), callJSON("c9"), resultJSON("c9", "hail"), asstJSON("hail"))); a.status != 200 {
		t.Fatalf("memorize: %d %s", a.status, a.body)
	}
	if a := h.api(key, "", "POST", convBase+"x-1/forget", `{"instruction":"position:3"}`); a.status != 200 {
		t.Fatalf("forget: %d %s", a.status, a.body)
	}
	before := h.api(key, "", "GET", convBase+"x-1/messages?include=forgotten,superseded&limit=1000", "")
	exp := h.api(key, "", "GET", convBase+"x-1/export", "")
	if exp.status != 200 || exp.header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("export: %d %s", exp.status, exp.header)
	}
	if n := bytes.Count(exp.body, []byte("\n")); n != 1+10 {
		t.Errorf("export has %d lines, want a header and 10 messages:\n%s", n, exp.body)
	}
	if a := h.api(key, "", "POST", convBase+"x-1/import", string(exp.body), "application/x-ndjson"); a.status != 409 || a.errCode() != "conversation_not_empty" {
		t.Errorf("import over a conversation: %d %s", a.status, a.body)
	}
	if a := h.api(key, "", "POST", convBase+"x-copy/import", string(exp.body), "application/json"); a.status != 415 {
		t.Errorf("import as application/json: %d %s", a.status, a.body)
	}
	if a := h.api(key, "", "POST", convBase+"x-copy/import", string(exp.body), "application/x-ndjson"); a.status != 201 {
		t.Fatalf("import into a copy: %d %s", a.status, a.body)
	}
	if a := h.api(key, "", "DELETE", convBase+"x-1", ""); a.status != 200 {
		t.Fatalf("delete: %d %s", a.status, a.body)
	}
	if a := h.api(key, "", "POST", convBase+"x-1/import", string(exp.body), "application/x-ndjson"); a.status != 201 {
		t.Fatalf("import back: %d %s", a.status, a.body)
	}
	after := h.api(key, "", "GET", convBase+"x-1/messages?include=forgotten,superseded&limit=1000", "")
	// Import counts every message's tokens itself, where the chat path
	// took an answer's from the upstream's usage: all else is the same.
	var lb, la msgList
	before.json(t, &lb)
	after.json(t, &la)
	for i := range la.Data {
		if m := la.Data[i]; m.Tokens != h.srvCount(m.Message) {
			t.Errorf("imported seq %d: %d tokens, want %d as Recall counts it", m.Seq, m.Tokens, h.srvCount(m.Message))
		}
		la.Data[i].Tokens = 0
	}
	for i := range lb.Data {
		lb.Data[i].Tokens = 0
	}
	if b, a := mustJSON(t, lb), mustJSON(t, la); b != a {
		t.Errorf("messages differ after export, delete, import:\nbefore %s\nafter  %s", b, a)
	}
	// The next request sends the same context from the restored
	// conversation and from the copy.
	var sent [][]string
	for _, conv := range []string{"x-1", "x-copy"} {
		h.say(key, conv, "next")
		sent = append(sent, renderAll(h.up.Last().Messages))
	}
	// position:3 forgot "user:two".
	want := []string{"user:one", "assistant:echo: one", "assistant:echo: two", "user:three", "assistant:echo: three",
		"user:weather?", "assistant: calls=c9", "tool(c9):hail", "assistant:hail", "user:next"}
	if !equalStrings(sent[0], want) || !equalStrings(sent[1], want) {
		t.Errorf("contexts after import:\n%q\n%q\nwant %q", sent[0], sent[1], want)
	}
	for _, tc := range []struct{ name, body string }{
		{"empty", ""},
		{"not json", "{\n"},
		{"descending", `{"object":"conversation.message","seq":2,"turn":1,"episode":1,"tokens":1,"message":{"role":"user","content":"a"}}` + "\n" +
			`{"object":"conversation.message","seq":1,"turn":1,"episode":1,"tokens":1,"message":{"role":"user","content":"b"}}`},
		{"orphan", `{"object":"conversation.message","seq":1,"turn":1,"episode":1,"tokens":1,"message":{"role":"tool","tool_call_id":"x","content":"a"}}`},
		{"bad flag", `{"object":"conversation.message","seq":1,"turn":1,"episode":1,"tokens":1,"flags":["erased"],"message":{"role":"user","content":"a"}}`},
	} {
		if a := h.api(key, "", "POST", convBase+"x-bad/import", tc.body, "application/x-ndjson"); a.status != 400 {
			t.Errorf("import %s: %d %s", tc.name, a.status, a.body)
		}
	}
	if a := h.api(key, "", "GET", convBase+"x-bad", ""); a.status != 404 {
		t.Errorf("a refused import stored something: %d", a.status)
	}
}

func TestAPIListAndSearch(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for i, conv := range []string{"l-a", "l-b", "l-c"} {
		if a := h.api(key, "", "POST", convBase+conv+"/messages", memorizeBody(userJSON(fmt.Sprint("kiwi number ", i)))); a.status != 201 {
			t.Fatalf("memorize: %d %s", a.status, a.body)
		}
	}
	if a := h.api(key, "", "POST", convBase+"l-a/messages", memorizeBody(callJSON("c1"))); a.status != 200 {
		t.Fatal(a.status)
	}
	var list struct {
		Data    []convDetail `json:"data"`
		FirstID *string      `json:"first_id"`
		LastID  *string      `json:"last_id"`
		HasMore bool         `json:"has_more"`
	}
	h.api(key, "", "GET", "/recall/v1/conversations?limit=2", "").json(t, &list)
	if len(list.Data) != 2 || !list.HasMore || list.Data[0].ID != "l-a" || *list.LastID != list.Data[1].ID {
		t.Errorf("first page %+v", list)
	}
	h.api(key, "", "GET", "/recall/v1/conversations?limit=2&after="+*list.LastID, "").json(t, &list)
	if len(list.Data) != 1 || list.HasMore {
		t.Errorf("second page %+v", list)
	}
	h.api(key, "", "GET", "/recall/v1/conversations?status=awaiting_tool_results", "").json(t, &list)
	if len(list.Data) != 1 || list.Data[0].ID != "l-a" || list.Data[0].Status != "awaiting_tool_results" {
		t.Errorf("status filter %+v", list)
	}
	var found struct {
		Data []struct {
			Conversation string `json:"conversation"`
			Seq          uint64 `json:"seq"`
		} `json:"data"`
	}
	h.api(key, "", "GET", "/recall/v1/search?q=kiwi", "").json(t, &found)
	if len(found.Data) != 3 {
		t.Errorf("tenant search: %+v", found)
	}
	h.api(key, "", "GET", convBase+"l-b/search?q=kiwi", "").json(t, &found)
	if len(found.Data) != 1 || found.Data[0].Conversation != "l-b" {
		t.Errorf("conversation search: %+v", found)
	}
	for _, p := range []string{"/recall/v1/search", "/recall/v1/conversations?status=sleepy", "/recall/v1/conversations?limit=101", "/recall/v1/conversations?after=a/b"} {
		if a := h.api(key, "", "GET", p, ""); a.status != 400 {
			t.Errorf("%s: %d %s", p, a.status, a.body)
		}
	}
	for _, tc := range []struct{ method, path string }{{"GET", "/recall/v1/nope"}, {"GET", convBase + "l-a/nope"}, {"PUT", convBase + "l-a"}, {"GET", convBase + "l-a/forget"}} {
		if a := h.api(key, "", tc.method, tc.path, ""); a.status != 404 && a.status != 405 {
			t.Errorf("%s %s: %d", tc.method, tc.path, a.status)
		}
	}
	if a := h.api("", "", "GET", "/recall/v1/openapi.json", ""); a.status != 200 || !bytes.Contains(a.body, []byte(`"openapi": "3.1.0"`)) {
		t.Errorf("openapi.json: %d", a.status)
	}
}

func TestAPIListPagingIsStableWhileConversationsAreWritten(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	var all []string
	for i := range 25 {
		id := fmt.Sprintf("stable-%02d", i)
		all = append(all, id)
		if a := h.api(key, "", "POST", convBase+id+"/messages", memorizeBody(userJSON("hi"))); a.status != 201 {
			t.Fatalf("memorize: %d %s", a.status, a.body)
		}
	}
	seen := map[string]int{}
	after := ""
	for page := 0; ; page++ {
		var list struct {
			Data    []struct{ ID string } `json:"data"`
			LastID  *string               `json:"last_id"`
			HasMore bool                  `json:"has_more"`
		}
		path := "/recall/v1/conversations?limit=4"
		if after != "" {
			path += "&after=" + after
		}
		h.api(key, "", "GET", path, "").json(t, &list)
		for _, c := range list.Data {
			seen[c.ID]++
		}
		if !list.HasMore {
			break
		}
		after = *list.LastID
		// Between pages: one already listed moves to the front, and a new
		// one appears there.
		for _, id := range []string{list.Data[0].ID, fmt.Sprintf("new-%02d", page)} {
			if a := h.api(key, "", "POST", convBase+id+"/messages", memorizeBody(userJSON("again"))); a.status/100 != 2 {
				t.Fatalf("write %s: %d %s", id, a.status, a.body)
			}
		}
		if page > 20 {
			t.Fatal("paging does not end")
		}
	}
	for _, id := range all {
		if seen[id] != 1 {
			t.Errorf("%s listed %d times, want once", id, seen[id])
		}
	}
	// A cursor written since its page: the store restarts the next page
	// where it now is (the front), so conversations repeat; none is
	// skipped.
	var first struct {
		Data   []struct{ ID string } `json:"data"`
		LastID *string               `json:"last_id"`
	}
	h.api(key, "", "GET", "/recall/v1/conversations?limit=10", "").json(t, &first)
	h.api(key, "", "POST", convBase+*first.LastID+"/messages", memorizeBody(userJSON("moved")))
	listed := map[string]bool{}
	for _, c := range first.Data {
		listed[c.ID] = true
	}
	after = *first.LastID
	for range 20 {
		var list struct {
			Data    []struct{ ID string } `json:"data"`
			LastID  *string               `json:"last_id"`
			HasMore bool                  `json:"has_more"`
		}
		h.api(key, "", "GET", "/recall/v1/conversations?limit=10&after="+after, "").json(t, &list)
		for _, c := range list.Data {
			listed[c.ID] = true
		}
		if !list.HasMore {
			break
		}
		after = *list.LastID
	}
	for _, id := range all {
		if !listed[id] {
			t.Errorf("%s skipped after its page's cursor was written", id)
		}
	}
}

// mustJSON renders v as JSON.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
