package upstreamtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// POST /v1/messages: Anthropic's Messages API, validated as strictly as
// the real one on the points Recall must get right, and answered from the
// same scripted Reply queue as chat completions (Content, ToolCalls,
// Fault, Status, Hold, Delay, Chunks) as a Message object, or as
// Anthropic's event stream when the request sets "stream".
//
// It refuses, in Anthropic's error shape ({"type":"error","error":{"type",
// "message"}}): a request without x-api-key (401) or anthropic-version
// (400); a body without model, max_tokens or messages; a first message
// that is not user; roles that do not alternate user/assistant; a tool_use
// not answered by a tool_result in the next message, or a tool_result
// that answers no tool_use of the previous one; more than four
// cache_control breakpoints (a top-level cache_control, Anthropic's
// automatic caching, takes one); a system-role message inside messages
// unless anthropic-beta names SystemMessagesBeta; and an assistant
// thinking block whose signature is not ThinkingSignature of its text.
// A request with "thinking":{"type":"enabled"} or {"type":"adaptive"}
// (Claude Code's setting, under which the model thinks when it sees fit)
// is answered with a thinking block first, signed so, so that tests can
// check that thinking is stored and sent back.

// SystemMessagesBeta is the anthropic-beta value under which the fake
// accepts system-role messages inside messages: Anthropic's name for
// mid-conversation system messages, which Claude Code sends. Recall
// forwards anthropic-beta as the client sent it, and never refuses such a
// message itself.
const SystemMessagesBeta = "mid-conversation-system-2026-04-07"

// unexpectedSystemRole is Anthropic's message for a system-role message
// inside messages without the beta. Clients match its words to fall back
// (Claude Code resends with the system text folded into a user message
// when it reads "Unexpected role" and "input message role").
const unexpectedSystemRole = "messages: Unexpected role \"system\". The Messages API accepts a top-level `system` parameter, not \"system\" as an input message role."

// ThinkingSignature is the signature the fake gives a thinking block with
// text thinking, and requires on thinking blocks sent back to it.
func ThinkingSignature(thinking string) string {
	sum := sha256.Sum256([]byte("upstreamtest thinking:" + thinking))
	return "sig_" + hex.EncodeToString(sum[:12])
}

// maxBreakpoints is how many cache_control breakpoints one request may
// carry, its top-level cache_control counted as one.
const maxBreakpoints = 4

// anthropicError is an error answered in Anthropic's shape.
type anthropicError struct {
	status  int
	typ     string
	message string
}

func (e *anthropicError) json() []byte {
	b := []byte(`{"type":"error","error":{"type":`)
	b = gjson.AppendJSONString(b, e.typ)
	b = append(b, `,"message":`...)
	b = gjson.AppendJSONString(b, e.message)
	return append(b, "}}\n"...)
}

func badRequest(message string) *anthropicError {
	return &anthropicError{status: http.StatusBadRequest, typ: invalidRequest, message: message}
}

// anthMessage is one Messages answer being produced.
type anthMessage struct {
	id       string
	model    string
	stream   bool
	reply    Reply
	thinking string // "" when the request did not enable thinking
	text     string
	calls    []ToolCall
	stop     string
	in, out  int
	cached   int // of in, read from the prompt cache
	created  int // of in, written to the prompt cache
}

