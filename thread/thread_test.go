package thread_test

import (
	"strings"
	"testing"

	"github.com/recallproxy/recall/thread"
)

func TestRules(t *testing.T) {
	title := []byte(`{"role":"system","content":"You are a title generator. You output ONLY a thread title. Nothing else."}`)
	plain := []byte(`{"role":"system","content":"Be brief."}`)
	last := []byte(`{"role":"user","content":"hi"}`)
	for _, tc := range []struct {
		name        string
		r           thread.Request
		threadTools bool
		want        string
	}{
		{"an agent's turn", thread.Request{Tools: true, Instructions: [][]byte{plain}, Last: last}, true, ""},
		{"a title marker, first request", thread.Request{Instructions: [][]byte{title}, Last: last}, false, thread.ReasonMarker},
		{"a title marker in the user message", thread.Request{Last: []byte(`{"role":"user","content":"<session>x</session>\n\nWrite the title in the language the user wrote in, regardless"}`)}, false, thread.ReasonMarker},
		{"a marker with tools is a turn", thread.Request{Tools: true, Instructions: [][]byte{title}, Last: last}, true, ""},
		{"no tools where the thread has them", thread.Request{Instructions: [][]byte{plain}, Last: last}, true, thread.ReasonNoTools},
		{"no tools, chained to the thread's answer", thread.Request{Chained: true, Last: []byte(`{"type":"function_call_output","call_id":"call_1","output":"64 degrees"}`)}, true, ""},
		{"Gemini CLI's model router, first request", thread.Request{Instructions: [][]byte{[]byte(`{"parts":[{"text":"\nYou are a specialized Task Routing AI. Your sole function is to analyze the user's request"}],"role":"user"}`)}, Last: []byte(`{"parts":[{"text":"say hi"}],"role":"user"}`)}, false, thread.ReasonMarker},
		{"a plain client", thread.Request{Instructions: [][]byte{plain}, Last: last}, false, ""},
		{"named side", thread.Request{Header: thread.Side, Tools: true, Last: last}, true, thread.ReasonHeader},
		{"named main over a marker", thread.Request{Header: thread.Main, Instructions: [][]byte{title}, Last: last}, true, ""},
		{"an agent's background helper, tools and all", thread.Request{Tools: true, Instructions: [][]byte{[]byte(`{"role":"system","content":"You are now acting as the managed memory extraction subagent for an AI coding assistant."}`)}, Last: last}, true, thread.ReasonMarker},
		{"an agent's memory consolidation, tools and all", thread.Request{Tools: true, Instructions: [][]byte{[]byte(`{"role":"system","content":"You are performing a managed memory dream — a reflective pass over durable memory files."}`)}, Last: last}, true, thread.ReasonMarker},
		{"a helper's phrase deep in a turn's instructions", thread.Request{Tools: true, Instructions: [][]byte{[]byte(`{"role":"system","content":"` + strings.Repeat("Be brief. ", 40) + `You are now acting as the managed memory extraction subagent"}`)}, Last: last}, true, ""},
		{"the agent's own compaction, tools and all", thread.Request{Tools: true, Last: []byte(`{"role":"user","content":"Your task is to create a detailed summary of the conversation so far, paying close attention"}`)}, true, thread.ReasonCompaction},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := thread.Before(&tc.r)
			if got == "" {
				got = thread.After(&tc.r, tc.threadTools)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRestarted(t *testing.T) {
	if !thread.Restarted([]byte(`{"role":"user","content":"This session is being continued from a previous conversation that ran out of context. The summary below"}`)) {
		t.Error("Claude Code's restart from its summary not recognised")
	}
	if thread.Restarted([]byte(`{"role":"user","content":"continue the previous conversation"}`)) {
		t.Error("a user's own words taken for a restart")
	}
}
