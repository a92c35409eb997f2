package upstreamtest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// completion is one answer being produced: the request's settings and the
// scripted reply resolved into per-choice contents.
type completion struct {
	id      string
	created int64
	model   string
	stream  bool
	usage   bool // stream_options.include_usage
	reply   Reply
	content []string // per choice; nil entries mean content null
	calls   []ToolCall
	finish  string

	promptTokens, completionTokens int
}

// request holds the fields of a chat-completions body the fake acts on.
type request struct {
	model        string
	stream       bool
	includeUsage bool
	n            int
	messages     gjson.Result   // the raw "messages" value
	msgs         []gjson.Result // its elements, when an array
}

// parseInto reads root's top-level fields into rq in one pass; it always
// returns true, so that it can open a switch case.
func parseInto(rq *request, root gjson.Result) bool {
	*rq = request{n: 1}
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model":
			rq.model = v.Str
		case "stream":
			rq.stream = v.Type == gjson.True
		case "stream_options":
			rq.includeUsage = v.Get("include_usage").Type == gjson.True
		case "n":
			if v.Type == gjson.Number && v.Int() > 1 {
				rq.n = int(min(v.Int(), 128))
			}
		case "messages":
			rq.messages = v
		}
		return true
	})
	rq.msgs = elements(rq.messages)
	return true
}

// elements returns the elements of v when v is an array, else none.
func elements(v gjson.Result) []gjson.Result {
	if !v.IsArray() {
		return nil
	}
	return v.Array()
}

// countPrompt is a request's prompt tokens as its usage reports them:
// about a quarter of its messages' bytes, or WithPromptTokens's count.
func (s *Server) countPrompt(rq *request) int {
	if s.promptTokens == nil {
		return max(1, len(rq.messages.Raw)/4)
	}
	msgs := make([]json.RawMessage, len(rq.msgs))
	for i, m := range rq.msgs {
		msgs[i] = json.RawMessage(m.Raw)
	}
	return s.promptTokens(rq.model, msgs)
}

// checkWindow refuses a request whose prompt is over its model's window
// (WithWindow), counted as its usage would be.
func (s *Server) checkWindow(rq *request) *APIError {
	w, ok := s.windows[rq.model]
	if !ok {
		return nil
	}
	n := s.countPrompt(rq)
	if n <= w {
		return nil
	}
	return &APIError{Message: fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", w, n),
		Type: invalidRequest, Param: "messages", Code: "context_length_exceeded"}
}

// serveChat answers POST /v1/chat/completions.
func (s *Server) serveChat(w http.ResponseWriter, r *http.Request, body []byte) {
	rec := s.receivedFor(r, body)
	var rq request
	var apiErr *APIError
	root := parseBody(body)
	switch {
	case !root.IsObject():
		apiErr = &APIError{Message: msgParseBody, Type: invalidRequest}
	case parseInto(&rq, root) && !rq.messages.IsArray():
		apiErr = validateArray(rq.messages) // missing or of the wrong type
	default:
		apiErr = validate(rq.msgs)
		if apiErr == nil {
			apiErr = s.checkWindow(&rq)
		}
	}
	summary := apiErr == nil && isSummaryCall(&rq, root)
	reply, gate := s.takeReply(rec, rq.model, rq.stream, summary, rq.msgs, apiErr)
	if apiErr != nil {
		s.writeError(w, http.StatusBadRequest, apiErr, "")
		return
	}
	if summary && reply.Content == "" && reply.Refusal == "" && len(reply.ToolCalls) == 0 {
		reply.Content = SummaryAnswer(rq.msgs[0].Get("content").Str, rq.msgs[1].Get("content").Str)
		limit := root.Get("max_completion_tokens").Int()
		if limit == 0 {
			limit = root.Get("max_tokens").Int()
		}
		if !s.unbounded {
			reply.Content = CapSummary(reply.Content, int(limit))
		}
	}

	ctx := r.Context()
	if !s.beforeOpenAIAnswer(ctx, w, reply, gate) {
		return
	}

	c := s.newCompletion(&rq, reply)
	s.setAnswerHeaders(w.Header(), reply)
	if c.stream {
		s.writeStream(ctx, w, c, gate)
		return
	}
	s.writeCompletion(ctx, w, c, gate)
}

