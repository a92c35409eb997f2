package proxy_test

import (
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/internal/apierr"
)

// FuzzHandle throws arbitrary paths, headers and bodies at the whole
// handler (instant in-process upstream, real Badger): it never panics,
// every refusal is an OpenAI-shaped JSON error, and a refused request
// stores nothing.
func FuzzHandle(f *testing.F) {
	f.Add("/v1/chat/completions", "c1", "", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	f.Add("/c/c1/v1/chat/completions", "", "append", `{"messages":[{"role":"tool","tool_call_id":"x","content":"r"}]}`)
	f.Add("/v1/chat/completions", "c2", "sync", `{"messages":[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`)
	f.Add("/v1/chat/completions", "bad id!", "", `{"messages":[]}`)
	f.Add("/c//v1/chat/completions", "", "nope", `{"messages":"x"}`)
	f.Add("/v1/chat/completions", "c3", "", `{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"stream":true}`)
	f.Add("/v1/chat/completions", strings.Repeat("a", 129), "", `[`)
	f.Add("/nope", "", "", ``)
	// An orphan tool result after a real call; 40 tiny messages (the shape
	// of a turn too big for one store transaction); a turn over the budget.
	f.Add("/v1/chat/completions", "c4", "", `{"messages":[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"b","content":"r"}]}`)
	f.Add("/v1/chat/completions", "c5", "", `{"messages":[`+strings.Repeat(`{"role":"user","content":"m"},`, 39)+`{"role":"user","content":"m"}]}`)
	f.Add("/v1/chat/completions", "c6", "", `{"model":"gpt-4","messages":[{"role":"user","content":"`+strings.Repeat("word ", 9000)+`"}]}`)
	f.Add("/c/%2e%2e/v1/chat/completions", "", "", `{"messages":[{"role":"user","content":"x"}]}`)
	f.Add("/v1/models%3Fapi-version=x", "..", "", ``)

	srv, store := benchServer(f, 4000)
	f.Fuzz(func(t *testing.T, path, conv, mode, body string) {
		var req fasthttp.Request
		req.Header.SetMethod("POST")
		req.SetRequestURI(path)
		req.Header.Set("Authorization", "Bearer sk-fuzz")
		if conv != "" {
			req.Header.Set("X-Conversation-ID", conv)
		}
		if mode != "" {
			req.Header.Set("X-Recall-History", mode)
		}
		req.SetBodyString(body)
		var rc fasthttp.RequestCtx
		rc.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, nil)

		before := storedCount(t, store, conv)
		srv.Handle(&rc)
		status := rc.Response.StatusCode()
		if status >= 400 {
			var e apierr.OpenAIBody
			if err := json.Unmarshal(rc.Response.Body(), &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
				t.Fatalf("status %d with a body that is not an OpenAI error: %q", status, rc.Response.Body())
			}
			if after := storedCount(t, store, conv); after != before {
				t.Fatalf("refused request (%d) changed storage: %d -> %d messages", status, before, after)
			}
		}
	})
}