// serveMessages answers POST /v1/messages.
func (s *Server) serveMessages(w http.ResponseWriter, r *http.Request, body []byte) {
	rec := s.receivedFor(r, body)
	root := parseBody(body)
	msgs := elements(root.Get("messages"))
	var apiErr *anthropicError
	switch {
	case r.Header.Get("X-Api-Key") == "":
		apiErr = &anthropicError{status: http.StatusUnauthorized, typ: "authentication_error", message: "x-api-key header is required"}
	case r.Header.Get("Anthropic-Version") == "":
		apiErr = badRequest("anthropic-version: header is required")
	case !root.IsObject():
		apiErr = badRequest("There was an error parsing the body of your request: it is not a JSON object")
	default:
		apiErr = validateMessagesRequest(root, msgs, hasBeta(r.Header, SystemMessagesBeta))
	}
	summary := apiErr == nil && isMessagesSummaryCall(root, msgs)
	var rejected *APIError
	if apiErr != nil {
		rejected = &APIError{Message: apiErr.message, Type: apiErr.typ}
	}
	reply, gate := s.takeReply(rec, root.Get("model").Str, root.Get("stream").Type == gjson.True, summary, msgs, rejected)
	if apiErr != nil {
		s.writeAnthropicError(w, apiErr, "")
		return
	}
	if summary && reply.Content == "" && len(reply.ToolCalls) == 0 {
		reply.Content = SummaryAnswer(systemText(root.Get("system")), systemText(msgs[0].Get("content")))
		if !s.unbounded {
			reply.Content = CapSummary(reply.Content, int(root.Get("max_tokens").Int()))
		}
	}
	ctx := r.Context()
	writeStatus := func(status int) {
		e := &anthropicError{status: status, typ: anthropicType(status), message: "upstreamtest: scripted status " + strconv.Itoa(status)}
		if reply.Content != "" {
			e.message = reply.Content
		}
		s.writeAnthropicError(w, e, reply.RetryAfter)
	}
	if !s.beforeAnswer(ctx, reply, gate, writeStatus, resetBeforeHeaders(w)) {
		return
	}
	m := s.newMessage(root, msgs, reply)
	h := w.Header()
	h["Request-Id"] = []string{"req_" + strconv.FormatUint(s.nextSeq(), 10)}
	if m.stream {
		s.writeMessageStream(ctx, w, m, gate)
		return
	}
	s.writeMessage(ctx, w, m, gate)
}

// isMessagesSummaryCall reports whether a Messages request is shaped as
// a summariser call (see isSummaryCall): no tools, a system prompt that
// asks for a summary, one user message with the transcript.
func isMessagesSummaryCall(root gjson.Result, msgs []gjson.Result) bool {
	if len(msgs) != 1 || root.Get("tools").Exists() || msgs[0].Get("role").Str != "user" || systemText(msgs[0].Get("content")) == "" {
		return false
	}
	text := systemText(root.Get("system"))
	// Recall's injected summary joins the client's instructions there.
	return strings.Contains(strings.ToLower(text), "summary") && !strings.Contains(text, injectedSummary)
}

// systemText is a Messages request's system prompt, or a message's
// content, as text: the string, or its text blocks joined.
func systemText(sys gjson.Result) string {
	if sys.Type == gjson.String {
		return sys.Str
	}
	var b strings.Builder
	for _, blk := range sys.Array() {
		b.WriteString(blk.Get("text").Str)
	}
	return b.String()
}

// hasBeta reports whether an anthropic-beta header names beta (the header
// is a comma-separated list, and may be repeated).
func hasBeta(h http.Header, beta string) bool {
	for _, v := range h.Values("Anthropic-Beta") {
		for _, b := range strings.Split(v, ",") {
			if strings.TrimSpace(b) == beta {
				return true
			}
		}
	}
	return false
}

