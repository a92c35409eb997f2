package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestFastChat: the load script's fake answers a chat completion of any
// size with one fixed message, streamed or not, refuses a body that is not
// JSON, and sends every other path to the strict fake behind it.
func TestFastChat(t *testing.T) {
	strict := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	srv := httptest.NewServer(fastChat(strict))
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
	if status, _, _ := post("/v1/responses", `{}`); status != http.StatusTeapot {
		t.Errorf("/v1/responses: %d, want the strict fake's answer", status)
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
