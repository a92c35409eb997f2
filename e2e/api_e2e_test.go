package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/recallproxy/recall/api"
	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/tokens"
)

const convBase = "/recall/v1/conversations/"

// memorizeBody is a memorize call's body for msgs (raw JSON messages).
func memorizeBody(msgs ...string) string { return `{"messages":[` + strings.Join(msgs, ",") + `]}` }

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

// msgList is a page of a conversation's messages.
type msgList api.List[api.Message, uint64]

func (l msgList) rendered() []string {
	out := make([]string, len(l.Data))
	for i, m := range l.Data {
		out[i] = e2etest.Render(m.Message)
		if len(m.Flags) > 0 {
			out[i] += " [" + strings.Join(m.Flags, ",") + "]"
		}
	}
	return out
}

func TestAPITenantsSeeOnlyTheirOwnConversations(t *testing.T) {
	h := e2etest.New(t, twoTenantsAdmin)
	h.Say("rk-acme-1", "shared-id", "acme secret plan")
	if a := h.API("rk-acme-1", "", "GET", convBase+"shared-id", ""); a.Status != 200 {
		t.Fatalf("acme reads its conversation: %d %s", a.Status, a.Body)
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
		a := h.API("rk-globex-1", "", tc.method, tc.path, tc.body)
		never := h.API("rk-globex-1", "", tc.method, strings.Replace(tc.path, "shared-id", "never-used", 1), tc.body)
		if tc.path == convBase+"shared-id/context" && a.Status == 501 {
			continue // not wired in this server: it answers 501 for any id
		}
		if a.Status != 404 || a.ErrCode() != "conversation_not_found" || !bytes.Equal(a.Body, never.Body) {
			t.Errorf("globex %s %s: %d %s, want the 404 of an unknown id (%s)", tc.method, tc.path, a.Status, a.Body, never.Body)
		}
	}
	var list struct {
		Data []struct{ ID string } `json:"data"`
	}
	h.API("rk-globex-1", "", "GET", "/recall/v1/conversations", "").JSON(t, &list)
	if len(list.Data) != 0 {
		t.Errorf("globex lists %v", list.Data)
	}
	var found struct {
		Data []any `json:"data"`
	}
	h.API("rk-globex-1", "", "GET", "/recall/v1/search?q=secret", "").JSON(t, &found)
	if len(found.Data) != 0 {
		t.Errorf("globex finds %v", found.Data)
	}
	// An import by globex lands in globex's namespace: acme's is untouched.
	line := `{"object":"conversation.message","seq":1,"turn":1,"episode":1,"created_at":1767225600,"tokens":3,"flags":[],"message":{"role":"user","content":"globex"}}`
	if a := h.API("rk-globex-1", "", "POST", convBase+"shared-id/import", line+"\n", "application/x-ndjson"); a.Status != 201 {
		t.Fatalf("globex import: %d %s", a.Status, a.Body)
	}
	var acme msgList
	h.API("rk-acme-1", "", "GET", convBase+"shared-id/messages", "").JSON(t, &acme)
	if got := acme.rendered(); !slices.Equal(got, []string{"user:acme secret plan", "assistant:echo: acme secret plan"}) {
		t.Errorf("acme's messages after globex's import: %q", got)
	}
	// The admin key acts on the tenant it names, and must name one.
	if a := h.API("rk-admin", "acme", "GET", convBase+"shared-id/messages", ""); a.Status != 200 || !bytes.Contains(a.Body, []byte("acme secret plan")) {
		t.Errorf("admin on acme: %d %s", a.Status, a.Body)
	}
	if a := h.API("rk-admin", "", "GET", "/recall/v1/conversations", ""); a.Status != 400 || a.ErrCode() != "missing_tenant" {
		t.Errorf("admin without a tenant: %d %s", a.Status, a.Body)
	}
	if a := h.API("rk-admin", "initech", "GET", "/recall/v1/conversations", ""); a.Status != 400 || a.ErrCode() != "unknown_tenant" {
		t.Errorf("admin on an unknown tenant: %d %s", a.Status, a.Body)
	}
	// A key of one tenant cannot borrow the admin's header.
	if a := h.API("rk-globex-1", "acme", "GET", convBase+"shared-id/messages", ""); a.Status != 200 || bytes.Contains(a.Body, []byte("acme")) {
		t.Errorf("globex naming acme: %d %s", a.Status, a.Body)
	}
	for _, k := range []string{"", "rk-nobody"} {
		if a := h.API(k, "", "GET", "/recall/v1/conversations", ""); a.Status != 401 {
			t.Errorf("key %q: %d %s", k, a.Status, a.Body)
		}
	}
}