// validateMessagesRequest checks a request body as the Messages API does
// on the points listed in the file comment.
func validateMessagesRequest(root gjson.Result, msgs []gjson.Result, systemBeta bool) *anthropicError {
	if err := validateMessagesTop(root, msgs); err != nil {
		return err
	}
	prevRole := ""
	var prevCalls []string // tool_use ids of the previous (non-system) message
	for i, m := range msgs {
		at := "messages." + strconv.Itoa(i)
		role := m.Get("role").Str
		content := m.Get("content")
		switch {
		case role == "system" && systemBeta:
			continue // in-place instructions: outside the turn structure
		case role == "system":
			return badRequest(unexpectedSystemRole)
		case role != "user" && role != "assistant":
			return badRequest(at + ".role: Input should be 'user' or 'assistant'")
		case content.Type != gjson.String && !content.IsArray():
			return badRequest(at + ".content: Input should be a valid string or a valid list")
		case prevRole == "" && role != "user":
			return badRequest("messages: first message must use the \"user\" role")
		case role == prevRole:
			return badRequest("messages: roles must alternate between \"user\" and \"assistant\", but found multiple \"" + role + "\" roles in a row")
		}
		calls, results, err := validateBlocks(at, role, content, prevCalls)
		if err != nil {
			return err
		}
		var missing []string
		for _, id := range prevCalls {
			if !contains(results, id) {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			return badRequest("messages." + strconv.Itoa(i-1) + ": `tool_use` ids were found without `tool_result` blocks immediately after: " +
				strings.Join(missing, ", ") + ". Each `tool_use` block must have a corresponding `tool_result` block in the next message.")
		}
		prevRole, prevCalls = role, calls
	}
	if len(prevCalls) > 0 {
		return badRequest("messages." + strconv.Itoa(len(msgs)-1) + ": `tool_use` ids were found without `tool_result` blocks immediately after: " +
			strings.Join(prevCalls, ", ") + ". Each `tool_use` block must have a corresponding `tool_result` block in the next message.")
	}
	return nil
}

// validateMessagesTop checks the request's top-level members: model,
// max_tokens, a non-empty messages array, and at most maxBreakpoints
// cache_control breakpoints in all.
func validateMessagesTop(root gjson.Result, msgs []gjson.Result) *anthropicError {
	switch mt := root.Get("max_tokens"); {
	case root.Get("model").Type != gjson.String || root.Get("model").Str == "":
		return badRequest("model: Field required")
	case !mt.Exists():
		return badRequest("max_tokens: Field required")
	case mt.Type != gjson.Number || mt.Int() < 1:
		return badRequest("max_tokens: Input should be a valid integer greater than 0")
	case !root.Get("messages").IsArray():
		return badRequest("messages: Field required")
	case len(msgs) == 0:
		return badRequest("messages: at least one message is required")
	}
	if n := Breakpoints(root); n > maxBreakpoints {
		return badRequest("A maximum of 4 blocks with cache_control may be provided. Found " + strconv.Itoa(n) + ".")
	}
	return nil
}

// validateBlocks checks the content blocks of the message at (of role,
// after a message whose tool_use ids are prevCalls) and returns its
// tool_use ids and the tool_use ids its tool_result blocks answer. A
// string content has no blocks.
func validateBlocks(at, role string, content gjson.Result, prevCalls []string) (calls, results []string, err *anthropicError) {
	j := 0
	blocks := content
	if !blocks.IsArray() {
		blocks = gjson.Result{} // a string: no blocks
	}
	blocks.ForEach(func(_, b gjson.Result) bool {
		bat := at + ".content." + strconv.Itoa(j)
		j++
		switch typ := b.Get("type").Str; {
		case typ == "":
			err = badRequest(bat + ".type: Field required")
		case typ == "tool_use" && role == "assistant":
			calls = append(calls, b.Get("id").Str)
		case typ == "tool_result" && role == "user":
			id := b.Get("tool_use_id").Str
			if !contains(prevCalls, id) {
				err = badRequest(bat + ": unexpected `tool_use_id` found in `tool_result` blocks: " + id +
					". Each `tool_result` block must have a corresponding `tool_use` block in the previous message.")
			}
			results = append(results, id)
		case typ == "thinking" && role == "assistant":
			if b.Get("signature").Str != ThinkingSignature(b.Get("thinking").Str) {
				err = badRequest(bat + ": Invalid `signature` in `thinking` block")
			}
		case typ == "document" && role == "user":
			err = validateDocument(bat, b.Get("source"))
		case typ == "tool_use" || typ == "tool_result" || typ == "thinking" || typ == "document":
			err = badRequest(bat + ": `" + typ + "` blocks are not allowed in " + role + " messages")
		}
		return err == nil
	})
	return calls, results, err
}

// Breakpoints counts the prompt-cache breakpoints of a Messages request
// body as Anthropic does: the non-null cache_control members of its
// system, tools and messages, and its own top-level one.
func Breakpoints(body gjson.Result) int {
	n := countBreakpoints(body.Get("system")) + countBreakpoints(body.Get("tools")) + countBreakpoints(body.Get("messages"))
	if cc := body.Get("cache_control"); cc.Exists() && cc.Type != gjson.Null {
		n++
	}
	return n
}

// countBreakpoints counts non-null cache_control members in v.
func countBreakpoints(v gjson.Result) int {
	if !v.IsObject() && !v.IsArray() {
		return 0
	}
	n := 0
	obj := v.IsObject()
	v.ForEach(func(k, val gjson.Result) bool {
		if obj && k.Str == "cache_control" {
			if val.Type != gjson.Null {
				n++
			}
			return true
		}
		n += countBreakpoints(val)
		return true
	})
	return n
}

// anthropicType is the error type Anthropic answers a status with.
func anthropicType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status == 529 || status == http.StatusServiceUnavailable:
		return "overloaded_error"
	case status >= 500:
		return "api_error"
	}
	return invalidRequest
}

