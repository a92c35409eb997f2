package upstreamtest

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// deadline is how long a test waits for a signal before failing.
const deadline = 10 * time.Second

func TestFaultStatus(t *testing.T) {
	tests := []struct {
		name           string
		reply          Reply
		wantStatus     int
		wantRetryAfter string
		wantType       string
		wantCode       string
		wantMessage    string
	}{
		{"rate limited", Reply{Fault: FaultStatus, Status: 429, RetryAfter: "7"}, 429, "7", "requests", "rate_limit_exceeded", ""},
		{"default 500", Reply{Fault: FaultStatus}, 500, "", "server_error", "", "The server had an error while processing your request. Sorry about that!"},
		{"status implies the fault", Reply{Status: 503}, 503, "", "server_error", "", ""},
		{"content replaces the message", Reply{Status: 400, Content: "custom"}, 400, "", "invalid_request_error", "", "custom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewTB(t)
			s.Enqueue(tt.reply)
			resp := post(t, s, "/chat/completions", chatBody(`[`+user+`]`, `"stream":true`))
			body := readAll(t, resp)
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("got status %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if got := resp.Header.Get("Retry-After"); got != tt.wantRetryAfter {
				t.Errorf("got retry-after %q, want %q", got, tt.wantRetryAfter)
			}
			e := gjson.GetBytes(body, "error")
			if got := e.Get("type").Str; got != tt.wantType {
				t.Errorf("got type %q, want %q", got, tt.wantType)
			}
			if got := e.Get("code").Str; got != tt.wantCode {
				t.Errorf("got code %q, want %q", got, tt.wantCode)
			}
			if e.Get("message").Str == "" || (tt.wantMessage != "" && e.Get("message").Str != tt.wantMessage) {
				t.Errorf("got message %q, want %q (or any when empty)", e.Get("message").Str, tt.wantMessage)
			}
		})
	}
}

func TestFaultResetBeforeHeaders(t *testing.T) {
	for _, extra := range []string{"", `"stream":true`} {
		t.Run("stream="+extra, func(t *testing.T) {
			s := NewTB(t)
			s.Enqueue(Reply{Fault: FaultResetBeforeHeaders})
			resp, err := client.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(chatBody(`[`+user+`]`, extra)))
			if err == nil {
				resp.Body.Close()
				t.Fatalf("got status %d, want a transport error", resp.StatusCode)
			}
			if s.Count() != 1 {
				t.Errorf("got %d requests recorded, want 1", s.Count())
			}
		})
	}
}

func TestFaultCutMidStream(t *testing.T) {
	s := NewTB(t)
	s.Enqueue(Reply{Content: "one two three four", Fault: FaultCutMidStream})
	resp := post(t, s, "/chat/completions", chatBody(`[`+user+`]`, `"stream":true,"stream_options":{"include_usage":true}`))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("got status %d, want 200", resp.StatusCode)
	}
	st := readSSE(resp.Body)
	if st.err == nil {
		t.Errorf("got a clean end of stream, want a read error")
	}
	if st.done {
		t.Errorf("got [DONE], want none")
	}
	if len(st.events) < 2 || st.events[0].Get("choices.0.delta.role").Str != "assistant" || st.events[1].Get("choices.0.delta.content").Str == "" {
		t.Fatalf("got events %v, want the role delta and some content", st.raw)
	}
	for _, ev := range st.events {
		if ev.Get("choices.0.finish_reason").Type != gjson.Null || ev.Get("usage").Type != gjson.Null {
			t.Errorf("got %s, want no finish or usage before the cut", ev.Raw)
		}
	}
}

func TestFaultCutNonStreaming(t *testing.T) {
	s := NewTB(t)
	s.Enqueue(Reply{Fault: FaultCutMidStream})
	resp := post(t, s, "/chat/completions", chatBody(`[`+user+`]`, ""))
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Errorf("got a complete body, want a read error")
	}
}

