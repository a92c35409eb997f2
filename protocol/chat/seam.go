package chat

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/recallproxy/recall/protocol/internal/body"
	"github.com/recallproxy/recall/wire"
)

// The chat-completions side of the proxy's seam: a chat client served by an
// upstream of another protocol (Ingress, Renderer), and a request of
// another protocol sent to a chat-completions upstream (Upstream,
// Assembler).

// Protocol is chat completions on the seam: Ingress and Upstream.
type Protocol struct{ Codec }

var (
	_ wire.Ingress      = Protocol{}
	_ wire.Upstream     = Protocol{}
	_ wire.StoredParser = Protocol{}
	_ wire.Relayer      = (*seamAssembler)(nil)
)

// ParseRequest implements wire.Ingress: the leading system and developer
// messages are the instructions.
func (Protocol) ParseRequest(body []byte) (*wire.Request, error) {
	r, err := ParseRequest(body)
	if err != nil {
		return nil, err
	}
	out := &wire.Request{Protocol: wire.ChatCompletions, Body: body, MessagesAt: [2]int{r.msgStart, r.msgEnd},
		Model: r.Model, Stream: r.Stream, MaxTokens: r.MaxTokens, Choices: max(r.N, 1), ToolsRaw: r.Tools, Store: true}
	n := 0
	for n < len(r.Messages) && (r.Messages[n].Role == RoleSystem || r.Messages[n].Role == RoleDeveloper) {
		n++
	}
	all := make([][]byte, len(r.Messages)) // one array for both
	for i, m := range r.Messages {
		all[i] = m.Raw
	}
	if n > 0 {
		out.Instructions = all[:n:n]
	}
	if n < len(all) {
		out.Messages = all[n:]
	}
	if len(r.Tools) > 0 {
		gjson.GetBytes(r.Tools, "@this").ForEach(func(_, t gjson.Result) bool {
			if t.Get("type").String() == "function" {
				f := t.Get("function")
				out.Tools = append(out.Tools, wire.Tool{Name: f.Get("name").String(),
					Description: f.Get("description").String(), Parameters: []byte(f.Get("parameters").Raw)})
			}
			return true
		})
	}
	// The sampling fields, in one pass over the body's members.
	gjson.Parse(bytesString(body)).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "tool_choice":
			switch {
			case v.Type == gjson.String:
				out.ToolChoice = v.Str
			case v.IsObject():
				out.ToolChoice = v.Get("function.name").String()
			}
		case "temperature":
			if v.Type == gjson.Number {
				f := v.Num
				out.Temperature = &f
			}
		case "top_p":
			if v.Type == gjson.Number {
				f := v.Num
				out.TopP = &f
			}
		case "stop":
			switch {
			case v.Type == gjson.String:
				out.Stop = []string{v.Str}
			case v.IsArray():
				v.ForEach(func(_, s gjson.Result) bool { out.Stop = append(out.Stop, s.String()); return true })
			}
		}
		return true
	})
	return out, nil
}

// Path implements wire.Upstream.
func (Protocol) Path() string { return "/chat/completions" }

