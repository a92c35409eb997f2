package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/recallproxy/recall/internal/upstreamtest"
)

// TestControl checks the control paths: /_fake/last answers 404 before any
// chat request and then the last one's messages; a reply posted to
// /_fake/reply answers the next chat completion; every other path reaches
// the fake.
func TestControl(t *testing.T) {
	fake := upstreamtest.NewTB(t)
	srv := httptest.NewServer(withControl(fake))
	defer srv.Close()

	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	chat := `{"model":"gpt-4o","messages":[{"role":"user","content":"weather?"}]}`
	tests := []struct {
		name, method, path, body string
		status                   int
		contains                 []string
	}{
		{"last before any chat", "GET", "/_fake/last", "", 404, []string{"no request to /v1/chat/completions yet"}},
		{"models reach the fake", "GET", "/v1/models", "", 200, []string{`"gpt-4o"`}},
		{"bad reply", "POST", "/_fake/reply", `{"toolCalls":`, 400, []string{"want an upstreamtest.Reply"}},
		{"queue two parallel calls", "POST", "/_fake/reply", `{"toolCalls":[{"name":"get_weather","arguments":"{}"},{"name":"get_time","arguments":"{}"}]}`, 204, nil},
		{"the next chat gets them", "POST", "/v1/chat/completions", chat, 200, []string{`"finish_reason":"tool_calls"`, `"name":"get_weather"`, `"name":"get_time"`}},
		{"then echoes again", "POST", "/v1/chat/completions", chat, 200, []string{`"content":"echo: weather?"`}},
		{"last is the last chat", "GET", "/_fake/last", "", 200, []string{`"model":"gpt-4o"`, `"messages":[{"role":"user","content":"weather?"}]`, `"body":{"model":"gpt-4o"`, `"content-type":"application/json"`}},
		{"last Responses call before any", "GET", "/_fake/last?path=/v1/responses", "", 404, []string{"no request to /v1/responses yet"}},
		{"a Responses call", "POST", "/v1/responses", `{"model":"gpt-4.1","input":"hi","instructions":"be brief"}`, 200, []string{`"text":"echo: hi"`}},
		{"last Responses call", "GET", "/_fake/last?path=/v1/responses", "", 200, []string{`"model":"gpt-4.1"`, `"messages":[{"role":"user","content":"hi"}]`, `"instructions":"be brief"`}},
		{"last chat is still the chat", "GET", "/_fake/last", "", 200, []string{`"model":"gpt-4o"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := do(tt.method, tt.path, tt.body)
			if status != tt.status {
				t.Fatalf("got status %d, want %d: %s", status, tt.status, body)
			}
			for _, s := range tt.contains {
				if !strings.Contains(body, s) {
					t.Errorf("got body %s, want it to contain %s", body, s)
				}
			}
		})
	}
	var last struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if _, body := do("GET", "/_fake/last", ""); json.Unmarshal([]byte(body), &last) != nil || len(last.Messages) != 1 {
		t.Errorf("got %s, want one message", body)
	}
}

// TestControlRequests checks GET /_fake/requests: every recorded request of
// any path, oldest first, with its body as JSON and the fake's rejection.
func TestControlRequests(t *testing.T) {
	fake := upstreamtest.NewTB(t)
	srv := httptest.NewServer(withControl(fake))
	defer srv.Close()
	post := func(path, body string, header map[string]string) {
		t.Helper()
		req, err := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	anth := map[string]string{"X-Api-Key": "k", "Anthropic-Version": "2023-06-01"}
	post("/v1/messages?beta=true", `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, anth)
	post("/v1/messages", `{"model":"c","max_tokens":5,"messages":[{"role":"assistant","content":"x"}]}`, anth)
	post("/v1/responses", `{"model":"gpt-4o","input":"yo"}`, nil)

	resp, err := http.Get(srv.URL + "/_fake/requests")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got []recorded
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	want := []struct{ path, query, rejected, model string }{
		{"/v1/messages", "beta=true", "", "c"},
		{"/v1/messages", "", "first message", "c"},
		{"/v1/responses", "", "", "gpt-4o"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d requests, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		var body struct{ Model string }
		_ = json.Unmarshal(g.Body, &body)
		if g.Method != "POST" || g.Path != w.path || g.Query != w.query || body.Model != w.model ||
			(w.rejected == "") != (g.Rejected == "") || !strings.Contains(g.Rejected, w.rejected) {
			t.Errorf("request %d: got %s %s?%s model %q rejected %q, want POST %s?%s model %q rejected %q",
				i, g.Method, g.Path, g.Query, body.Model, g.Rejected, w.path, w.query, w.model, w.rejected)
		}
	}
	if got[0].Header.Get("X-Api-Key") != "k" {
		t.Errorf("header: got %v, want the X-Api-Key sent", got[0].Header)
	}
}
