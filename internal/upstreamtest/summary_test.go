package upstreamtest

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

func TestSummaryCallsAreRecognisedAndAnsweredFromTheirInput(t *testing.T) {
	s := NewTB(t)
	s.Enqueue(Reply{Content: "chat reply"})
	s.EnqueueSummary(Reply{Status: 503})
	post := func(body string) (int, gjson.Result) {
		t.Helper()
		resp, err := http.Post(s.URL()+"/chat/completions", "application/json", bytes.NewBufferString(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, gjson.ParseBytes(b.Bytes())
	}
	summaryCall := `{"model":"m","messages":[{"role":"system","content":"Write the running summary. Begin with Title: then"},` +
		`{"role":"user","content":"Previous summary:\nalpha; beta\n\nTranscript of the turns to add:\nuser: gamma one two\nassistant: ok\nuser: delta\n"}]}`
	// The scripted failure goes to the summary call, not the chat call.
	if status, _ := post(summaryCall); status != 503 {
		t.Fatalf("got status %d, want the scripted 503", status)
	}
	if _, r := post(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`); r.Get("choices.0.message.content").Str != "chat reply" {
		t.Fatalf("chat call got %s, want the scripted chat reply", r.Raw)
	}
	_, r := post(summaryCall)
	want := "Title: Talk about gamma one two\n\nalpha; beta; gamma one two; delta"
	if got := r.Get("choices.0.message.content").Str; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// A chat request carrying Recall's injected summary is a chat request.
	if _, r := post(`{"model":"m","messages":[{"role":"system","content":"Summary of the earlier conversation:\nnotes"},{"role":"user","content":"hi"}]}`); r.Get("choices.0.message.content").Str != "echo: hi" {
		t.Errorf("a chat request with an injected summary got %s, want the echo", r.Raw)
	}
	if got := len(s.SummaryCalls()); got != 2 {
		t.Errorf("got %d summary calls recorded, want 2", got)
	}

	// Hold keeps the call in flight until Release.
	s.EnqueueSummary(Reply{Hold: true})
	done := make(chan int, 1)
	go func() { status, _ := post(summaryCall); done <- status }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitStalled(ctx, 1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		t.Fatal("a held call answered before Release")
	default:
	}
	s.Release()
	if status := <-done; status != 200 {
		t.Errorf("held call got %d after Release, want 200", status)
	}
}

// The fake's summary keeps a user message's request, not the
// <system-reminder> blocks a coding agent (Claude Code) puts before it, as
// a model's summary would; a message of reminders only, or of one block of
// context (Codex's <environment_context>), adds nothing, and the block of
// context a message opens with (Gemini CLI's <session_context>) goes; a
// message's later lines (Claude Code's restart from its own summary
// announces it on the first) stay, on one line.
func TestSummaryAnswerLeavesOutSystemReminders(t *testing.T) {
	transcript := "Transcript of the turns to add:\n" +
		"user: <system-reminder>\nAs you answer the user's questions, you can use the following context:\n# claudeMd\n</system-reminder>\n" +
		"<system-reminder>The skills are listed.</system-reminder>\n\n\nday task 07: note the word w07x\n" +
		"assistant called Read({\"file_path\":\"notes.txt\"}) [toolu_1]\n" +
		"tool result (toolu_1): the secret is 42\n" +
		"user: <system-reminder>\nonly a reminder\n</system-reminder>\n" +
		"user: <environment_context>\n  <cwd>/work</cwd>\n</environment_context>\n" +
		"assistant: echo: day task 07\n" +
		"user: This session is being continued from a previous conversation.\n\nSummary: the user asked \"day task 05\".\n" +
		"user: plain request\n" +
		"user: <session_context>\nThis is the Gemini CLI.\n<folder>/work</folder>\n</session_context>\nday task 08: note the word w08x\n"
	want := "day task 07: note the word w07x; " +
		"This session is being continued from a previous conversation. Summary: the user asked \"day task 05\".; plain request; " +
		"day task 08: note the word w08x"
	if got := SummaryAnswer("Write the running summary.", transcript); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := SummaryAnswer("Begin with Title: then", transcript), "Title: Talk about day task 07: note\n\n"+want; got != want {
		t.Errorf("with a title: got %q, want %q", got, want)
	}
}