func (s *Server) writeAnthropicError(w http.ResponseWriter, e *anthropicError, retryAfter string) {
	if retryAfter != "" {
		w.Header()["Retry-After"] = []string{retryAfter}
	}
	s.writeJSON(w, e.status, e.json())
}

// newMessage resolves the reply against the request.
func (s *Server) newMessage(root gjson.Result, msgs []gjson.Result, reply Reply) *anthMessage {
	seq := s.nextSeq()
	m := &anthMessage{
		id:     "msg_upstreamtest" + strconv.FormatUint(seq, 10),
		model:  root.Get("model").Str,
		stream: root.Get("stream").Type == gjson.True,
		reply:  reply,
		text:   reply.Content,
		stop:   "end_turn",
		in:     max(1, len(root.Get("messages").Raw)/4),
	}
	m.cached = min(s.promptCache(root), m.in-1)
	if reply.CacheCreation > 0 {
		m.created = reply.CacheCreation
		m.in = max(m.in, m.cached+m.created+1)
	}
	last := lastUserTextOf(msgs)
	if reply.Content == "" && len(reply.ToolCalls) == 0 {
		m.text = "echo: " + last
		if s.describe {
			m.text += describe(msgs)
		}
	}
	if t := root.Get("thinking.type").Str; t == "enabled" || t == "adaptive" {
		m.thinking = "Thinking about: " + last
	}
	for i, tc := range reply.ToolCalls {
		if tc.ID == "" {
			tc.ID = "toolu_" + strconv.FormatUint(seq, 10) + "_" + strconv.Itoa(i)
		}
		if tc.Arguments == "" {
			tc.Arguments = "{}"
		}
		m.calls = append(m.calls, tc)
		m.stop = "tool_use"
	}
	m.out = max(1, (len(m.text)+len(m.thinking))/4)
	return m
}

// lastUserTextOf returns the text of the last user message that has any
// (in a tool loop the last user message holds only tool results).
func lastUserTextOf(msgs []gjson.Result) string {
	for i := len(msgs); i > 0; i-- {
		if t := lastUserText(msgs[:i], "text"); t != "" {
			return t
		}
	}
	return ""
}

// appendMessage appends the Message object, with its content blocks.
func (m *anthMessage) appendMessage(b []byte, withContent bool) []byte {
	b = append(b, `{"id":`...)
	b = gjson.AppendJSONString(b, m.id)
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = gjson.AppendJSONString(b, m.model)
	b = append(b, `,"content":[`...)
	if withContent {
		for i, blk := range m.blocks() {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, blk...)
		}
	}
	b = append(b, `],"stop_reason":`...)
	if withContent {
		b = gjson.AppendJSONString(b, m.stop)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"stop_sequence":null,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(m.in-m.cached-m.created), 10)
	b = append(b, `,"cache_creation_input_tokens":`...)
	b = strconv.AppendInt(b, int64(m.created), 10)
	b = append(b, `,"cache_read_input_tokens":`...)
	b = strconv.AppendInt(b, int64(m.cached), 10)
	b = append(b, `,"output_tokens":`...)
	out := m.out
	if !withContent {
		out = 1
	}
	b = strconv.AppendInt(b, int64(out), 10)
	return append(b, "}}"...)
}

