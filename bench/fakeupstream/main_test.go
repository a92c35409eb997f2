package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

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

	got := fakeRequests(t, srv.URL)
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

// TestControlRequestsWebSocket checks that GET /_fake/requests tells a
// response.create message on a WebSocket from a POST, and when each came:
// through the control paths, the fake's WebSocket route is served as is.
func TestControlRequestsWebSocket(t *testing.T) {
	fake := upstreamtest.NewTB(t)
	srv := httptest.NewServer(withControl(fake))
	defer srv.Close()
	before := time.Now()
	resp, err := http.Post(srv.URL+"/v1/responses", "application/json", strings.NewReader(`{"model":"gpt-4o","input":"yo"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/v1/responses", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"response.create","model":"gpt-4o","input":"yo"}`)); err != nil {
		t.Fatal(err)
	}
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, msg, err := ws.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(msg), `"type":"response.completed"`) {
			break
		}
	}

	got := fakeRequests(t, srv.URL)
	if len(got) != 2 {
		t.Fatalf("got %d requests, want 2: %+v", len(got), got)
	}
	if g := got[0]; g.Method != "POST" || g.WebSocket {
		t.Errorf("request 0: got %s websocket %v, want a POST", g.Method, g.WebSocket)
	}
	if g := got[1]; g.Method != "GET" || g.Path != "/v1/responses" || !g.WebSocket || !strings.Contains(string(g.Body), `"response.create"`) {
		t.Errorf("request 1: got %s %s websocket %v body %s, want the message on the socket", g.Method, g.Path, g.WebSocket, g.Body)
	}
	if got[0].At.Before(before) || got[1].At.Before(got[0].At) {
		t.Errorf("at: got %v then %v, want both after %v, in order", got[0].At, got[1].At, before)
	}
}

// fakeRequests reads what the fake at url recorded (GET /_fake/requests).
func fakeRequests(t *testing.T, url string) []upstreamtest.Recorded {
	t.Helper()
	resp, err := http.Get(url + "/_fake/requests")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got []upstreamtest.Recorded
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	return got
}