func init() {
	twoTenantsAdmin = e2etest.TwoTenants()
	twoTenantsAdmin.Global = func(g *config.Global) { g.AdminKey = "rk-admin" }
}

var twoTenantsAdmin e2etest.Options

func TestAPIPassThroughKeysSeeOnlyTheirNamespace(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{Global: func(g *config.Global) { g.AdminKey = "rk-admin" }})
	for _, k := range []string{"sk-one", "sk-two"} {
		h.Say(k, "p-1", "from "+k)
	}
	for _, k := range []string{"sk-one", "sk-two"} {
		var l msgList
		h.API(k, "", "GET", convBase+"p-1/messages", "").JSON(t, &l)
		if got := l.rendered(); len(got) != 2 || got[0] != "user:from "+k {
			t.Errorf("%s sees %q", k, got)
		}
	}
	if a := h.API("sk-three", "", "GET", convBase+"p-1", ""); a.Status != 404 {
		t.Errorf("a third key reads p-1: %d %s", a.Status, a.Body)
	}
	// The admin key reads a credential's namespace by name, and never
	// becomes a pass-through credential itself.
	if a := h.API("rk-admin", h.PassNamespace("sk-one"), "GET", convBase+"p-1/messages", ""); a.Status != 200 || !bytes.Contains(a.Body, []byte("from sk-one")) {
		t.Errorf("admin on sk-one's namespace: %d %s", a.Status, a.Body)
	}
	if a := h.API("rk-admin", "default", "GET", convBase+"p-1", ""); a.Status != 404 {
		t.Errorf("admin on the bare tenant: %d %s", a.Status, a.Body)
	}
	if a := h.API("rk-admin", "", "GET", convBase+"p-1", ""); a.Status != 400 {
		t.Errorf("admin without a tenant: %d %s", a.Status, a.Body)
	}
	if a := h.API("rk-admin", "default.pt.xyz", "GET", convBase+"p-1", ""); a.Status != 400 {
		t.Errorf("admin on a malformed namespace: %d %s", a.Status, a.Body)
	}
}

func TestAPIMemorizeThenChatSeesIt(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{})
	a := h.API(key, "", "POST", convBase+"m-1/messages", memorizeBody(e2etest.UserJSON("my name is Ada"), e2etest.AssistantJSON("noted, Ada")))
	if a.Status != 201 {
		t.Fatalf("memorize: %d %s", a.Status, a.Body)
	}
	var d convDetail
	a.JSON(t, &d)
	if d.Turns != 1 || d.Messages != 2 || d.Capacity.TokensStored == 0 || d.Capacity.BudgetTokens != tokens.UnknownWindow/2 { // no model yet: half of 128k
		t.Errorf("after memorize: %+v", d)
	}
	h.Say(key, "m-1", "who am I?")
	want := []string{"user:my name is Ada", "assistant:noted, Ada", "user:who am I?"}
	if got := e2etest.RenderAll(h.Up.Last().Messages); !slices.Equal(got, want) {
		t.Errorf("upstream got %q, want %q", got, want)
	}
	// A second memorize appends (200); the tool pairing is checked
	// against the stored history.
	if a := h.API(key, "", "POST", convBase+"m-1/messages", memorizeBody(e2etest.CallJSON("c1"))); a.Status != 200 {
		t.Fatalf("memorize a call: %d %s", a.Status, a.Body)
	}
	if a := h.API(key, "", "POST", convBase+"m-1/messages", memorizeBody(e2etest.ResultJSON("c1", "42"))); a.Status != 200 {
		t.Errorf("memorize its result: %d %s", a.Status, a.Body)
	}
}

