package rewrite

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// Usage is the token usage an upstream reported.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	TotalTokens      int
	// CachedTokens is usage.prompt_tokens_details.cached_tokens.
	CachedTokens int
}

// Reply is what an upstream answered, reduced to what Recall records. It
// shares no memory with the body or chunks it was built from.
type Reply struct {
	// Message is the assistant message JSON of choice 0.
	Message []byte
	// FinishReason is choice 0's finish_reason, "" if none was sent.
	FinishReason string
	// Usage is the reported usage, zero if none was sent.
	Usage Usage
	// Model and ID are the response's "model" and "id".
	Model, ID string
}

// Assembler rebuilds choice 0 of a streamed chat completion from its chunks.
// The zero value is ready to use; Reset makes it reusable.
//
// It records only what the stream said: choices other than index 0 (n>1)
// are ignored, and usage is zero unless the upstream sent a usage chunk.
type Assembler struct {
	content, refusal []byte
	calls            []toolCall // in order of their stream index
	finish           string
	usage            Usage
	model, id        string
	done             bool
}

// toolCall is one tool call being assembled from its fragments.
type toolCall struct {
	index          int64
	id, typ        string
	name, argument []byte
}

// Add takes one SSE data payload: a chat.completion.chunk JSON, or "[DONE]",
// which marks the stream complete. It returns an error for a payload that
// is not JSON or that carries an "error" object, as upstreams send when
// they fail mid-stream; the reply must not be recorded then. Add copies
// what it keeps, so data may be reused after it returns.
func (a *Assembler) Add(data []byte) error {
	data = bytes.TrimSpace(data)
	if string(data) == "[DONE]" {
		a.done = true
		return nil
	}
	if err := CheckDepth(data); err != nil {
		return err
	}
	if !gjson.ValidBytes(data) {
		return errors.New("rewrite: stream chunk is not valid JSON")
	}
	chunk := gjson.Parse(bytesString(data))
	if !chunk.IsObject() {
		return errors.New("rewrite: stream chunk is not a JSON object")
	}
	var choices, usage, upstreamErr gjson.Result
	chunk.ForEach(func(key, value gjson.Result) bool {
		switch key.Str {
		case "id":
			if a.id == "" && value.Type == gjson.String {
				a.id = strings.Clone(value.Str)
			}
		case "model":
			if a.model == "" && value.Type == gjson.String {
				a.model = strings.Clone(value.Str)
			}
		case "choices":
			choices = value
		case "usage":
			usage = value
		case "error":
			upstreamErr = value
		}
		return true
	})
	if upstreamErr.Exists() && upstreamErr.Type != gjson.Null {
		return fmt.Errorf("rewrite: upstream error in stream: %s", errorMessage(upstreamErr))
	}
	if usage.IsObject() {
		a.usage = parseUsage(usage)
	}
	choices.ForEach(func(_, choice gjson.Result) bool {
		a.addChoice(choice)
		return true
	})
	return nil
}

// addChoice merges one element of a chunk's choices, if it is choice 0.
func (a *Assembler) addChoice(choice gjson.Result) {
	var index, delta, finish gjson.Result
	choice.ForEach(func(key, value gjson.Result) bool {
		switch key.Str {
		case "index":
			index = value
		case "delta":
			delta = value
		case "finish_reason":
			finish = value
		}
		return true
	})
	if index.Int() != 0 { // an absent index counts as 0
		return
	}
	delta.ForEach(func(key, value gjson.Result) bool {
		switch key.Str {
		case "content":
			if value.Type == gjson.String {
				a.content = appendUnescaped(a.content, value.Raw)
			}
		case "refusal":
			if value.Type == gjson.String {
				a.refusal = appendUnescaped(a.refusal, value.Raw)
			}
		case "tool_calls":
			pos := 0
			value.ForEach(func(_, tc gjson.Result) bool {
				a.addToolCall(pos, tc)
				pos++
				return true
			})
		}
		return true
	})
	if finish.Type == gjson.String && finish.Str != a.finish {
		a.finish = strings.Clone(finish.Str)
	}
}

// addToolCall merges one delta.tool_calls fragment, found at position pos
// in its array, into the call with the same index.
func (a *Assembler) addToolCall(pos int, tc gjson.Result) {
	idx := int64(pos) // some compatible servers omit the index
	if i := tc.Get("index"); i.Type == gjson.Number {
		idx = i.Int()
	}
	at := len(a.calls)
	for at > 0 && a.calls[at-1].index >= idx {
		at--
	}
	if at == len(a.calls) || a.calls[at].index != idx {
		a.calls = append(a.calls, toolCall{})
		copy(a.calls[at+1:], a.calls[at:])
		a.calls[at] = toolCall{index: idx}
	}
	c := &a.calls[at]
	if id := tc.Get("id"); c.id == "" && id.Type == gjson.String {
		c.id = strings.Clone(id.Str)
	}
	if t := tc.Get("type"); c.typ == "" && t.Type == gjson.String {
		c.typ = strings.Clone(t.Str)
	}
	fn := tc.Get("function")
	if n := fn.Get("name"); n.Type == gjson.String {
		c.name = appendUnescaped(c.name, n.Raw)
	}
	if args := fn.Get("arguments"); args.Type == gjson.String {
		c.argument = appendUnescaped(c.argument, args.Raw)
	}
}

