package upstreamtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// client does not ask for compression, so a gzip body arrives as sent.
var client = &http.Client{Transport: &http.Transport{DisableCompression: true}}

// post sends body to path under the server's /v1 and returns the response.
func post(t *testing.T, s *Server, path, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-test")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("post %s: %v", path, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// readAll reads the whole body and fails the test on a read error.
func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return b
}

// chatBody builds a chat-completions body with extra top-level fields.
func chatBody(messages string, extra string) string {
	b := `{"model":"gpt-test","messages":` + messages
	if extra != "" {
		b += "," + extra
	}
	return b + "}"
}

func TestChatNonStreaming(t *testing.T) {
	s := NewTB(t)
	tests := []struct {
		name       string
		reply      *Reply
		extra      string
		wantChoice []string // per choice: message JSON as gjson would print selected fields
		wantFinish string
	}{
		{
			name:       "default echo",
			wantChoice: []string{`{"role":"assistant","content":"echo: hi","refusal":null}`},
			wantFinish: "stop",
		},
		{
			name:       "scripted content",
			reply:      &Reply{Content: "scripted"},
			wantChoice: []string{`{"role":"assistant","content":"scripted","refusal":null}`},
			wantFinish: "stop",
		},
		{
			name:  "parallel tool calls",
			reply: &Reply{ToolCalls: []ToolCall{{ID: "call_1", Name: "f", Arguments: `{"a":1}`}, {ID: "call_2", Name: "g", Arguments: `{}`}}},
			wantChoice: []string{`{"role":"assistant","content":null,"refusal":null,"tool_calls":[` +
				`{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},` +
				`{"id":"call_2","type":"function","function":{"name":"g","arguments":"{}"}}]}`},
			wantFinish: "tool_calls",
		},
		{
			name:       "refusal",
			reply:      &Reply{Refusal: "no"},
			wantChoice: []string{`{"role":"assistant","content":null,"refusal":"no"}`},
			wantFinish: "stop",
		},
		{
			name:  "n choices",
			extra: `"n":3`,
			wantChoice: []string{
				`{"role":"assistant","content":"[0] echo: hi","refusal":null}`,
				`{"role":"assistant","content":"[1] echo: hi","refusal":null}`,
				`{"role":"assistant","content":"[2] echo: hi","refusal":null}`,
			},
			wantFinish: "stop",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.reply != nil {
				s.Enqueue(*tt.reply)
			}
			resp := post(t, s, "/chat/completions", chatBody(`[{"role":"user","content":"hi"}]`, tt.extra))
			body := readAll(t, resp)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("got status %d, want 200 (%s)", resp.StatusCode, body)
			}
			if !json.Valid(body) {
				t.Fatalf("got invalid JSON %s", body)
			}
			if got := resp.Header.Get("X-Request-Id"); !strings.HasPrefix(got, "req_") {
				t.Errorf("got x-request-id %q, want req_<n>", got)
			}
			if got := resp.Header.Get("X-Ratelimit-Remaining-Requests"); got != "99" {
				t.Errorf("got x-ratelimit-remaining-requests %q, want 99", got)
			}
			r := gjson.ParseBytes(body)
			if got := r.Get("object").Str; got != "chat.completion" {
				t.Errorf("got object %q, want chat.completion", got)
			}
			if got := r.Get("id").Str; !strings.HasPrefix(got, "chatcmpl-") {
				t.Errorf("got id %q, want chatcmpl-<n>", got)
			}
			if got := r.Get("model").Str; got != "gpt-test" {
				t.Errorf("got model %q, want gpt-test", got)
			}
			choices := r.Get("choices").Array()
			if len(choices) != len(tt.wantChoice) {
				t.Fatalf("got %d choices, want %d", len(choices), len(tt.wantChoice))
			}
			for i, c := range choices {
				if got := c.Get("index").Int(); got != int64(i) {
					t.Errorf("choice %d: got index %d, want %d", i, got, i)
				}
				if got := c.Get("finish_reason").Str; got != tt.wantFinish {
					t.Errorf("choice %d: got finish_reason %q, want %q", i, got, tt.wantFinish)
				}
				got := selectKeys(c.Get("message"), "role", "content", "refusal", "tool_calls")
				if got != tt.wantChoice[i] {
					t.Errorf("choice %d: got message %s, want %s", i, got, tt.wantChoice[i])
				}
			}
			u := r.Get("usage")
			p, c, tot := u.Get("prompt_tokens").Int(), u.Get("completion_tokens").Int(), u.Get("total_tokens").Int()
			if p <= 0 || c <= 0 || tot != p+c {
				t.Errorf("got usage %s, want positive counts that add up", u.Raw)
			}
		})
	}
}