func TestAPIMemorizeRefusesBadInputAndStoresNothing(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{})
	for _, tc := range []struct{ name, body, param string }{
		{"not json", `{"messages":[`, ""},
		{"no messages", `{}`, "messages"},
		{"empty", `{"messages":[]}`, "messages"},
		{"bad role", `{"messages":[{"role":"wizard","content":"x"}]}`, "messages[0].role"},
		{"instructions", memorizeBody(`{"role":"system","content":"x"}`), "messages[0].role"},
		{"orphan result", memorizeBody(e2etest.UserJSON("hi"), e2etest.ResultJSON("nope", "x")), "messages.[1].role"},
		{"too deep", `{"messages":[` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `]}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := h.API(key, "", "POST", convBase+"bad-1/messages", tc.body)
			var e struct {
				Error struct {
					Param *string `json:"param"`
				} `json:"error"`
			}
			a.JSON(t, &e)
			if a.Status != 400 || (tc.param != "" && (e.Error.Param == nil || *e.Error.Param != tc.param)) {
				t.Errorf("got %d %s, want 400 naming %q", a.Status, a.Body, tc.param)
			}
		})
	}
	if a := h.API(key, "", "GET", convBase+"bad-1", ""); a.Status != 404 {
		t.Errorf("after refused input the conversation exists: %d %s", a.Status, a.Body)
	}
}

func TestAPIMessagesPagingOrderAndInclude(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{})
	var msgs []string
	for i := 1; i <= 5; i++ {
		msgs = append(msgs, e2etest.UserJSON(fmt.Sprint("u", i)), e2etest.AssistantJSON(fmt.Sprint("a", i)))
	}
	if a := h.API(key, "", "POST", convBase+"pg-1/messages", memorizeBody(msgs...)); a.Status != 201 {
		t.Fatalf("memorize: %d %s", a.Status, a.Body)
	}
	var page msgList
	h.API(key, "", "GET", convBase+"pg-1/messages?limit=4", "").JSON(t, &page)
	if got := page.rendered(); !page.HasMore || !slices.Equal(got, []string{"user:u1", "assistant:a1", "user:u2", "assistant:a2"}) || *page.LastID != 4 {
		t.Errorf("first page %q more=%v", got, page.HasMore)
	}
	h.API(key, "", "GET", convBase+"pg-1/messages?limit=4&after=8", "").JSON(t, &page)
	if got := page.rendered(); page.HasMore || !slices.Equal(got, []string{"user:u5", "assistant:a5"}) {
		t.Errorf("last page %q more=%v", got, page.HasMore)
	}
	h.API(key, "", "GET", convBase+"pg-1/messages?limit=3&order=desc", "").JSON(t, &page)
	if got := page.rendered(); !page.HasMore || !slices.Equal(got, []string{"assistant:a5", "user:u5", "assistant:a4"}) {
		t.Errorf("newest first %q", got)
	}
	h.API(key, "", "GET", convBase+fmt.Sprintf("pg-1/messages?limit=3&order=desc&after=%d", *page.LastID), "").JSON(t, &page)
	if got := page.rendered(); !slices.Equal(got, []string{"user:u4", "assistant:a3", "user:u3"}) {
		t.Errorf("second page newest first %q", got)
	}
	// Forget a turn softly: gone from the default listing, listed with
	// include=forgotten, flagged.
	if a := h.API(key, "", "POST", convBase+"pg-1/forget", `{"instruction":"before:turn_2"}`); a.Status != 200 {
		t.Fatalf("forget: %d %s", a.Status, a.Body)
	}
	h.API(key, "", "GET", convBase+"pg-1/messages?limit=2", "").JSON(t, &page)
	if got := page.rendered(); !slices.Equal(got, []string{"user:u2", "assistant:a2"}) {
		t.Errorf("after forget %q", got)
	}
	h.API(key, "", "GET", convBase+"pg-1/messages?limit=2&include=forgotten", "").JSON(t, &page)
	if got := page.rendered(); !slices.Equal(got, []string{"user:u1 [forgotten]", "assistant:a1 [forgotten]"}) {
		t.Errorf("with include=forgotten %q", got)
	}
	for _, q := range []string{"limit=0", "limit=1001", "order=up", "include=erased", "after=x"} {
		if a := h.API(key, "", "GET", convBase+"pg-1/messages?"+q, ""); a.Status != 400 {
			t.Errorf("%s: %d %s", q, a.Status, a.Body)
		}
	}
}

func TestAPIForgetKeepsToolPairingValid(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{})
	seed := memorizeBody(e2etest.UserJSON("weather?"), e2etest.CallJSON("c1"), e2etest.ResultJSON("c1", "sunny"), e2etest.AssistantJSON("it is sunny"),
		e2etest.UserJSON("and tomorrow?"), e2etest.AssistantJSON("rain"))
	for _, mode := range []string{"soft", "hard"} {
		conv := "tools-" + mode
		if a := h.API(key, "", "POST", convBase+conv+"/messages", seed); a.Status != 201 {
			t.Fatalf("seed: %d %s", a.Status, a.Body)
		}
		// position:3 is the tool result: its call goes with it.
		a := h.API(key, "", "POST", convBase+conv+"/forget", `{"instruction":"position:3","mode":"`+mode+`"}`)
		var f struct {
			Forgotten    []int      `json:"forgotten"`
			Conversation convDetail `json:"conversation"`
		}
		a.JSON(t, &f)
		if a.Status != 200 || !slices.Equal(f.Forgotten, []int{2, 3}) || f.Conversation.Messages != 4 {
			t.Fatalf("%s forget: %d %s", mode, a.Status, a.Body)
		}
		h.Say(key, conv, "thanks")
		last := h.Up.Last()
		if last.Rejected != nil {
			t.Fatalf("%s: upstream rejected the context: %v", mode, last.Rejected)
		}
		want := []string{"user:weather?", "assistant:it is sunny", "user:and tomorrow?", "assistant:rain", "user:thanks"}
		if got := e2etest.RenderAll(last.Messages); !slices.Equal(got, want) {
			t.Errorf("%s: upstream got %q, want %q", mode, got, want)
		}
		var l msgList
		h.API(key, "", "GET", convBase+conv+"/messages?include=forgotten", "").JSON(t, &l)
		kept := 6 + 2 // seed plus the exchange
		if mode == "hard" {
			kept -= 2 // erased: listed nowhere
		}
		if len(l.Data) != kept {
			t.Errorf("%s: %d messages listed with include=forgotten, want %d: %q", mode, len(l.Data), kept, l.rendered())
		}
	}
	for _, body := range []string{`{"instruction":"newest"}`, `{"instruction":"oldest","mode":"gentle"}`, `{"instr":"oldest"}`, `[`} {
		if a := h.API(key, "", "POST", convBase+"tools-soft/forget", body); a.Status != 400 {
			t.Errorf("%s: %d %s", body, a.Status, a.Body)
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
	h := e2etest.New(t, e2etest.Options{})
	const conv = "erase-me-7f3a"
	if a := h.API(key, "", "POST", convBase+conv+"/messages", memorizeBody(e2etest.UserJSON("zebra-unique-word"), e2etest.AssistantJSON("ok"))); a.Status != 201 {
		t.Fatalf("memorize: %d %s", a.Status, a.Body)
	}
	h.Say(key, conv, "more")
	if len(keysHolding(t, h.Store.DB(), conv)) == 0 {
		t.Fatal("nothing stored to delete: the check below would prove nothing")
	}
	a := h.API(key, "", "DELETE", convBase+conv, "")
	if a.Status != 200 || !bytes.Contains(a.Body, []byte(`"deleted":true`)) {
		t.Fatalf("delete: %d %s", a.Status, a.Body)
	}
	if left := keysHolding(t, h.Store.DB(), conv); len(left) > 0 {
		t.Errorf("keys left after delete: %v", left)
	}
	if left := keysHolding(t, h.Store.DB(), "zebra-unique-word"); len(left) > 0 {
		t.Errorf("content left after delete: %v", left)
	}
	if a := h.API(key, "", "GET", convBase+conv, ""); a.Status != 404 {
		t.Errorf("after delete: %d %s", a.Status, a.Body)
	}
	if a := h.API(key, "", "DELETE", convBase+conv, ""); a.Status != 404 {
		t.Errorf("second delete: %d %s", a.Status, a.Body)
	}
	// The id starts fresh.
	if a := h.API(key, "", "POST", convBase+conv+"/messages", memorizeBody(e2etest.UserJSON("again"))); a.Status != 201 {
		t.Errorf("memorize after delete: %d %s", a.Status, a.Body)
	}
	var l msgList
	h.API(key, "", "GET", convBase+conv+"/messages", "").JSON(t, &l)
	if len(l.Data) != 1 || l.Data[0].Seq != 1 {
		t.Errorf("after delete and memorize: %q", l.rendered())
	}
}

func TestAPIExportDeleteImportGivesTheSameContext(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{})
	// History with a forgotten message and tool calls.
	for _, text := range []string{"one", "two", "three"} {
		h.Say(key, "x-1", text)
	}
	if a := h.API(key, "", "POST", convBase+"x-1/messages", memorizeBody(e2etest.UserJSON("weather?"), e2etest.CallJSON("c9"), e2etest.ResultJSON("c9", "hail"), e2etest.AssistantJSON("hail"))); a.Status != 200 {
		t.Fatalf("memorize: %d %s", a.Status, a.Body)
	}
	if a := h.API(key, "", "POST", convBase+"x-1/forget", `{"instruction":"position:3"}`); a.Status != 200 {
		t.Fatalf("forget: %d %s", a.Status, a.Body)
	}
	before := h.API(key, "", "GET", convBase+"x-1/messages?include=forgotten,superseded&limit=1000", "")
	exp := h.API(key, "", "GET", convBase+"x-1/export", "")
	if exp.Status != 200 || exp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("export: %d %s", exp.Status, exp.Header)
	}
	if n := bytes.Count(exp.Body, []byte("\n")); n != 1+10 {
		t.Errorf("export has %d lines, want a header and 10 messages:\n%s", n, exp.Body)
	}
	if a := h.API(key, "", "POST", convBase+"x-1/import", string(exp.Body), "application/x-ndjson"); a.Status != 409 || a.ErrCode() != "conversation_not_empty" {
		t.Errorf("import over a conversation: %d %s", a.Status, a.Body)
	}
	if a := h.API(key, "", "POST", convBase+"x-copy/import", string(exp.Body), "application/json"); a.Status != 415 {
		t.Errorf("import as application/json: %d %s", a.Status, a.Body)
	}
	if a := h.API(key, "", "POST", convBase+"x-copy/import", string(exp.Body), "application/x-ndjson"); a.Status != 201 {
		t.Fatalf("import into a copy: %d %s", a.Status, a.Body)
	}
	if a := h.API(key, "", "DELETE", convBase+"x-1", ""); a.Status != 200 {
		t.Fatalf("delete: %d %s", a.Status, a.Body)
	}
	if a := h.API(key, "", "POST", convBase+"x-1/import", string(exp.Body), "application/x-ndjson"); a.Status != 201 {
		t.Fatalf("import back: %d %s", a.Status, a.Body)
	}
	after := h.API(key, "", "GET", convBase+"x-1/messages?include=forgotten,superseded&limit=1000", "")
	// Import counts every message's tokens itself, where the chat path
	// took an answer's from the upstream's usage: all else is the same.
	var lb, la msgList
	before.JSON(t, &lb)
	after.JSON(t, &la)
	for i := range la.Data {
		if m := la.Data[i]; m.Tokens != h.CountTokens(m.Message) {
			t.Errorf("imported seq %d: %d tokens, want %d as Recall counts it", m.Seq, m.Tokens, h.CountTokens(m.Message))
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
		h.Say(key, conv, "next")
		sent = append(sent, e2etest.RenderAll(h.Up.Last().Messages))
	}
	// position:3 forgot "user:two".
	want := []string{"user:one", "assistant:echo: one", "assistant:echo: two", "user:three", "assistant:echo: three",
		"user:weather?", "assistant: calls=c9", "tool(c9):hail", "assistant:hail", "user:next"}
	if !slices.Equal(sent[0], want) || !slices.Equal(sent[1], want) {
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
		if a := h.API(key, "", "POST", convBase+"x-bad/import", tc.body, "application/x-ndjson"); a.Status != 400 {
			t.Errorf("import %s: %d %s", tc.name, a.Status, a.Body)
		}
	}
	if a := h.API(key, "", "GET", convBase+"x-bad", ""); a.Status != 404 {
		t.Errorf("a refused import stored something: %d", a.Status)
	}
}

func TestAPIListAndSearch(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{})
	for i, conv := range []string{"l-a", "l-b", "l-c"} {
		if a := h.API(key, "", "POST", convBase+conv+"/messages", memorizeBody(e2etest.UserJSON(fmt.Sprint("kiwi number ", i)))); a.Status != 201 {
			t.Fatalf("memorize: %d %s", a.Status, a.Body)
		}
	}
	if a := h.API(key, "", "POST", convBase+"l-a/messages", memorizeBody(e2etest.CallJSON("c1"))); a.Status != 200 {
		t.Fatal(a.Status)
	}
	var list struct {
		Data    []convDetail `json:"data"`
		FirstID *string      `json:"first_id"`
		LastID  *string      `json:"last_id"`
		HasMore bool         `json:"has_more"`
	}
	h.API(key, "", "GET", "/recall/v1/conversations?limit=2", "").JSON(t, &list)
	if len(list.Data) != 2 || !list.HasMore || list.Data[0].ID != "l-a" || *list.LastID != list.Data[1].ID {
		t.Errorf("first page %+v", list)
	}
	h.API(key, "", "GET", "/recall/v1/conversations?limit=2&after="+*list.LastID, "").JSON(t, &list)
	if len(list.Data) != 1 || list.HasMore {
		t.Errorf("second page %+v", list)
	}
	h.API(key, "", "GET", "/recall/v1/conversations?status=awaiting_tool_results", "").JSON(t, &list)
	if len(list.Data) != 1 || list.Data[0].ID != "l-a" || list.Data[0].Status != "awaiting_tool_results" {
		t.Errorf("status filter %+v", list)
	}
	var found struct {
		Data []struct {
			Conversation string `json:"conversation"`
			Seq          uint64 `json:"seq"`
		} `json:"data"`
	}
	h.API(key, "", "GET", "/recall/v1/search?q=kiwi", "").JSON(t, &found)
	if len(found.Data) != 3 {
		t.Errorf("tenant search: %+v", found)
	}
	h.API(key, "", "GET", convBase+"l-b/search?q=kiwi", "").JSON(t, &found)
	if len(found.Data) != 1 || found.Data[0].Conversation != "l-b" {
		t.Errorf("conversation search: %+v", found)
	}
	for _, p := range []string{"/recall/v1/search", "/recall/v1/conversations?status=sleepy", "/recall/v1/conversations?limit=101", "/recall/v1/conversations?after=a/b"} {
		if a := h.API(key, "", "GET", p, ""); a.Status != 400 {
			t.Errorf("%s: %d %s", p, a.Status, a.Body)
		}
	}
	for _, tc := range []struct{ method, path string }{{"GET", "/recall/v1/nope"}, {"GET", convBase + "l-a/nope"}, {"PUT", convBase + "l-a"}, {"GET", convBase + "l-a/forget"}} {
		if a := h.API(key, "", tc.method, tc.path, ""); a.Status != 404 && a.Status != 405 {
			t.Errorf("%s %s: %d", tc.method, tc.path, a.Status)
		}
	}
	if a := h.API("", "", "GET", "/recall/v1/openapi.json", ""); a.Status != 200 || !bytes.Contains(a.Body, []byte(`"openapi": "3.1.0"`)) {
		t.Errorf("openapi.json: %d", a.Status)
	}
}

func TestAPIListPagingIsStableWhileConversationsAreWritten(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{})
	var all []string
	for i := range 25 {
		id := fmt.Sprintf("stable-%02d", i)
		all = append(all, id)
		if a := h.API(key, "", "POST", convBase+id+"/messages", memorizeBody(e2etest.UserJSON("hi"))); a.Status != 201 {
			t.Fatalf("memorize: %d %s", a.Status, a.Body)
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
		h.API(key, "", "GET", path, "").JSON(t, &list)
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
			if a := h.API(key, "", "POST", convBase+id+"/messages", memorizeBody(e2etest.UserJSON("again"))); a.Status/100 != 2 {
				t.Fatalf("write %s: %d %s", id, a.Status, a.Body)
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
	h.API(key, "", "GET", "/recall/v1/conversations?limit=10", "").JSON(t, &first)
	h.API(key, "", "POST", convBase+*first.LastID+"/messages", memorizeBody(e2etest.UserJSON("moved")))
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
		h.API(key, "", "GET", "/recall/v1/conversations?limit=10&after="+after, "").JSON(t, &list)
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