// Done reports whether the stream's "data: [DONE]" was seen.
func (a *Assembler) Done() bool { return a.done }

// Reply returns the assembled reply. Its Message has the keys role,
// content, refusal and tool_calls in that order, each only when non-empty,
// except content, which is always there: the text, or null when there is a
// refusal or tool calls but no text, or "" when there is nothing at all.
func (a *Assembler) Reply() Reply {
	n := 64 + len(a.content) + len(bytesString(a.refusal))
	for _, c := range a.calls {
		n += 64 + len(c.id) + len(c.name) + len(c.argument)
	}
	m := make([]byte, 0, n)
	m = append(m, `{"role":"assistant","content":`...)
	switch {
	case len(a.content) > 0:
		m = appendQuoted(m, bytesString(a.content))
	case len(a.refusal) > 0 || len(a.calls) > 0:
		m = append(m, "null"...)
	default:
		m = append(m, `""`...)
	}
	if len(a.refusal) > 0 {
		m = appendQuoted(append(m, `,"refusal":`...), bytesString(a.refusal))
	}
	if len(a.calls) > 0 {
		m = append(m, `,"tool_calls":[`...)
		for i, c := range a.calls {
			if i > 0 {
				m = append(m, ',')
			}
			typ := c.typ
			if typ == "" {
				typ = "function"
			}
			m = appendQuoted(append(m, `{"id":`...), c.id)
			m = appendQuoted(append(m, `,"type":`...), typ)
			m = appendQuoted(append(m, `,"function":{"name":`...), bytesString(c.name))
			m = appendQuoted(append(m, `,"arguments":`...), bytesString(c.argument))
			m = append(m, "}}"...)
		}
		m = append(m, ']')
	}
	m = append(m, '}')
	return Reply{Message: m, FinishReason: a.finish, Usage: a.usage, Model: a.model, ID: a.id}
}

// Reset empties the assembler for another stream, keeping its buffers.
func (a *Assembler) Reset() {
	clear(a.calls)
	*a = Assembler{content: a.content[:0], refusal: a.refusal[:0], calls: a.calls[:0]}
}

// ParseReply extracts choice 0's message (its exact JSON bytes, copied),
// finish_reason, usage, model and id from a non-streamed chat.completion
// body. It returns an error when the body carries an "error" object or has
// no choices[0].message object. For n>1, choice 0 is the one with index 0.
func ParseReply(body []byte) (Reply, error) {
	if err := CheckDepth(body); err != nil {
		return Reply{}, err
	}
	if !gjson.ValidBytes(body) {
		return Reply{}, errors.New("rewrite: reply is not valid JSON")
	}
	doc := gjson.Parse(bytesString(body))
	if e := doc.Get("error"); e.Exists() && e.Type != gjson.Null {
		return Reply{}, fmt.Errorf("rewrite: upstream error in reply: %s", errorMessage(e))
	}
	choice := doc.Get("choices.#(index==0)")
	if !choice.Exists() {
		choice = doc.Get("choices.0")
	}
	msg := choice.Get("message")
	if !msg.IsObject() {
		return Reply{}, errors.New("rewrite: reply has no choices[0].message object")
	}
	r := Reply{
		Message: []byte(msg.Raw),
		Usage:   parseUsage(doc.Get("usage")),
	}
	if f := choice.Get("finish_reason"); f.Type == gjson.String {
		r.FinishReason = strings.Clone(f.Str)
	}
	if m := doc.Get("model"); m.Type == gjson.String {
		r.Model = strings.Clone(m.Str)
	}
	if id := doc.Get("id"); id.Type == gjson.String {
		r.ID = strings.Clone(id.Str)
	}
	return r, nil
}

// parseUsage reads a usage object.
func parseUsage(u gjson.Result) Usage {
	return Usage{
		PromptTokens:     int(u.Get("prompt_tokens").Int()),
		CompletionTokens: int(u.Get("completion_tokens").Int()),
		TotalTokens:      int(u.Get("total_tokens").Int()),
		CachedTokens:     int(u.Get("prompt_tokens_details.cached_tokens").Int()),
	}
}

// errorMessage returns an upstream error object's message, or its JSON.
func errorMessage(e gjson.Result) string {
	if m := e.Get("message"); m.Type == gjson.String {
		return m.Str
	}
	return e.Raw
}
