package e2e

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// exchangeList is the exchanges call's answer.
type exchangeList struct {
	Data    []exchangeView `json:"data"`
	HasMore bool           `json:"has_more"`
}

type exchangeView struct {
	history.ExchangeRecord
	Messages []struct {
		Seq       *uint64 `json:"seq"`
		Kind      string  `json:"kind"`
		Raw       any     `json:"content"`
		Forgotten bool    `json:"forgotten"`
	} `json:"messages"`
}

// exchanges waits for conv's exchange records to be written and lists
// them, newest first.
func exchanges(t *testing.T, h *e2etest.Harness, conv string) []exchangeView {
	t.Helper()
	return exchangesAs(t, h, key, conv)
}

// exchangesAs is exchanges as the client with key k.
func exchangesAs(t *testing.T, h *e2etest.Harness, k, conv string) []exchangeView {
	t.Helper()
	flush(t, h)
	a := h.API(k, "", "GET", "/recall/v1/conversations/"+conv+"/exchanges?limit=200", "")
	if a.Status != 200 {
		t.Fatalf("exchanges: %d %s", a.Status, a.Body)
	}
	var l exchangeList
	a.JSON(t, &l)
	return l.Data
}

func flush(t *testing.T, h *e2etest.Harness) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Exchanges.Flush(ctx); err != nil {
		t.Fatalf("exchange records not written: %v", err)
	}
}

func findDropped(d []history.Dropped, reason string) []history.Dropped {
	var out []history.Dropped
	for _, x := range d {
		if x.Reason == reason {
			out = append(out, x)
		}
	}
	return out
}

