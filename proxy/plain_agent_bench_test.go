package proxy_test

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/proxy"
)

// agentChat is a chat request as an agent sends it: a system prompt,
// tools, and turns of tool calls and their results (n messages).
func agentChat(n int) string {
	var b strings.Builder
	b.WriteString(`{"model":"gpt-4o","tools":[{"type":"function","function":{"name":"read_file","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}}],"messages":[`)
	b.WriteString(`{"role":"system","content":"You are a coding agent. Read files before you change them, and say what you changed."}`)
	for i := 1; i < n; i++ {
		switch i % 4 {
		case 1:
			fmt.Fprintf(&b, `,{"role":"user","content":"Step %d: look at the handler in server.go and tell me where the request is validated."}`, i)
		case 2:
			fmt.Fprintf(&b, `,{"role":"assistant","content":null,"tool_calls":[{"id":"call_%d","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"server.go\"}"}}]}`, i)
		case 3:
			fmt.Fprintf(&b, `,{"role":"tool","tool_call_id":"call_%d","content":"package proxy\n\nfunc (s *Server) Handle(rc *fasthttp.RequestCtx) {\n\t// ...\n}\n"}`, i-1)
		default:
			fmt.Fprintf(&b, `,{"role":"assistant","content":"The request is validated in chat.CheckRequest before it is forwarded (step %d)."}`, i)
		}
	}
	b.WriteString(`]}`)
	return b.String()
}

// agentMessages is agentChat's conversation as a Messages API request.
func agentMessages(n int) string {
	var b strings.Builder
	b.WriteString(`{"model":"claude-sonnet-4-5","max_tokens":1024,"system":"You are a coding agent. Read files before you change them, and say what you changed.","tools":[{"name":"read_file","input_schema":{"type":"object","properties":{"path":{"type":"string"}}}}],"messages":[`)
	for i := 1; i < n; i++ {
		if i > 1 {
			b.WriteByte(',')
		}
		switch i % 4 {
		case 1:
			fmt.Fprintf(&b, `{"role":"user","content":"Step %d: look at the handler in server.go and tell me where the request is validated."}`, i)
		case 2:
			fmt.Fprintf(&b, `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_%d","name":"read_file","input":{"path":"server.go"}}]}`, i)
		case 3:
			fmt.Fprintf(&b, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":"package proxy\n\nfunc (s *Server) Handle(rc *fasthttp.RequestCtx) {\n\t// ...\n}\n"}]}`, i-1)
		default:
			fmt.Fprintf(&b, `{"role":"assistant","content":"The request is validated in chat.CheckRequest before it is forwarded (step %d)."}`, i)
		}
	}
	b.WriteString(`]}`)
	return b.String()
}

const messagesAnswer = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Sure: here is a short answer of a few words, as a model would give it."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":900,"output_tokens":18}}`

// benchPlainRequest serves body on path through srv without a
// conversation, b.N times, checking for a 200.
func benchPlainRequest(b *testing.B, srv *proxy.Server, path, body string, header ...string) {
	var req fasthttp.Request
	req.Header.SetMethod("POST")
	req.SetRequestURI(path)
	req.Header.Set("Authorization", "Bearer sk-bench")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	req.Header.SetContentType("application/json")
	req.SetBodyString(body)
	rc := &fasthttp.RequestCtx{}
	rc.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, nil)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		rc.Response.Reset()
		srv.Handle(rc)
		if err := rc.Response.BodyWriteTo(io.Discard); err != nil {
			b.Fatal(err)
		}
		if got := rc.Response.StatusCode(); got != 200 {
			b.Fatalf("got status %d: %s", got, rc.Response.Body())
		}
	}
}

// BenchmarkPlainPathAgent is BenchmarkPlainPath with an agent's request
// of 40 messages (tools, tool calls and results).
func BenchmarkPlainPathAgent(b *testing.B) {
	srv, _ := benchServer(b, 16000)
	benchPlainRequest(b, srv, "/v1/chat/completions", agentChat(40))
}

// BenchmarkMessagesPlainPath is the same conversation as a Messages API
// request with no conversation named, to an Anthropic upstream.
func BenchmarkMessagesPlainPath(b *testing.B) {
	g := config.DefaultGlobal()
	g.Defaults.Upstream.Protocol = "anthropic"
	srv, _ := newServer(b, g, func(c *proxy.Config) {
		c.Client = instantUpstream{"application/json", []byte(messagesAnswer)}.client()
	})
	benchPlainRequest(b, srv, "/v1/messages", agentMessages(40), "anthropic-version", "2023-06-01")
}