// selectKeys renders the listed keys of obj that exist, in that order.
func selectKeys(obj gjson.Result, keys ...string) string {
	var b bytes.Buffer
	b.WriteByte('{')
	for _, k := range keys {
		v := obj.Get(k)
		if !v.Exists() {
			continue
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + k + `":` + v.Raw)
	}
	b.WriteByte('}')
	return b.String()
}

func TestChatRejects(t *testing.T) {
	tests := []struct {
		name string
		body string
		want APIError
	}{
		{"invalid json", `{"model":`, APIError{msgParseBody, "invalid_request_error", "", ""}},
		{"not an object", `[1]`, APIError{msgParseBody, "invalid_request_error", "", ""}},
		{"missing messages", `{"model":"m"}`, APIError{"Missing required parameter: 'messages'.", "invalid_request_error", "messages", "missing_required_parameter"}},
		{"messages not an array", `{"model":"m","messages":"hi"}`, APIError{"Invalid type for 'messages': expected an array, but got a string instead.", "invalid_request_error", "messages", "invalid_type"}},
		{"unanswered call", chatBody(`[`+user+`,`+callA+`]`, ""), APIError{msgCallsUnanswered + "call_a", "invalid_request_error", "messages.[1].role", ""}},
		{"response message resent as is", chatBody(`[`+user+`,{"role":"assistant","content":"x","refusal":null,"annotations":[]},`+user+`]`, ""), APIError{"Unknown parameter: 'messages[1].annotations'.", "invalid_request_error", "messages[1].annotations", "unknown_parameter"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewTB(t)
			s.Enqueue(Reply{Content: "kept for the next valid request"})
			resp := post(t, s, "/chat/completions", tt.body)
			body := readAll(t, resp)
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("got status %d, want 400", resp.StatusCode)
			}
			if got, want := string(body), string(tt.want.JSON()); got != want {
				t.Errorf("got body %s, want %s", got, want)
			}
			last := s.Last()
			if last.Rejected == nil || *last.Rejected != tt.want {
				t.Errorf("got Rejected %+v, want %+v", last.Rejected, tt.want)
			}
			if string(last.Body) != tt.body {
				t.Errorf("got recorded body %s, want %s", last.Body, tt.body)
			}
			// A rejected request takes no scripted reply.
			body = readAll(t, post(t, s, "/chat/completions", chatBody(`[`+user+`]`, "")))
			if got := gjson.GetBytes(body, "choices.0.message.content").Str; got != "kept for the next valid request" {
				t.Errorf("got content %q after a rejection, want the queued reply", got)
			}
		})
	}
}

func TestRequestsRecorded(t *testing.T) {
	s := NewTB(t)
	body := chatBody(`[`+sys+`,`+user+`]`, `"stream":false`)
	readAll(t, post(t, s, "/chat/completions", body))
	readAll(t, post(t, s, "/embeddings?x=1", `{"input":"a"}`))

	got := s.Requests()
	if len(got) != 2 {
		t.Fatalf("got %d requests, want 2", len(got))
	}
	chat := got[0]
	if chat.Method != http.MethodPost || chat.Path != "/v1/chat/completions" || chat.Model != "gpt-test" || chat.Stream {
		t.Errorf("got %s %s model %q stream %v, want POST /v1/chat/completions model gpt-test stream false", chat.Method, chat.Path, chat.Model, chat.Stream)
	}
	if len(chat.Messages) != 2 || string(chat.Messages[0]) != sys || string(chat.Messages[1]) != user {
		t.Errorf("got messages %s, want [%s %s]", chat.Messages, sys, user)
	}
	if got := chat.Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("got authorization %q, want Bearer sk-test", got)
	}
	if chat.Rejected != nil {
		t.Errorf("got Rejected %+v, want nil", chat.Rejected)
	}
	if got[1].Path != "/v1/embeddings" || got[1].Query != "x=1" || got[1].Messages != nil {
		t.Errorf("got %s?%s with %d messages, want /v1/embeddings?x=1 with none", got[1].Path, got[1].Query, len(got[1].Messages))
	}
	if s.Last().Path != "/v1/embeddings" {
		t.Errorf("got last path %q, want /v1/embeddings", s.Last().Path)
	}
	s.Reset()
	if n := len(s.Requests()); n != 0 || s.Count() != 0 || s.Last().Path != "" {
		t.Errorf("got %d requests, count %d after Reset, want none", n, s.Count())
	}
}