// The inspector's record of a request that sent a summary, dropped a
// long turn for the budget and cut an earlier tool result says so, by
// seq; its messages render from the store, a forgotten one as a
// placeholder; another tenant cannot read it; and no record holds a word
// of the messages.
func TestExchangeRecordsSaySentDroppedAndCut(t *testing.T) {
	const marker = "ZEBRAMARKER7731"
	h := e2etest.New(t, e2etest.Options{Global: func(g *config.Global) {
		g.Defaults.History.BudgetTokens = 900
		g.Defaults.History.OldToolResultChars = 100
	}})
	conv := "inspect-1"
	say := func(body string) {
		t.Helper()
		h.PostDone("/v1/chat/completions", key, conv, body)
	}
	say(`{"model":"gpt-4o","messages":[{"role":"user","content":"hello ` + marker + `"}]}`)                        // seqs 1-2
	say(`{"model":"gpt-4o","messages":[{"role":"user","content":"` + strings.Repeat("lorem ipsum ", 400) + `"}]}`) // seqs 3-4
	h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{{ID: "call_1", Name: "read", Arguments: "{}"}}})
	say(`{"model":"gpt-4o","messages":[{"role":"user","content":"read it"}]}`)                                                   // seqs 5-6
	say(`{"model":"gpt-4o","messages":[{"role":"tool","tool_call_id":"call_1","content":"` + strings.Repeat("x", 5000) + `"}]}`) // seqs 7-8

	// A summary of the first turn lands, as a summary job would land it.
	ns := h.PassNamespace(key)
	k := history.Key{Tenant: ns, Conversation: conv}
	m := h.Meta(ns, conv)
	if _, err := h.History.Commit(context.Background(), k, history.Change{Summary: &history.SummaryChange{Incarnation: m.Incarnation, Epoch: m.Epoch,
		Summary: history.Summary{Text: "They greeted each other.", Through: 2, Turns: 1, Tokens: 12}}}); err != nil {
		t.Fatal(err)
	}
	say(`{"model":"gpt-4o","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"what now"}]}`) // seqs 9-10

	recs := exchanges(t, h, conv)
	if len(recs) != 5 {
		t.Fatalf("got %d records, want 5 (one per upstream call)", len(recs))
	}
	if recs[2].Kind != "chat" || recs[1].Kind != "tool_round" {
		t.Errorf("kinds of the tool call's two calls: got %q then %q, want chat then tool_round", recs[2].Kind, recs[1].Kind)
	}
	r := recs[0]
	if r.Status != "answered" || r.HTTPStatus != 200 || r.Ingress != "chat.completions" || r.Upstream != "chat.completions" || r.Model != "gpt-4o" {
		t.Errorf("got status %q (%d), %s -> %s, model %q; want answered (200), chat.completions both ways, gpt-4o",
			r.Status, r.HTTPStatus, r.Ingress, r.Upstream, r.Model)
	}
	if r.Summary == nil || r.Summary.Through != 2 || r.Summary.Tokens == 0 {
		t.Errorf("got summary %+v, want one through seq 2 with its tokens", r.Summary)
	}
	if got := findDropped(r.Dropped, history.DroppedSummarized); !slices.Equal(got, []history.Dropped{{From: 1, To: 2, Reason: "summarized", Turns: 1}}) {
		t.Errorf("summarized: got %+v, want seqs 1-2 (1 turn)", got)
	}
	budget := findDropped(r.Dropped, history.DroppedBudget)
	if len(budget) != 1 || budget[0].From != 3 || budget[0].To != 4 {
		t.Errorf("dropped for the budget: got %+v, want seqs 3-4", budget)
	}
	if want := []history.Span{{From: 5, To: 8}}; !slices.Equal(r.Included, want) {
		t.Errorf("included: got %+v, want %+v", r.Included, want)
	}
	if want := []history.CutResult{{Seq: 7, CharsBefore: 5000, CharsAfter: 100, MaxChars: 100}}; !slices.Equal(r.Cut, want) {
		t.Errorf("cut: got %+v, want %+v", r.Cut, want)
	}
	if want := []history.Span{{From: 9, To: 10}}; !slices.Equal(r.Committed, want) || r.NewMessages != 1 {
		t.Errorf("committed %+v with %d new messages, want %+v with 1", r.Committed, r.NewMessages, want)
	}
	wantBudget := 900 // divided by a calibration over 1 (the fake counts a quarter token a byte)
	if r.Calibration > 1 {
		wantBudget = int(900 / r.Calibration)
	}
	if r.Tokens.Instructions == 0 || r.Tokens.History == 0 || r.Tokens.New == 0 || r.Tokens.EstimatedInput == 0 ||
		r.Tokens.ReportedInput == 0 || r.Tokens.Output == 0 || r.Budget != wantBudget {
		t.Errorf("tokens %+v of budget %d: want every estimate, the reported input and output, budget %d", r.Tokens, r.Budget, wantBudget)
	}

	// Forget the tool call and its result (seqs 6-7: kept, flagged), then render.
	if a := h.API(key, "", "POST", "/recall/v1/conversations/"+conv+"/forget", `{"instruction":"speaker:tool","mode":"soft"}`); a.Status != 200 {
		t.Fatalf("forget: %d %s", a.Status, a.Body)
	}
	a := h.API(key, "", "GET", "/recall/v1/conversations/"+conv+"/exchanges/"+r.ID+"?render=messages", "")
	if a.Status != 200 {
		t.Fatalf("render: %d %s", a.Status, a.Body)
	}
	var one exchangeView
	a.JSON(t, &one)
	var kinds []string
	for _, msg := range one.Messages {
		seq := "-"
		if msg.Seq != nil {
			seq = strconv.FormatUint(*msg.Seq, 10)
		}
		state := "content"
		switch {
		case msg.Forgotten:
			state = "forgotten"
		case msg.Raw == nil:
			state = "null"
		}
		kinds = append(kinds, msg.Kind+":"+seq+":"+state)
	}
	want := []string{"instruction:-:null", "summary:-:content", "history:5:content", "history:6:forgotten", "history:7:forgotten",
		"history:8:content", "new:9:content"}
	if !slices.Equal(kinds, want) {
		t.Errorf("rendered messages:\ngot  %v\nwant %v", kinds, want)
	}
	if !bytes.Contains(a.Body, []byte(`what now`)) {
		t.Errorf("the rendered new message lacks its stored content: %s", a.Body)
	}

	// Another tenant's key: the conversation is not there.
	for _, path := range []string{"/exchanges", "/exchanges/" + r.ID, "/exchanges/" + r.ID + "?render=messages"} {
		if a := h.API("sk-someone-else", "", "GET", "/recall/v1/conversations/"+conv+path, ""); a.Status != http.StatusNotFound {
			t.Errorf("another tenant GET %s: got %d, want 404", path, a.Status)
		}
	}
	if a := h.API(key, "", "GET", "/recall/v1/conversations/"+conv+"/exchanges/xch_0000000000000001", ""); a.Status != 404 || a.ErrCode() != "exchange_not_found" {
		t.Errorf("an unknown record: got %d %s, want 404 exchange_not_found", a.Status, a.ErrCode())
	}

	// No record holds message text: the marker and the long turn's words
	// are in the message records only.
	var inRecords, inMessages int
	err := h.Store.DB().View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{'c', 0}})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			key := it.Item().Key()
			parts := bytes.SplitN(key, []byte{0}, 4)
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			has := bytes.Contains(v, []byte(marker)) || bytes.Contains(v, []byte("lorem")) || bytes.Contains(v, []byte("what now"))
			switch {
			case len(parts) == 4 && len(parts[3]) > 0 && parts[3][0] == 'e':
				if has {
					inRecords++
				}
			case has:
				inMessages++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if inRecords != 0 || inMessages == 0 {
		t.Errorf("message text found in %d exchange records and %d other records; want 0 and some", inRecords, inMessages)
	}
}