// AppendBody implements wire.Upstream. A chat-completions request keeps
// every other byte it came with; another protocol's, or one with no body
// (Recall's own, the summariser's), is built afresh: asking a stream for
// its usage, and the token cap as max_completion_tokens, not the
// deprecated max_tokens that reasoning models refuse.
func (Protocol) AppendBody(dst []byte, req *wire.Request, instructions, msgs [][]byte) ([]byte, error) {
	if req.Protocol == wire.ChatCompletions && len(req.Body) > 0 {
		start, end := req.MessagesAt[0], req.MessagesAt[1]
		if end == 0 {
			r, err := ParseRequest(req.Body)
			if err != nil {
				return nil, err
			}
			start, end = r.msgStart, r.msgEnd
		}
		return spliceMessages(dst, req.Body, start, end, instructions, msgs), nil
	}
	dst = append(dst, `{"model":`...)
	dst = appendQuoted(dst, req.Model)
	dst = append(dst, `,"messages":[`...)
	for i, m := range instructions {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, m...)
	}
	for i, m := range msgs {
		if i > 0 || len(instructions) > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, m...)
	}
	dst = append(dst, ']')
	if req.Stream {
		dst = append(dst, `,"stream":true,"stream_options":{"include_usage":true}`...)
	} else {
		dst = append(dst, `,"stream":false`...)
	}
	if req.MaxTokens > 0 {
		dst = append(dst, `,"max_completion_tokens":`...)
		dst = strconv.AppendInt(dst, int64(req.MaxTokens), 10)
	}
	if len(req.Tools) > 0 {
		dst = append(dst, `,"tools":[`...)
		for i, t := range req.Tools {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"type":"function","function":{"name":`...)
			dst = appendQuoted(dst, t.Name)
			if t.Description != "" {
				dst = append(dst, `,"description":`...)
				dst = appendQuoted(dst, t.Description)
			}
			if len(t.Parameters) > 0 {
				dst = append(dst, `,"parameters":`...)
				dst = append(dst, t.Parameters...)
			}
			dst = append(dst, "}}"...)
		}
		dst = append(dst, ']')
		switch tc := req.ToolChoice; tc {
		case "":
		case "auto", "none", "required":
			dst = append(dst, `,"tool_choice":`...)
			dst = appendQuoted(dst, tc)
		default:
			dst = append(dst, `,"tool_choice":{"type":"function","function":{"name":`...)
			dst = appendQuoted(dst, tc)
			dst = append(dst, "}}"...)
		}
	}
	dst = body.AppendSampling(dst, req, "stop", appendQuoted)
	return append(dst, '}'), nil
}

// stopOf maps a finish_reason to the canonical stop reason.
func stopOf(finish string) string {
	switch finish {
	case "length":
		return wire.StopLength
	case "tool_calls", "function_call":
		return wire.StopToolCalls
	case "content_filter":
		return wire.StopFilter
	}
	return wire.StopEnd
}

// finishOf maps a canonical stop reason to a finish_reason.
func finishOf(stop string) string {
	switch stop {
	case wire.StopLength, wire.StopToolCalls, wire.StopFilter:
		return stop
	}
	return "stop"
}

// ParseAnswer implements wire.Upstream.
func (p Protocol) ParseAnswer(body []byte) (wire.Answer, error) {
	r, err := ParseReply(body)
	if err != nil {
		return wire.Answer{}, err
	}
	return p.answer(r)
}

// ParseStored implements wire.StoredParser.
func (p Protocol) ParseStored(body []byte) (wire.Answer, error) {
	r, err := ParseReply(body)
	if err != nil {
		return wire.Answer{}, err
	}
	return p.stored(r), nil
}

// stored is r's answer without its canonical message.
func (Protocol) stored(r Reply) wire.Answer {
	return wire.Answer{ID: r.ID, Model: r.Model, Stored: [][]byte{r.Message}, Stop: stopOf(r.FinishReason),
		Usage: wire.Usage{InputTokens: r.Usage.PromptTokens, OutputTokens: r.Usage.CompletionTokens,
			CachedTokens: r.Usage.CachedTokens}}
}

func (p Protocol) answer(r Reply) (wire.Answer, error) {
	m, err := p.Decode(r.Message)
	if err != nil {
		return wire.Answer{}, err
	}
	a := p.stored(r)
	a.Message = m
	return a, nil
}

// NewAssembler implements wire.Upstream.
func (Protocol) NewAssembler() wire.Assembler { return &seamAssembler{} }

// seamAssembler reads a chat-completions stream into canonical deltas,
// keeping the Assembler's record of choice 0.
type seamAssembler struct {
	asm      Assembler
	calls    map[int64]int // a call's stream index -> its canonical index
	finished bool
}

// Event implements wire.Assembler. The stream is done at [DONE].
//
// A chunk is read once, in one pass (chunk.scan), when that pass can
// decide on it: the record and the deltas both come from it.
func (a *seamAssembler) Event(dst []wire.Delta, _, data []byte) ([]wire.Delta, bool, error) {
	var c chunk
	if t := bytes.TrimSpace(data); string(t) != "[DONE]" && c.scan(t) {
		a.asm.apply(&c)
		return a.deltas(dst, &c), false, nil
	}
	return a.event(dst, data)
}

// deltas appends the deltas of c, a chunk read in one pass, as event
// reads them.
func (a *seamAssembler) deltas(dst []wire.Delta, c *chunk) []wire.Delta {
	if !c.choice || c.index != 0 {
		return dst
	}
	for _, t := range []struct {
		kind wire.DeltaKind
		raw  []byte
	}{{wire.TextDelta, c.content}, {wire.RefusalDelta, c.refusal}, {wire.ReasoningDelta, c.reasoning}} {
		if len(t.raw) > 2 { // a string, not ""
			dst = append(dst, wire.Delta{Kind: t.kind, Text: unquote(t.raw)})
		}
	}
	for i := range c.nCalls {
		f := &c.calls[i]
		n, started := a.call(int64(max(f.index, 0))) // an absent index reads as 0 (gjson's Int)
		if !started {
			dst = append(dst, wire.Delta{Kind: wire.ToolCallStart, Index: n, CallID: text(f.id), Name: text(f.name)})
		}
		if len(f.input) > 2 {
			dst = append(dst, wire.Delta{Kind: wire.ArgumentsDelta, Index: n, Text: unquote(f.input)})
		}
	}
	if c.finish != nil && !a.finished {
		a.finished = true
		dst = append(dst, wire.Delta{Kind: wire.Finish, Text: stopOf(unquote(c.finish))})
	}
	return dst
}

// call returns the canonical index of the call of stream index idx, and
// whether it had started: one that had not is started now.
func (a *seamAssembler) call(idx int64) (n int, started bool) {
	if a.calls == nil {
		a.calls = map[int64]int{}
	}
	n, started = a.calls[idx]
	if !started {
		n = len(a.calls)
		a.calls[idx] = n
	}
	return n, started
}

// text is the string raw holds, "" for nil.
func text(raw []byte) string {
	if raw == nil {
		return ""
	}
	return unquote(raw)
}

// event is Event for a chunk read with gjson: every chunk chunk.scan
// cannot decide on, and [DONE].
func (a *seamAssembler) event(dst []wire.Delta, data []byte) ([]wire.Delta, bool, error) {
	if err := a.asm.Add(data); err != nil {
		return dst, false, err
	}
	if a.asm.Done() {
		return dst, true, nil
	}
	root := gjson.ParseBytes(data)
	root.Get("choices").ForEach(func(_, c gjson.Result) bool {
		if c.Get("index").Int() != 0 {
			return true
		}
		d := c.Get("delta")
		if t := d.Get("content"); t.Type == gjson.String && t.Str != "" {
			dst = append(dst, wire.Delta{Kind: wire.TextDelta, Text: t.Str})
		}
		if t := d.Get("refusal"); t.Type == gjson.String && t.Str != "" {
			dst = append(dst, wire.Delta{Kind: wire.RefusalDelta, Text: t.Str})
		}
		if t := d.Get("reasoning_content"); t.Type == gjson.String && t.Str != "" {
			dst = append(dst, wire.Delta{Kind: wire.ReasoningDelta, Text: t.Str})
		}
		calls := d.Get("tool_calls")
		if !calls.IsArray() { // null holds no call (Assembler.addDelta)
			calls = gjson.Result{}
		}
		calls.ForEach(func(_, tc gjson.Result) bool {
			n, started := a.call(tc.Get("index").Int())
			if !started {
				dst = append(dst, wire.Delta{Kind: wire.ToolCallStart, Index: n,
					CallID: tc.Get("id").String(), Name: tc.Get("function.name").String()})
			}
			if args := tc.Get("function.arguments").String(); args != "" {
				dst = append(dst, wire.Delta{Kind: wire.ArgumentsDelta, Index: n, Text: args})
			}
			return true
		})
		if f := c.Get("finish_reason"); f.Type == gjson.String && !a.finished {
			a.finished = true
			dst = append(dst, wire.Delta{Kind: wire.Finish, Text: stopOf(f.Str)})
		}
		return true
	})
	return dst, false, nil
}

// Relay implements wire.Relayer.
func (a *seamAssembler) Relay(_, data []byte) (finished, done bool, err error) {
	if err := a.asm.Add(data); err != nil {
		return false, false, err
	}
	return a.asm.Finished() || a.asm.Done(), a.asm.Done(), nil
}

// StoredAnswer implements wire.Relayer.
func (a *seamAssembler) StoredAnswer() (wire.Answer, error) {
	return Protocol{}.stored(a.asm.Reply()), nil
}

// Complete implements wire.Completer: a stream that ends cleanly after
// the recorded choice's finish_reason is whole without [DONE].
func (a *seamAssembler) Complete() bool { return a.asm.Done() || a.asm.Reply().FinishReason != "" }

// Answer implements wire.Assembler.
func (a *seamAssembler) Answer() (wire.Answer, error) { return Protocol{}.answer(a.asm.Reply()) }

// AppendAnswer implements wire.Ingress: a chat.completion object with one
// choice.
func (p Protocol) AppendAnswer(dst []byte, req *wire.Request, a *wire.Answer) []byte {
	msg := p.answerMessage(a)
	dst = append(dst, `{"id":`...)
	dst = appendQuoted(dst, answerID(a))
	dst = append(dst, `,"object":"chat.completion","created":`...)
	dst = strconv.AppendInt(dst, a.Created, 10)
	dst = append(dst, `,"model":`...)
	dst = appendQuoted(dst, modelOf(req, a))
	dst = append(dst, `,"choices":[{"index":0,"message":`...)
	dst = append(dst, msg...)
	dst = append(dst, `,"logprobs":null,"finish_reason":`...)
	dst = appendQuoted(dst, finishOf(a.Stop))
	dst = append(dst, `}],"usage":`...)
	dst = appendUsage(dst, a.Usage)
	return append(dst, '}')
}

// answerMessage is the answer as one chat assistant message.
func (p Protocol) answerMessage(a *wire.Answer) []byte {
	m := a.Message
	m.Role = RoleAssistant
	out, _ := p.Encode(nil, []wire.Message{m})
	for _, o := range out {
		if gjson.GetBytes(o, "role").String() == RoleAssistant {
			return o
		}
	}
	return []byte(`{"role":"assistant","content":""}`)
}

func answerID(a *wire.Answer) string {
	if a.ResponseID != "" {
		return a.ResponseID
	}
	if strings.HasPrefix(a.ID, "chatcmpl") {
		return a.ID
	}
	return "chatcmpl-" + a.ID
}

func modelOf(req *wire.Request, a *wire.Answer) string {
	if a.Model != "" {
		return a.Model
	}
	return req.Model
}

func appendUsage(dst []byte, u wire.Usage) []byte {
	dst = append(dst, `{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.InputTokens), 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.OutputTokens), 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.InputTokens+u.OutputTokens), 10)
	dst = append(dst, `,"prompt_tokens_details":{"cached_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.CachedTokens), 10)
	dst = append(dst, `},"completion_tokens_details":{"reasoning_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.ReasoningTokens), 10)
	return append(dst, "}}"...)
}

// NewRenderer implements wire.Ingress: chat.completion.chunk events, the
// usage chunk if the request asked for it, and [DONE]. Every chunk
// carries one id and one created time, as OpenAI's do (the SDKs'
// accumulators keep the first): req.ResponseID, or an id minted here
// (the upstream's is not known at the first chunk, and a stream may be
// rendered from several upstream answers), and req.Created.
func (Protocol) NewRenderer(req *wire.Request) wire.Renderer {
	id := req.ResponseID
	if id == "" {
		id = body.ID("chatcmpl-", 24)
	}
	return &renderer{req: req, id: id, usage: gjson.GetBytes(req.Body, "stream_options.include_usage").Bool()}
}

type renderer struct {
	req     *wire.Request
	usage   bool
	started bool
	id      string
}

// chunk appends one chunk whose choice carries delta (a JSON object) and
// finish (a JSON value).
func (r *renderer) chunk(dst []byte, id, model string, created int64, delta []byte, finish string) []byte {
	dst = chunkHead(dst, id, model, created)
	dst = append(dst, `,"choices":[{"index":0,"delta":`...)
	dst = append(dst, delta...)
	dst = append(dst, `,"logprobs":null,"finish_reason":`...)
	dst = append(dst, finish...)
	return append(dst, "}]}\n\n"...)
}

// chunkHead appends a chunk's event up to its choices: its id, object,
// created and model.
func chunkHead(dst []byte, id, model string, created int64) []byte {
	dst = append(dst, `data: {"id":`...)
	dst = appendQuoted(dst, id)
	dst = append(dst, `,"object":"chat.completion.chunk","created":`...)
	dst = strconv.AppendInt(dst, created, 10)
	dst = append(dst, `,"model":`...)
	return appendQuoted(dst, model)
}

// Delta implements wire.Renderer.
func (r *renderer) Delta(dst []byte, d wire.Delta) []byte {
	if d.Kind == wire.Finish || d.Kind == wire.ReasoningDelta {
		return dst // the finish chunk is End's: it acknowledges the turn
	}
	if !r.started {
		r.started = true
		dst = r.chunk(dst, r.id, r.req.Model, r.req.Created, []byte(`{"role":"assistant","content":""}`), "null")
	}
	var delta []byte
	switch d.Kind {
	case wire.TextDelta:
		delta = appendObj(nil, "content", d.Text)
	case wire.RefusalDelta:
		delta = appendObj(nil, "refusal", d.Text)
	case wire.ToolCallStart:
		delta = []byte(`{"tool_calls":[{"index":` + strconv.Itoa(d.Index) + `,"id":`)
		delta = appendQuoted(delta, d.CallID)
		delta = append(delta, `,"type":"function","function":{"name":`...)
		delta = appendQuoted(delta, d.Name)
		delta = append(delta, `,"arguments":""}}]}`...)
	case wire.ArgumentsDelta:
		delta = []byte(`{"tool_calls":[{"index":` + strconv.Itoa(d.Index) + `,"function":{"arguments":`)
		delta = appendQuoted(delta, d.Text)
		delta = append(delta, "}}]}"...)
	}
	return r.chunk(dst, r.id, r.req.Model, r.req.Created, delta, "null")
}

// End implements wire.Renderer: the finish chunk, the usage chunk if asked
// for, and [DONE].
func (r *renderer) End(dst []byte, a *wire.Answer) []byte {
	id, model, created := r.id, modelOf(r.req, a), r.req.Created
	if !r.started {
		r.started = true
		dst = r.chunk(dst, id, model, created, []byte(`{"role":"assistant","content":""}`), "null")
	}
	finish := appendQuoted(nil, finishOf(a.Stop))
	dst = r.chunk(dst, id, model, created, []byte("{}"), string(finish))
	if r.usage {
		dst = chunkHead(dst, id, model, created)
		dst = append(dst, `,"choices":[],"usage":`...)
		dst = appendUsage(dst, a.Usage)
		dst = append(dst, "}\n\n"...)
	}
	return append(dst, "data: [DONE]\n\n"...)
}

// setRaw is sjson.SetRawBytes for a value known to be valid.
func setRaw(dst []byte, path string, v []byte) []byte {
	out, err := sjson.SetRawBytes(dst, path, v)
	if err != nil {
		return dst
	}
	return out
}

// WithTools implements wire.Upstream.
func (Protocol) WithTools(raw []byte, tools []wire.Tool, stream bool) ([]byte, error) {
	raw, err := body.WithTools(raw, tools, stream, func(item []byte, t wire.Tool) []byte {
		item = append(item, `{"type":"function","function":{"name":`...)
		item = appendQuoted(item, t.Name)
		item = append(item, `,"description":`...)
		item = appendQuoted(item, t.Description)
		item = append(item, `,"parameters":`...)
		item = append(item, t.Parameters...)
		return append(item, "}}"...)
	})
	if err != nil || !stream {
		return raw, err
	}
	// The stream is rendered for the client, with the usage chunk only
	// if it asked: the rounds' usage is Recall's to record.
	return sjson.SetBytes(raw, "stream_options.include_usage", true)
}
