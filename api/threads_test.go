package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/recallproxy/recall/api"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apitest"
)

// checked serves one request through f and validates its answer against
// the OpenAPI document, decoding it into v.
func (f *importFixture) checked(method, path, body string, v any) int {
	f.t.Helper()
	ct := ""
	if body != "" {
		ct = "application/json"
	}
	status, b := f.call(method, path, ct, body)
	if err := apitest.Check(method, api.Prefix+path, status, http.Header{"Content-Type": {"application/json"}}, b); err != nil {
		f.t.Error(err)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			f.t.Fatalf("%s %s: decode %s: %v", method, path, b, err)
		}
	}
	return status
}

// A subagent's thread, listed or read on its own, names the conversation
// it is a thread of and its own name; a conversation names neither.
func TestAThreadNamesItsParent(t *testing.T) {
	f := newImportFixture(t)
	turn := `{"messages":[{"role":"user","content":"hello"},{"role":"assistant","content":"hi there"}]}`
	for _, id := range []string{"proj", "proj~a1b2", "proj~helper"} {
		if status := f.checked("POST", "conversations/"+id+"/messages", turn, nil); status != 201 {
			t.Fatalf("memorize %s: got %d, want 201", id, status)
		}
	}
	var l api.List[api.Conversation, string]
	if status := f.checked("GET", "conversations/proj/threads", "", &l); status != 200 {
		t.Fatalf("threads: got %d, want 200", status)
	}
	var got [][3]string
	for _, c := range l.Data {
		got = append(got, [3]string{c.ID, c.Parent, c.Thread})
	}
	want := [][3]string{{"proj~a1b2", "proj", "a1b2"}, {"proj~helper", "proj", "helper"}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("threads (id, parent, thread): got %q, want %q", got, want)
	}
	var d api.Detail
	f.checked("GET", "conversations/proj~a1b2", "", &d)
	if d.Parent != "proj" || d.Thread != "a1b2" || d.Turns != 1 {
		t.Errorf("the thread: got parent %q thread %q turns %d, want proj, a1b2, 1", d.Parent, d.Thread, d.Turns)
	}
	var raw map[string]any
	f.checked("GET", "conversations/proj", "", &raw)
	if _, ok := raw["parent"]; ok {
		t.Errorf("the conversation names a parent: %v", raw)
	}
	if _, ok := raw["thread"]; ok {
		t.Errorf("the conversation names a thread: %v", raw)
	}
}

// Each exchange record says its thread and why: as recorded, and for a
// record of a subagent's thread that names none (written before records
// named their thread, or a summariser's), the thread whose record it is.
func TestExchangesSayTheirThread(t *testing.T) {
	f := newImportFixture(t)
	turn := `{"messages":[{"role":"user","content":"hello"},{"role":"assistant","content":"hi there"}]}`
	for _, id := range []string{"proj", "proj~a1b2"} {
		if status := f.checked("POST", "conversations/"+id+"/messages", turn, nil); status != 201 {
			t.Fatalf("memorize %s: got %d, want 201", id, status)
		}
	}
	rec := func(n uint64, kind, thread, reason string) history.ExchangeRecord {
		return history.ExchangeRecord{ID: history.NewExchangeID(n), CreatedAt: 1772355600, Kind: kind, Thread: thread, ThreadReason: reason,
			Ingress: "messages", Upstream: "messages", Model: "claude-sonnet-4-5", Status: "answered", HTTPStatus: 200,
			Included: []history.Span{}, Dropped: []history.Dropped{}, Cut: []history.CutResult{}, Committed: []history.Span{}}
	}
	ctx := context.Background()
	if err := f.s.AppendExchanges(ctx, history.Key{Tenant: "t", Conversation: "proj"}, []history.ExchangeRecord{
		rec(1, "chat", "", ""), rec(2, "side", "side", "no_tools"), rec(3, "chat", "main", "header"),
	}); err != nil {
		t.Fatal(err)
	}
	if err := f.s.AppendExchanges(ctx, history.Key{Tenant: "t", Conversation: "proj~a1b2"}, []history.ExchangeRecord{
		rec(4, "chat", "", ""), rec(5, "chat", "a1b2", "agent_id"), rec(6, "side", "side", "marker"),
	}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		conv string
		want []string // kind/thread/reason, newest first
	}{
		{"proj", []string{"chat/main/header", "side/side/no_tools", "chat//"}},
		{"proj~a1b2", []string{"side/side/marker", "chat/a1b2/agent_id", "chat/a1b2/"}},
	} {
		var l api.List[api.Exchange, string]
		if status := f.checked("GET", "conversations/"+tc.conv+"/exchanges", "", &l); status != 200 {
			t.Fatalf("%s: got %d, want 200", tc.conv, status)
		}
		var got []string
		for _, x := range l.Data {
			got = append(got, x.Kind+"/"+x.Thread+"/"+x.ThreadReason)
		}
		if len(got) != len(tc.want) {
			t.Fatalf("%s: got %q, want %q", tc.conv, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s's records: got %q, want %q", tc.conv, got, tc.want)
				break
			}
		}
	}
	var one api.Exchange
	f.checked("GET", "conversations/proj~a1b2/exchanges/"+history.NewExchangeID(4), "", &one)
	if one.Thread != "a1b2" {
		t.Errorf("one old record of the thread: got thread %q, want a1b2", one.Thread)
	}
}
