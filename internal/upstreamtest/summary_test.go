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