// An upstream that fails leaves an upstream_error record that commits
// nothing; deleting the conversation erases its records.
func TestFailedUpstreamCallLeavesARecordAndCommitsNothing(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{})
	conv := "inspect-fail"
	h.Say(key, conv, "first")
	ns := h.PassNamespace(key)
	before := len(h.Stored(ns, conv))
	h.Up.Enqueue(upstreamtest.Reply{Fault: upstreamtest.FaultStatus, Status: http.StatusServiceUnavailable})
	if r := h.Post("/v1/chat/completions", key, conv, `{"model":"gpt-4o","messages":[{"role":"user","content":"second"}]}`); r.Status != http.StatusServiceUnavailable {
		t.Fatalf("got %d, want the upstream's 503", r.Status)
	}
	h.WaitDone(conv)
	recs := exchanges(t, h, conv)
	if len(recs) != 2 {
		t.Fatalf("got %d records, want 2", len(recs))
	}
	r := recs[0]
	if r.Status != "upstream_error" || r.HTTPStatus != http.StatusServiceUnavailable || len(r.Committed) != 0 || r.NewMessages != 1 {
		t.Errorf("got status %q (%d), committed %+v, %d new; want upstream_error (503), none committed, 1 new", r.Status, r.HTTPStatus, r.Committed, r.NewMessages)
	}
	if got := len(h.Stored(ns, conv)); got != before {
		t.Errorf("stored messages: got %d, want %d (nothing committed)", got, before)
	}
	if recs[1].Status != "answered" || !slices.Equal(recs[1].Committed, []history.Span{{From: 1, To: 2}}) {
		t.Errorf("the first exchange: got %q committing %+v, want answered committing 1-2", recs[1].Status, recs[1].Committed)
	}
	if a := h.API(key, "", "DELETE", "/recall/v1/conversations/"+conv, ""); a.Status != 200 {
		t.Fatalf("delete: %d %s", a.Status, a.Body)
	}
	h.Say(key, conv, "again")
	if recs := exchanges(t, h, conv); len(recs) != 1 || recs[0].Committed[0].From != 1 {
		t.Errorf("after the delete and one new exchange: got %d records, want only the new one", len(recs))
	}
}