func TestEnqueueFIFOAndReset(t *testing.T) {
	s := NewTB(t)
	s.Enqueue(Reply{Content: "one"}, Reply{Content: "two"})
	s.Enqueue(Reply{Content: "three"})
	body := chatBody(`[`+user+`]`, "")
	for _, want := range []string{"one", "two", "three", "echo: hi"} {
		got := gjson.GetBytes(readAll(t, post(t, s, "/chat/completions", body)), "choices.0.message.content").Str
		if got != want {
			t.Errorf("got content %q, want %q", got, want)
		}
	}
	s.Enqueue(Reply{Content: "forgotten"})
	s.Reset()
	got := gjson.GetBytes(readAll(t, post(t, s, "/chat/completions", body)), "choices.0.message.content").Str
	if got != "echo: hi" {
		t.Errorf("got content %q after Reset, want echo: hi", got)
	}
}

func TestEchoOfLastUserText(t *testing.T) {
	tests := []struct {
		name     string
		messages string
		want     string
	}{
		{"string content", `[` + user + `,` + asst + `,{"role":"user","content":"again"}]`, "echo: again"},
		{"text parts", `[` + userParts + `]`, "echo: look"},
		{"last user before tool results", `[` + user + `,` + callA + `,` + toolA + `]`, "echo: hi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewTB(t)
			got := gjson.GetBytes(readAll(t, post(t, s, "/chat/completions", chatBody(tt.messages, ""))), "choices.0.message.content").Str
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestKeepRequests(t *testing.T) {
	tests := []struct {
		name string
		opts []Option
		want []string // kept paths
	}{
		{"all by default", nil, []string{"/v1/a", "/v1/b", "/v1/c"}},
		{"none", []Option{WithKeepRequests(0)}, nil},
		{"last two", []Option{WithKeepRequests(2)}, []string{"/v1/b", "/v1/c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewTB(t, tt.opts...)
			for _, p := range []string{"/a", "/b", "/c"} {
				readAll(t, post(t, s, p, "{}"))
			}
			var got []string
			for _, r := range s.Requests() {
				got = append(got, r.Path)
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("got kept %v, want %v", got, tt.want)
			}
			if s.Count() != 3 {
				t.Errorf("got count %d, want 3", s.Count())
			}
		})
	}
}

func TestWaitRequests(t *testing.T) {
	s := NewTB(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := client.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(chatBody(`[`+user+`]`, "")))
		if err == nil {
			resp.Body.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitRequests(ctx, 1); err != nil {
		t.Fatalf("got %v, want the request to arrive", err)
	}
	<-done

	short, cancelShort := context.WithCancel(context.Background())
	cancelShort()
	if err := s.WaitRequests(short, 2); err == nil {
		t.Errorf("got nil waiting for a request that never comes, want an error")
	}
}

func BenchmarkChat(b *testing.B) {
	for _, tt := range []struct{ name, extra string }{
		{"non-streaming", ""},
		{"streaming", `"stream":true,"stream_options":{"include_usage":true}`},
	} {
		b.Run(tt.name, func(b *testing.B) {
			s := newServer(WithKeepRequests(0))
			h := s.Handler()
			trace := []string{sys, user}
			for range 10 {
				trace = append(trace, callsAB, toolA, toolB, asst, user)
			}
			body := []byte(chatBody("["+strings.Join(trace, ",")+"]", tt.extra))
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body)))
				if w.Code != http.StatusOK {
					b.Fatalf("got status %d, want 200", w.Code)
				}
			}
		})
	}
}
