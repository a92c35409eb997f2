package tools_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/store/badgerstore"
	"github.com/recallproxy/recall/store/storetest"
	"github.com/recallproxy/recall/tools"
)

var ctx = context.Background()

// fixture is a Badger store with two tenants: "t1" has "trip" (ended,
// titled, summarised) and "now" (the caller's), "t2" has "secret".
func fixture(t *testing.T) history.Store {
	t.Helper()
	st, err := badgerstore.Open(t.TempDir(), badgerstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	trip := history.Key{Tenant: "t1", Conversation: "trip"}
	storetest.MustCommit(t, st, trip, history.Change{Append: []history.Message{
		storetest.User("we fly to Lisbon on the ninth", 10), storetest.Asst("noted: Lisbon, the ninth", 10)}})
	internal := storetest.Asst("Lisbon internal round", 10)
	internal.Flags = history.Internal
	storetest.MustCommit(t, st, trip, history.Change{Append: []history.Message{storetest.User("hotel?", 5), internal}})
	storetest.MustCommit(t, st, trip, history.Change{Seal: true})
	if _, err := storetest.Land(st, trip, history.SummaryChange{Summary: history.Summary{Text: "Trip to Lisbon on the 9th.", Through: 4, Turns: 2}, Episode: 1, Title: "Planning the Lisbon trip"}); err != nil {
		t.Fatal(err)
	}
	storetest.MustCommit(t, st, history.Key{Tenant: "t1", Conversation: "now"}, history.Change{Append: storetest.Turns(1, 1)})
	storetest.MustCommit(t, st, history.Key{Tenant: "t2", Conversation: "secret"}, history.Change{Append: []history.Message{
		storetest.User("the Lisbon launch code is 1234", 10)}})
	return st
}

func run(t *testing.T, st history.Store, name, args string) (tools.Result, map[string]any) {
	t.Helper()
	r := tools.Runner{Store: st, Key: history.Key{Tenant: "t1", Conversation: "now"}}
	res := r.Run(ctx, name, args)
	var v map[string]any
	if err := json.Unmarshal([]byte(res.Text), &v); err != nil {
		t.Fatalf("%s(%s): result %q is not JSON: %v", name, args, res.Text, err)
	}
	return res, v
}

func TestGetConversation(t *testing.T) {
	st := fixture(t)
	res, v := run(t, st, tools.GetConversation, `{"conversation_id":"trip"}`)
	if res.IsError || res.Outcome != tools.OutcomeOK {
		t.Fatalf("got %+v, want ok", res)
	}
	if v["title"] != "Planning the Lisbon trip" || v["summary"] != "Trip to Lisbon on the 9th." {
		t.Errorf("got title %v summary %v, want the stored ones", v["title"], v["summary"])
	}
	msgs := v["messages"].([]any)
	if len(msgs) != 3 { // the internal message is left out
		t.Fatalf("got %d messages (%s), want 3", len(msgs), res.Text)
	}
	if got := msgs[0].(map[string]any)["text"]; got != "we fly to Lisbon on the ninth" {
		t.Errorf("got first text %v", got)
	}
	if strings.Contains(res.Text, "internal round") {
		t.Errorf("got Recall's internal message in %s", res.Text)
	}
}

// TestGetConversationOtherNamespace: another tenant's id answers exactly
// as an id never written does.
func TestGetConversationOtherNamespace(t *testing.T) {
	st := fixture(t)
	other, _ := run(t, st, tools.GetConversation, `{"conversation_id":"secret"}`)
	never, _ := run(t, st, tools.GetConversation, `{"conversation_id":"nope"}`)
	if !other.IsError || other.Outcome != tools.OutcomeUnknown {
		t.Fatalf("got %+v, want unknown", other)
	}
	if strings.ReplaceAll(other.Text, "secret", "X") != strings.ReplaceAll(never.Text, "nope", "X") {
		t.Errorf("got %q for another namespace's id, %q for an unknown one: want the same answer", other.Text, never.Text)
	}
}

func TestGetConversationListRecent(t *testing.T) {
	st := fixture(t)
	res, v := run(t, st, tools.GetConversation, `{"list_recent":true}`)
	convs := v["conversations"].([]any)
	if len(convs) != 1 || convs[0].(map[string]any)["conversation_id"] != "trip" {
		t.Fatalf("got %s, want only the ended conversation trip", res.Text)
	}
}

func TestSearchConversations(t *testing.T) {
	st := fixture(t)
	res, v := run(t, st, tools.SearchConversations, `{"query":"Lisbon","limit":10}`)
	hits := v["hits"].([]any)
	if len(hits) != 2 {
		t.Fatalf("got %s, want the two visible Lisbon messages of t1", res.Text)
	}
	for _, h := range hits {
		h := h.(map[string]any)
		if h["conversation_id"] != "trip" || h["seq"].(float64) == 0 || h["snippet"] == "" {
			t.Errorf("got hit %v, want one of trip with seq and snippet", h)
		}
	}
	if strings.Contains(res.Text, "1234") || strings.Contains(res.Text, "internal") {
		t.Errorf("got another namespace's or an internal message in %s", res.Text)
	}
}

func TestInvalidArguments(t *testing.T) {
	st := fixture(t)
	for _, c := range []struct{ name, args string }{
		{tools.SearchConversations, `{}`},
		{tools.SearchConversations, `{"query":"x","limit":-1}`},
		{tools.GetConversation, `{}`},
		{tools.GetConversation, `{"conversation_id":5}`},
		{tools.EndConversation, `not json`},
		{"rm_rf", `{}`},
	} {
		res, _ := run(t, st, c.name, c.args)
		if !res.IsError || res.Outcome != tools.OutcomeInvalid || res.End {
			t.Errorf("%s(%s): got %+v, want an invalid-arguments error", c.name, c.args, res)
		}
	}
}

func TestEndConversation(t *testing.T) {
	res, v := run(t, fixture(t), tools.EndConversation, `{"reason":"done"}`)
	if !res.End || res.IsError || v["ended"] != true {
		t.Errorf("got %+v, want End set", res)
	}
}

// TestOutputBounded: a conversation of long messages is answered within
// the cap, newest messages kept.
func TestOutputBounded(t *testing.T) {
	st := fixture(t)
	k := history.Key{Tenant: "t1", Conversation: "long"}
	long := strings.Repeat("word ", 2000)
	var msgs []history.Message
	for range 60 {
		msgs = append(msgs, storetest.User(long, 10))
	}
	storetest.MustCommit(t, st, k, history.Change{Append: msgs})
	res, v := run(t, st, tools.GetConversation, `{"conversation_id":"long"}`)
	if n := utf8.RuneCountInString(res.Text); n > tools.MaxResultChars {
		t.Errorf("got %d characters, want at most %d", n, tools.MaxResultChars)
	}
	ms := v["messages"].([]any)
	if len(ms) == 0 || v["truncated"] != true || ms[len(ms)-1].(map[string]any)["seq"].(float64) != 60 {
		t.Errorf("got %d messages, truncated %v: want the newest, marked truncated", len(ms), v["truncated"])
	}
}

func TestValidateAndDefinitions(t *testing.T) {
	if err := tools.Validate([]string{"end_conversation", "search_conversations"}); err != nil {
		t.Errorf("got %v, want nil", err)
	}
	for _, bad := range [][]string{{"nope"}, {"end_conversation", "end_conversation"}} {
		if err := tools.Validate(bad); err == nil {
			t.Errorf("Validate(%v): got nil, want an error", bad)
		}
	}
	defs := tools.Definitions(tools.Names, nil)
	if len(defs) != 3 {
		t.Fatalf("got %d definitions, want 3", len(defs))
	}
	for _, d := range defs {
		if !json.Valid(d.Parameters) || d.Description == "" {
			t.Errorf("%s: schema %s not valid or no description", d.Name, d.Parameters)
		}
	}
	// A client tool of the same name wins.
	defs = tools.Definitions(tools.Names, defs[:1])
	if len(defs) != 2 || tools.Offered(defs, tools.EndConversation) {
		t.Errorf("got %v, want end_conversation left out", defs)
	}
}