func TestFaultStallMidStream(t *testing.T) {
	tests := []struct {
		name  string
		extra string
	}{
		{"streaming", `"stream":true`},
		{"non-streaming", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewTB(t)
			s.Enqueue(Reply{Content: "abcdefgh", Chunks: 8, Fault: FaultStallMidStream})
			resp := post(t, s, "/chat/completions", chatBody(`[`+user+`]`, tt.extra))
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			if err := s.WaitStalled(ctx, 1); err != nil {
				t.Fatalf("got %v, want the answer to stall", err)
			}
			br := bufio.NewReader(resp.Body)
			if tt.extra != "" {
				// The events before the stall were flushed: they can be read now.
				line, err := br.ReadString('\n')
				if err != nil || !strings.HasPrefix(line, `data: {`) {
					t.Fatalf("got %q, %v, want the role event before Release", line, err)
				}
			}
			s.Release()
			rest, err := io.ReadAll(br)
			if err != nil {
				t.Fatalf("got %v after Release, want the answer to complete", err)
			}
			if tt.extra != "" && !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
				t.Errorf("got %q after Release, want the stream to end with [DONE]", rest)
			}
			if err := s.WaitStalled(ctx, 0); err != nil {
				t.Errorf("got %v, want no stalled answer left", err)
			}
		})
	}
}

func TestFaultStallEndsWithTheClient(t *testing.T) {
	s := NewTB(t)
	s.Enqueue(Reply{Fault: FaultStallMidStream})
	reqCtx, cancelReq := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(reqCtx, http.MethodPost, s.URL()+"/chat/completions", strings.NewReader(chatBody(`[`+user+`]`, `"stream":true`)))
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := s.WaitStalled(ctx, 1); err != nil {
		t.Fatalf("got %v, want the stream to stall", err)
	}
	cancelReq()
	if err := s.WaitStalled(ctx, 0); err != nil {
		t.Errorf("got %v, want the stall to end when the client leaves", err)
	}
}

func TestFaultMalformedJSON(t *testing.T) {
	t.Run("non-streaming", func(t *testing.T) {
		s := NewTB(t)
		s.Enqueue(Reply{Fault: FaultMalformedJSON})
		resp := post(t, s, "/chat/completions", chatBody(`[`+user+`]`, ""))
		body := readAll(t, resp)
		if resp.StatusCode != http.StatusOK || gjson.ValidBytes(body) || len(body) == 0 {
			t.Errorf("got %d %q, want 200 with truncated JSON", resp.StatusCode, body)
		}
	})
	t.Run("streaming", func(t *testing.T) {
		s := NewTB(t)
		s.Enqueue(Reply{Fault: FaultMalformedJSON})
		st := readSSE(post(t, s, "/chat/completions", chatBody(`[`+user+`]`, `"stream":true`)).Body)
		bad := 0
		for _, raw := range st.raw {
			if !gjson.Valid(raw) {
				bad++
			}
		}
		if bad != 1 || !st.done {
			t.Errorf("got %d malformed events, done %v, want 1 and a finished stream", bad, st.done)
		}
	})
}

func TestDelayEndsWithTheClient(t *testing.T) {
	s := NewTB(t)
	s.Enqueue(Reply{Delay: time.Hour})
	reqCtx, cancelReq := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(reqCtx, http.MethodPost, s.URL()+"/chat/completions", strings.NewReader(chatBody(`[`+user+`]`, "")))
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := s.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	cancelReq()
	select {
	case err := <-errc:
		if err == nil {
			t.Errorf("got a response, want the delay to hold the headers back")
		}
	case <-ctx.Done():
		t.Fatal("got no return from the client, want a cancelled request")
	}
}

func TestFaultString(t *testing.T) {
	tests := []struct {
		name string
		f    Fault
		want string
	}{
		{"none", FaultNone, "none"},
		{"cut", FaultCutMidStream, "cut-mid-stream"},
		{"after done", FaultEventsAfterDone, "events-after-done"},
		{"no done", FaultNoDone, "no-done"},
		{"error event", FaultErrorEvent, "error-event"},
		{"unknown", Fault(42), "fault(42)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f.String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