// blocks returns the answer's content blocks: thinking, text, tool uses.
func (m *anthMessage) blocks() [][]byte {
	var out [][]byte
	if m.thinking != "" {
		b := gjson.AppendJSONString([]byte(`{"type":"thinking","thinking":`), m.thinking)
		b = append(b, `,"signature":`...)
		out = append(out, append(gjson.AppendJSONString(b, ThinkingSignature(m.thinking)), '}'))
	}
	if m.text != "" {
		out = append(out, append(gjson.AppendJSONString([]byte(`{"type":"text","text":`), m.text), '}'))
	}
	for _, tc := range m.calls {
		b := gjson.AppendJSONString([]byte(`{"type":"tool_use","id":`), tc.ID)
		b = append(b, `,"name":`...)
		b = gjson.AppendJSONString(b, tc.Name)
		b = append(b, `,"input":`...)
		out = append(out, append(append(b, tc.Arguments...), '}'))
	}
	return out
}

// writeMessage writes a non-streamed Message, applying the reply's
// mid-body faults.
func (s *Server) writeMessage(ctx context.Context, w http.ResponseWriter, m *anthMessage, gate <-chan struct{}) {
	s.writeBody(ctx, w, append(m.appendMessage(make([]byte, 0, 512), true), '\n'), m.reply.Fault, false, gate)
}

// events lists the stream's events, name and data, in sending order.
func (m *anthMessage) events() [][2]string {
	var evs [][2]string
	add := func(name string, data []byte) { evs = append(evs, [2]string{name, string(data)}) }
	add("message_start", append(m.appendMessage([]byte(`{"type":"message_start","message":`), false), '}'))
	add("ping", []byte(`{"type": "ping"}`))
	chunks := m.reply.Chunks
	if chunks <= 0 {
		chunks = 4
	}
	index := 0
	block := func(start string, deltas [][]byte) {
		at := strconv.Itoa(index)
		add("content_block_start", []byte(`{"type":"content_block_start","index":`+at+`,"content_block":`+start+`}`))
		for _, d := range deltas {
			add("content_block_delta", append([]byte(`{"type":"content_block_delta","index":`+at+`,"delta":`), append(d, '}')...))
		}
		add("content_block_stop", []byte(`{"type":"content_block_stop","index":`+at+`}`))
		index++
	}
	if m.thinking != "" {
		var ds [][]byte
		for _, p := range splitRunes(m.thinking, 2) {
			ds = append(ds, append(gjson.AppendJSONString([]byte(`{"type":"thinking_delta","thinking":`), p), '}'))
		}
		ds = append(ds, append(gjson.AppendJSONString([]byte(`{"type":"signature_delta","signature":`), ThinkingSignature(m.thinking)), '}'))
		block(`{"type":"thinking","thinking":"","signature":""}`, ds)
	}
	if m.text != "" {
		var ds [][]byte
		for _, p := range splitRunes(m.text, chunks) {
			ds = append(ds, append(gjson.AppendJSONString([]byte(`{"type":"text_delta","text":`), p), '}'))
		}
		block(`{"type":"text","text":""}`, ds)
	}
	for _, tc := range m.calls {
		var ds [][]byte
		for _, p := range splitRunes(tc.Arguments, 3) {
			ds = append(ds, append(gjson.AppendJSONString([]byte(`{"type":"input_json_delta","partial_json":`), p), '}'))
		}
		start := gjson.AppendJSONString([]byte(`{"type":"tool_use","id":`), tc.ID)
		start = append(start, `,"name":`...)
		start = append(gjson.AppendJSONString(start, tc.Name), `,"input":{}}`...)
		block(string(start), ds)
	}
	md := gjson.AppendJSONString([]byte(`{"type":"message_delta","delta":{"stop_reason":`), m.stop)
	md = append(md, `,"stop_sequence":null},"usage":{"output_tokens":`...)
	md = strconv.AppendInt(md, int64(m.out), 10)
	add("message_delta", append(md, "}}"...))
	add("message_stop", []byte(`{"type":"message_stop"}`))
	return evs
}

