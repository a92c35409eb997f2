package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/protocol/gemini"
	"github.com/recallproxy/recall/protocol/messages"
	"github.com/recallproxy/recall/protocol/responses"
	"github.com/recallproxy/recall/wire"
)

// TestFastAnswers: the load script's fake answers a chat completion, a
// Messages request and a Responses request of any size with one fixed
// message in the path's protocol, streamed or not, refuses a body that
// is not JSON, and sends every other path to the strict fake behind it.
func TestFastAnswers(t *testing.T) {
	strict := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	srv := httptest.NewServer(fastAnswers(strict))
	defer srv.Close()
	post := func(path, body string) (int, string, string) {
		t.Helper()
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	big := `{"model":"m","messages":[` + strings.Repeat(`{"role":"user","content":"hi"},`, 1000) + `{"role":"user","content":"hi"}]}`

	status, ctype, body := post("/v1/chat/completions", big)
	var answer struct {
		Choices []struct {
			Message      struct{ Role, Content string }
			FinishReason string `json:"finish_reason"`
		}
	}
	if err := json.Unmarshal([]byte(body), &answer); status != 200 || ctype != "application/json" || err != nil ||
		len(answer.Choices) != 1 || answer.Choices[0].Message.Content != "Hello there." || answer.Choices[0].FinishReason != "stop" {
		t.Errorf("non-streamed: %d %s %s (%v), want the fixed answer", status, ctype, body, err)
	}

	status, ctype, body = post("/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	events := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
	if status != 200 || ctype != "text/event-stream" || len(events) != 4 || events[3] != "data: [DONE]" {
		t.Fatalf("streamed: %d %s %q, want three chunks and [DONE]", status, ctype, events)
	}
	for _, ev := range events[:3] {
		var chunk map[string]any
		if err := json.Unmarshal([]byte(strings.TrimPrefix(ev, "data: ")), &chunk); err != nil || chunk["object"] != "chat.completion.chunk" {
			t.Errorf("chunk %q: %v", ev, err)
		}
	}

	if status, _, _ := post("/v1/chat/completions", `{"model":`); status != http.StatusBadRequest {
		t.Errorf("a body that is not JSON: %d, want 400", status)
	}
	if status, _, _ := post("/v1/messages", `{"model":`); status != http.StatusBadRequest {
		t.Errorf("a Messages body that is not JSON: %d, want 400", status)
	}
	for _, path := range []string{"/v1/embeddings", "/v1/messages/count_tokens", "/v1/responses/compact", "/v1/models"} {
		if status, _, _ := post(path, `{}`); status != http.StatusTeapot {
			t.Errorf("%s: %d, want the strict fake's answer", path, status)
		}
	}
}

// The fake's Messages, Responses and Gemini answers are ones Recall reads as a
// whole answer of "Hello there.", streamed or not, through the protocol
// packages it reads its upstreams with.
func TestFastAnswersReadAsRecallReadsThem(t *testing.T) {
	srv := httptest.NewServer(fastAnswers(http.NotFoundHandler()))
	defer srv.Close()
	for _, tt := range []struct {
		path, streamPath string // streamPath: Gemini names the stream in the path
		up               wire.Upstream
	}{
		{"/v1/chat/completions", "", chat.Protocol{}},
		{"/v1/messages", "", messages.Upstream{}},
		{"/v1/responses", "", responses.Upstream{}},
		{"/v1beta/models/m:generateContent", "/v1beta/models/m:streamGenerateContent?alt=sse", gemini.Upstream{}},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream=%v", tt.path, stream), func(t *testing.T) {
				body := `{"model":"m","max_tokens":16,"input":[],"messages":[{"role":"user","content":"hi"}]}`
				if stream {
					body = `{"model":"m","stream":true,"max_tokens":16,"input":[],"messages":[{"role":"user","content":"hi"}]}`
				}
				path := tt.path
				if stream && tt.streamPath != "" {
					path = tt.streamPath
				}
				resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var a wire.Answer
				if !stream {
					raw, err := io.ReadAll(resp.Body)
					if err != nil {
						t.Fatal(err)
					}
					if a, err = tt.up.ParseAnswer(raw); err != nil {
						t.Fatalf("ParseAnswer: %v", err)
					}
				} else {
					asm, er, done := tt.up.NewAssembler(), chat.NewEventReader(resp.Body, 0), false
					for !done {
						ev, err := er.Next()
						if err != nil {
							t.Fatalf("the stream ended before its answer did: %v", err)
						}
						if len(ev.Data) == 0 {
							continue
						}
						if _, done, err = asm.Event(nil, ev.Name, ev.Data); err != nil {
							t.Fatalf("event %s: %v", ev.Data, err)
						}
					}
					if a, err = asm.Answer(); err != nil {
						t.Fatalf("Answer: %v", err)
					}
				}
				if text := string(wire.AppendText(nil, a.Message)); text != "Hello there." || a.Stop != wire.StopEnd || len(a.Stored) != 1 {
					t.Errorf("got %q, stop %q, %d stored; want \"Hello there.\", stop, 1", text, a.Stop, len(a.Stored))
				}
			})
		}
	}
}

// TestStreamed: the flag is the "stream" key's value wherever the key
// comes, with or without spaces; a "stream" that is a value, or inside a
// message's text, is not the key.
func TestStreamed(t *testing.T) {
	messages := `"messages":[{"role":"user","content":"say \"stream\":true or \"stream\": true"},{"role":"user","content":"stream"}]`
	for _, c := range []struct {
		body string
		want bool
	}{
		{`{"model":"m",` + messages + `,"stream":true}`, true},
		{`{"stream": true,` + messages + `}`, true},
		{`{"model":"m",` + messages + `,"stream" : false}`, false},
		{`{"model":"m",` + messages + `}`, false},
		{`{"model":"stream",` + messages + `,"stream":true}`, true},
		{`{"model":"stream",` + messages + `}`, false},
	} {
		if got := streamed([]byte(c.body)); got != c.want {
			t.Errorf("streamed(%s) = %v, want %v", c.body, got, c.want)
		}
	}
}