// newCompletion resolves the reply against the request.
func (s *Server) newCompletion(rq *request, reply Reply) *completion {
	seq := s.nextSeq()
	c := &completion{
		id:      "chatcmpl-" + strconv.FormatUint(seq, 10),
		created: s.created,
		model:   rq.model,
		stream:  rq.stream,
		usage:   rq.includeUsage,
		reply:   reply,
		finish:  "stop",
	}
	if c.model == "" {
		c.model = "gpt-4o-mini"
	}
	n := rq.n
	text := reply.Content
	hasText := text != "" || (reply.Content == "" && reply.Refusal == "" && len(reply.ToolCalls) == 0)
	if reply.Content == "" && reply.Refusal == "" && len(reply.ToolCalls) == 0 {
		text = "echo: " + lastUserText(rq.msgs, "text")
		if s.describe {
			text += describe(rq.msgs)
		}
	}
	if len(reply.ToolCalls) > 0 {
		c.finish = "tool_calls"
		c.calls = make([]ToolCall, len(reply.ToolCalls))
		for i, tc := range reply.ToolCalls {
			if tc.ID == "" {
				tc.ID = "call_" + strconv.FormatUint(seq, 10) + "_" + strconv.Itoa(i)
			}
			c.calls[i] = tc
		}
	}
	c.content = make([]string, n)
	perChoice := len(reply.Refusal)
	for _, tc := range c.calls {
		perChoice += len(tc.Name) + len(tc.Arguments)
	}
	for i := range n {
		if hasText {
			c.content[i] = text
			if n > 1 {
				c.content[i] = "[" + strconv.Itoa(i) + "] " + text
			}
		}
		c.completionTokens += max(1, (perChoice+len(c.content[i]))/4)
	}
	if !hasText {
		c.content = nil
	}
	c.promptTokens = s.countPrompt(rq)
	return c
}

// lastUserText returns the text of the last user message (or item) of
// msgs: its string content, or its parts of type textType ("text",
// "input_text") joined with newlines.
func lastUserText(msgs []gjson.Result, textType string) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Get("role").Str != "user" {
			continue
		}
		c := m.Get("content")
		if c.Type == gjson.String {
			return c.Str
		}
		var parts []string
		c.ForEach(func(_, p gjson.Result) bool {
			if p.Get("type").Str == textType {
				parts = append(parts, p.Get("text").Str)
			}
			return true
		})
		return strings.Join(parts, "\n")
	}
	return ""
}

// writeCompletion writes a non-streamed chat.completion, applying the
// reply's mid-body faults.
func (s *Server) writeCompletion(ctx context.Context, w http.ResponseWriter, c *completion, gate <-chan struct{}) {
	s.writeBody(ctx, w, c.appendCompletion(make([]byte, 0, 512)), c.reply.Fault, c.reply.Gzip, gate)
}

// appendCompletion appends the chat.completion object.
func (c *completion) appendCompletion(b []byte) []byte {
	b = c.appendHead(b, "chat.completion")
	n := max(1, len(c.content))
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"message":{"role":"assistant","content":`...)
		if c.content == nil {
			b = append(b, "null"...)
		} else {
			b = gjson.AppendJSONString(b, c.content[i])
		}
		b = append(b, `,"refusal":`...)
		b = appendNullableString(b, c.reply.Refusal)
		if len(c.calls) > 0 {
			b = append(b, `,"tool_calls":[`...)
			for j, tc := range c.calls {
				if j > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"id":`...)
				b = gjson.AppendJSONString(b, tc.ID)
				b = append(b, `,"type":"function","function":{"name":`...)
				b = gjson.AppendJSONString(b, tc.Name)
				b = append(b, `,"arguments":`...)
				b = gjson.AppendJSONString(b, tc.Arguments)
				b = append(b, "}}"...)
			}
			b = append(b, ']')
		}
		b = append(b, `,"annotations":[]},"logprobs":null,"finish_reason":`...)
		b = gjson.AppendJSONString(b, c.finish)
		b = append(b, '}')
	}
	b = append(b, `],"usage":`...)
	b = c.appendUsage(b)
	return append(b, `,"service_tier":"default","system_fingerprint":"fp_upstreamtest"}`...)
}

// appendHead appends the fields every completion object starts with, up to
// and including `"choices":[`.
func (c *completion) appendHead(b []byte, object string) []byte {
	b = append(b, `{"id":`...)
	b = gjson.AppendJSONString(b, c.id)
	b = append(b, `,"object":"`...)
	b = append(b, object...)
	b = append(b, `","created":`...)
	b = strconv.AppendInt(b, c.created, 10)
	b = append(b, `,"model":`...)
	b = gjson.AppendJSONString(b, c.model)
	return append(b, `,"choices":[`...)
}

func (c *completion) appendUsage(b []byte) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(c.promptTokens), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(c.completionTokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(c.promptTokens+c.completionTokens), 10)
	return append(b, '}')
}

// sleep waits d or until ctx ends; it reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// reset takes the connection over and closes it, with an RST when rst is
// set and the connection is TCP. Buffered response bytes are flushed first.
func reset(w http.ResponseWriter, rst bool) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if buf != nil {
		_ = buf.Flush()
	}
	if tc, ok := conn.(*net.TCPConn); ok && rst {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

func flush(w http.ResponseWriter) { _ = http.NewResponseController(w).Flush() }

func gzipBytes(b []byte) []byte {
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return out.Bytes()
}

// describe says how many messages of which roles a request carried.
func describe(msgs []gjson.Result) string {
	var b strings.Builder
	b.WriteString(" [received ")
	b.WriteString(strconv.Itoa(len(msgs)))
	if len(msgs) == 1 {
		b.WriteString(" message: ")
	} else {
		b.WriteString(" messages: ")
	}
	for i, m := range msgs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(m.Get("role").Str)
	}
	b.WriteByte(']')
	return b.String()
}