// writeMessageStream writes the Message as Anthropic's event stream, each
// event flushed on its own, applying the reply's mid-stream faults after
// about half of the events.
func (s *Server) writeMessageStream(ctx context.Context, w http.ResponseWriter, m *anthMessage, gate <-chan struct{}) {
	rc := startEventStream(w)
	send := func(name, data string) bool {
		if _, err := w.Write([]byte("event: " + name + "\ndata: " + data + "\n\n")); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	evs := m.events()
	faults := streamFaults{
		cut: cutConnection(w),
		malformed: func(int) bool {
			return send("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_`)
		},
		errorEvent: func(int) {
			send("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		},
	}
	s.sendEvents(ctx, m.reply.Fault, len(evs), 3, gate, faults, func(i int) bool { return send(evs[i][0], evs[i][1]) })
}

// cacheHint matches a cache_control member, to compare prompts without
// their breakpoints.
var cacheHint = regexp.MustCompile(`,?"cache_control":\{[^{}]*\}`)

// promptCache plays Anthropic's prompt cache: the prompt up to each
// cache_control breakpoint among the messages is written to the cache; a
// request reads the longest cached prompt that ends at a message boundary
// at or before its last breakpoint (Anthropic looks back from each
// breakpoint for an earlier cached prefix), about a token per 4 bytes of
// its messages, as the answer's cache_read_input_tokens says.
func (s *Server) promptCache(root gjson.Result) int {
	head := root.Get("model").Str + "\x00" + cacheHint.ReplaceAllString(root.Get("system").Raw, "") + "\x00" +
		cacheHint.ReplaceAllString(root.Get("tools").Raw, "")
	var prefix strings.Builder
	var keys []string
	var sizes []int
	var marked []bool
	root.Get("messages").ForEach(func(_, m gjson.Result) bool {
		prefix.WriteString(cacheHint.ReplaceAllString(m.Raw, ""))
		keys = append(keys, head+prefix.String())
		sizes = append(sizes, prefix.Len())
		marked = append(marked, strings.Contains(m.Raw, `"cache_control"`))
		return true
	})
	last := -1
	for i, m := range marked {
		if m {
			last = i
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cached == nil {
		s.cached = make(map[string]bool)
	}
	read := 0
	for i := 0; i <= last; i++ {
		if s.cached[keys[i]] {
			read = sizes[i] / 4
		}
	}
	for i, m := range marked {
		if m {
			s.cached[keys[i]] = true
		}
	}
	return read
}

// validateDocument checks a document block's source as Anthropic does: a
// base64 PDF, plain text, a URL or a file id.
func validateDocument(at string, src gjson.Result) *anthropicError {
	switch src.Get("type").Str {
	case "base64":
		if mt := src.Get("media_type").Str; mt != "application/pdf" {
			return badRequest(at + ".source.base64.media_type: Input should be 'application/pdf'")
		}
		if src.Get("data").Str == "" {
			return badRequest(at + ".source.base64.data: Field required")
		}
	case "text":
		if src.Get("media_type").Str != "text/plain" {
			return badRequest(at + ".source.text.media_type: Input should be 'text/plain'")
		}
		if src.Get("data").Type != gjson.String {
			return badRequest(at + ".source.text.data: Field required")
		}
	case "url":
		if src.Get("url").Str == "" {
			return badRequest(at + ".source.url.url: Field required")
		}
	case "file":
		if src.Get("file_id").Str == "" {
			return badRequest(at + ".source.file.file_id: Field required")
		}
	case "content":
	default:
		return badRequest(at + ".source: Input tag '" + src.Get("type").Str + "' found using 'type' does not match any of the expected tags: 'base64', 'content', 'file', 'text', 'url'")
	}
	return nil
}
