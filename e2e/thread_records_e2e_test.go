package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/thread"
)

// TestExchangeRecordsSayWhichThreadAndWhy: every exchange record names
// its thread and the rule or header that put it there. A subagent's
// calls (x-claude-code-agent-id, an id that is no thread name hashed)
// are records of its thread that say agent_id; a thread X-Recall-Thread
// names says header; a turn X-Recall-Thread: main made one is the main
// thread by header; a side call says its rule; a turn no rule made a
// side call names no reason.
func TestExchangeRecordsSayWhichThreadAndWhy(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{})
	tools := `,"tools":[{"type":"function","function":{"name":"read","parameters":{"type":"object","properties":{}}}}]`
	post := func(conv string, header map[string]string, user, extra string) {
		t.Helper()
		hs := map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"}
		for k, v := range header {
			hs[k] = v
		}
		body := `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are an agent."},{"role":"user","content":"` + user + `"}]` + extra + `}`
		if r := h.PostHeaders("/c/rec/v1/chat/completions", hs, body); r.Status != 200 {
			t.Fatalf("%s: %d %s", user, r.Status, r.Body)
		}
		if conv != "" {
			h.WaitDone(conv)
			return
		}
		waitAny(t, h) // the thread of a hashed id: the next exchange's
	}
	long := strings.Repeat("x", 70) // no thread name: hashed
	post("rec", nil, "main turn", tools)
	post("rec~a1b2", map[string]string{"x-claude-code-agent-id": "a1b2"}, "subagent turn", tools)
	post("rec~helper", map[string]string{thread.Header: "helper"}, "helper turn", tools)
	post("rec", nil, "a title, please", "")
	post("rec", map[string]string{thread.Header: "main"}, "a tool-less turn", "")
	post("", map[string]string{"x-claude-code-agent-id": long}, "hashed subagent turn", tools)

	var threads []string
	for _, r := range exchanges(t, h, "rec") {
		threads = append(threads, r.Kind+"/"+r.Thread+"/"+r.ThreadReason)
	}
	if want := []string{"chat/main/header", "side/side/no_tools", "chat//"}; !slices.Equal(threads, want) {
		t.Errorf("rec's records, newest first: got %q, want %q", threads, want)
	}
	for conv, want := range map[string]string{"rec~a1b2": "a1b2/agent_id", "rec~helper": "helper/header"} {
		recs := exchanges(t, h, conv)
		if len(recs) != 1 || recs[0].Thread+"/"+recs[0].ThreadReason != want {
			t.Errorf("%s's records: got %+v, want one of thread/reason %s", conv, recs, want)
		}
	}
	var l struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	h.API(key, "", "GET", "/recall/v1/conversations/rec/threads", "").JSON(t, &l)
	var hashed string
	for _, d := range l.Data {
		if _, name, _ := history.SplitThread(d.ID); strings.HasPrefix(name, "agent-") {
			hashed = d.ID
		}
	}
	if hashed == "" {
		t.Fatalf("threads %+v: no hashed agent's thread", l.Data)
	}
	_, name, _ := history.SplitThread(hashed)
	if recs := exchanges(t, h, hashed); len(recs) != 1 || recs[0].Thread != name || recs[0].ThreadReason != thread.ReasonAgentID {
		t.Errorf("%s's records: got %+v, want one of thread %s, reason agent_id", hashed, recs, name)
	}
}
