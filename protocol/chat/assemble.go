package chat

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/recallproxy/recall/internal/canonjson"
	"github.com/recallproxy/recall/wire"
	"github.com/tidwall/gjson"
)

// ErrUpstream is returned (wrapped) by [Assembler.Add] and [ParseReply]
// for a payload carrying an "error" object: the upstream reported an
// error in its own words.
var ErrUpstream = fmt.Errorf("chat: %w", wire.ErrUpstream)

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
	// Message is choice 0's assistant message as Recall stores it, to be
	// replayed as input later: a message parameter strict providers
	// accept. See [Assembler.Reply] for its shape, the same for a
	// streamed and a non-streamed reply.
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
	parts            []byte        // content sent as an array of parts, raw
	calls            []toolCall    // in order of arrival; Reply sorts them by index
	byIndex          map[int64]int // index -> position in calls, once there are many
	name, audioID    string
	finish           string
	usage            Usage
	model, id        string
	done             bool
	finished         bool // some choice's finish_reason was seen
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
// they fail mid-stream (that error wraps [ErrUpstream]); the reply must
// not be recorded then. Add copies
// what it keeps, so data may be reused after it returns.
func (a *Assembler) Add(data []byte) error {
	data = bytes.TrimSpace(data)
	if string(data) == "[DONE]" {
		a.done = true
		return nil
	}
	if a.addScanned(data) {
		return nil
	}
	return a.add(data)
}

// add is Add for a chunk, read with gjson: every chunk addScanned
// cannot read in one pass, and the errors.
func (a *Assembler) add(data []byte) error {
	if err := CheckDepth(data); err != nil {
		return err
	}
	if !gjson.ValidBytes(data) {
		return errors.New("chat: stream chunk is not valid JSON")
	}
	chunk := gjson.Parse(bytesString(data))
	if !chunk.IsObject() {
		return errors.New("chat: stream chunk is not a JSON object")
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
		return fmt.Errorf("%w in stream: %s", ErrUpstream, errorMessage(upstreamErr))
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
	if finish.Type == gjson.String {
		a.finished = true
	}
	if index.Int() != 0 { // an absent index counts as 0
		return
	}
	a.addDelta(delta)
	if finish.Type == gjson.String && finish.Str != a.finish {
		a.finish = strings.Clone(finish.Str)
	}
}

// addDelta merges a streamed delta, or a non-streamed reply's whole
// message, which is one delta carrying everything. It reads only the
// fields Reply writes, so that anything else a reply carries
// ("annotations", "reasoning_content", audio data) is never stored.
func (a *Assembler) addDelta(delta gjson.Result) {
	delta.ForEach(func(key, value gjson.Result) bool {
		switch key.Str {
		case "content":
			switch {
			case value.Type == gjson.String:
				a.content = canonjson.AppendUnescaped(a.content, value.Raw)
			case value.IsArray() && value.Get("#").Int() > 0:
				a.parts = append(a.parts[:0], value.Raw...)
			}
		case "refusal":
			if value.Type == gjson.String {
				a.refusal = canonjson.AppendUnescaped(a.refusal, value.Raw)
			}
		case "name":
			if a.name == "" && value.Type == gjson.String {
				a.name = strings.Clone(value.Str)
			}
		case "audio":
			if id := value.Get("id"); a.audioID == "" && id.Type == gjson.String {
				a.audioID = strings.Clone(id.Str)
			}
		case "tool_calls":
			if !value.IsArray() { // null, as some servers send with text, holds no call
				return true
			}
			pos := 0
			value.ForEach(func(_, tc gjson.Result) bool {
				a.addToolCall(pos, tc)
				pos++
				return true
			})
		}
		return true
	})
}

// addToolCall merges one delta.tool_calls fragment, found at position pos
// in its array, into the call with the same index.
func (a *Assembler) addToolCall(pos int, tc gjson.Result) {
	idx := int64(pos) // some compatible servers omit the index
	if i := tc.Get("index"); i.Type == gjson.Number {
		idx = i.Int()
	}
	c := a.call(idx)
	if id := tc.Get("id"); c.id == "" && id.Type == gjson.String {
		c.id = strings.Clone(id.Str)
	}
	if t := tc.Get("type"); c.typ == "" && t.Type == gjson.String {
		c.typ = strings.Clone(t.Str)
	}
	fn, argsKey := tc.Get("function"), "arguments"
	if custom := tc.Get("custom"); custom.IsObject() {
		fn, argsKey = custom, "input"
		if c.typ == "" {
			c.typ = "custom"
		}
	}
	if n := fn.Get("name"); n.Type == gjson.String {
		c.name = canonjson.AppendUnescaped(c.name, n.Raw)
	}
	if args := fn.Get(argsKey); args.Type == gjson.String {
		c.argument = canonjson.AppendUnescaped(c.argument, args.Raw)
	}
}

// manyCalls is the number of tool calls past which the assembler finds a
// call by its index in a map rather than by a scan.
const manyCalls = 8

// call returns the call with stream index idx, added if it is new. Finding
// it costs O(1) whatever the order of the indexes: the fragments of one
// call usually follow one another, and past manyCalls a map finds the
// others.
func (a *Assembler) call(idx int64) *toolCall {
	n := len(a.calls)
	if n > 0 && a.calls[n-1].index == idx {
		return &a.calls[n-1]
	}
	if n <= manyCalls {
		for i := range a.calls {
			if a.calls[i].index == idx {
				return &a.calls[i]
			}
		}
	} else {
		if a.byIndex == nil {
			a.byIndex = make(map[int64]int, 2*n)
		}
		if len(a.byIndex) < n { // built lazily, or again after Reply sorted the calls
			for i := range a.calls {
				a.byIndex[a.calls[i].index] = i
			}
		}
		if i, ok := a.byIndex[idx]; ok {
			return &a.calls[i]
		}
		a.byIndex[idx] = n
	}
	a.calls = append(a.calls, toolCall{index: idx})
	return &a.calls[n]
}

// Done reports whether the stream's "data: [DONE]" was seen.
func (a *Assembler) Done() bool { return a.done }

// Finished reports whether any choice's finish_reason has been seen: from
// that chunk on, a client considers the answer received.
func (a *Assembler) Finished() bool { return a.finished }

// Reply returns the assembled reply. Its Message is a valid assistant
// message parameter, with these keys in this order:
//
//   - "role": "assistant";
//   - "name", when the reply named the assistant;
//   - "content": the text; or the array of parts a non-streamed reply
//     sent; or null when there is none but a refusal, tool calls or audio;
//     or "" when there is nothing at all;
//   - "refusal", when it is a non-empty string;
//   - "tool_calls", when there are any, each with "id", "type" (default
//     "function") and "function" {"name","arguments"} (or "custom"
//     {"name","input"} for a custom tool call);
//   - "audio": {"id"}, when the reply had audio with an id, which is how a
//     later request refers to it.
//
// Every string is re-encoded the same way, so a streamed and a
// non-streamed reply with the same answer give the same bytes.
func (a *Assembler) Reply() Reply {
	if !slices.IsSortedFunc(a.calls, byStreamIndex) {
		slices.SortFunc(a.calls, byStreamIndex)
		clear(a.byIndex) // positions changed: rebuilt if more fragments come
	}
	n := 64 + len(a.name) + len(a.content) + len(a.parts) + len(a.refusal) + len(a.audioID)
	for _, c := range a.calls {
		n += 64 + len(c.id) + len(c.name) + len(c.argument)
	}
	m := make([]byte, 0, n)
	m = append(m, `{"role":"assistant"`...)
	if a.name != "" {
		m = appendQuoted(append(m, `,"name":`...), a.name)
	}
	m = append(m, `,"content":`...)
	switch {
	case len(a.content) > 0:
		m = appendQuoted(m, bytesString(a.content))
	case len(a.parts) > 0:
		m = append(m, a.parts...)
	case len(a.refusal) > 0 || len(a.calls) > 0 || a.audioID != "":
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
			typ, fn, args := c.typ, `,"function":{"name":`, `,"arguments":`
			switch typ {
			case "":
				typ = "function"
			case "custom":
				fn, args = `,"custom":{"name":`, `,"input":`
			}
			m = appendQuoted(append(m, `{"id":`...), c.id)
			m = appendQuoted(append(m, `,"type":`...), typ)
			m = appendQuoted(append(m, fn...), bytesString(c.name))
			m = appendQuoted(append(m, args...), bytesString(c.argument))
			m = append(m, "}}"...)
		}
		m = append(m, ']')
	}
	if a.audioID != "" {
		m = appendQuoted(append(m, `,"audio":{"id":`...), a.audioID)
		m = append(m, '}')
	}
	m = append(m, '}')
	return Reply{Message: m, FinishReason: a.finish, Usage: a.usage, Model: a.model, ID: a.id}
}

// byStreamIndex orders tool calls by their stream index.
func byStreamIndex(x, y toolCall) int { return cmp.Compare(x.index, y.index) }

// Reset empties the assembler for another stream, keeping its buffers.
func (a *Assembler) Reset() {
	clear(a.calls)
	clear(a.byIndex)
	*a = Assembler{content: a.content[:0], refusal: a.refusal[:0], parts: a.parts[:0], calls: a.calls[:0], byIndex: a.byIndex}
}

// ParseReply extracts choice 0's message, finish_reason, usage, model and
// id from a non-streamed chat.completion body. The message is rebuilt from
// its fields exactly as [Assembler.Reply] builds a streamed one, not kept
// as sent: response fields such as "annotations" or "refusal": null are
// not valid input for strict providers, and the stored message is replayed
// as input. It returns an error when the body carries an "error" object or
// has no choices[0].message object. For n>1, choice 0 is the one with
// index 0. The Reply shares no memory with body.
func ParseReply(body []byte) (Reply, error) {
	if r, ok := scanReply(body); ok {
		return r, nil
	}
	return parseReply(body)
}

// parseReply is ParseReply read with gjson: every reply scanReply cannot
// read in one pass, and the errors.
func parseReply(body []byte) (Reply, error) {
	if err := CheckDepth(body); err != nil {
		return Reply{}, err
	}
	if !gjson.ValidBytes(body) {
		return Reply{}, errors.New("chat: reply is not valid JSON")
	}
	// One pass over the reply's members, the first of each name counted
	// (as a path's Get finds it).
	var errV, choices, usage, model, id gjson.Result
	gjson.Parse(bytesString(body)).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "error":
			first(&errV, v)
		case "choices":
			first(&choices, v)
		case "usage":
			first(&usage, v)
		case "model":
			first(&model, v)
		case "id":
			first(&id, v)
		}
		return true
	})
	if errV.Exists() && errV.Type != gjson.Null {
		return Reply{}, fmt.Errorf("%w in reply: %s", ErrUpstream, errorMessage(errV))
	}
	choice := firstChoice(choices)
	var msg, finish gjson.Result
	choice.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "message":
			first(&msg, v)
		case "finish_reason":
			first(&finish, v)
		}
		return true
	})
	if !msg.IsObject() {
		return Reply{}, errors.New("chat: reply has no choices[0].message object")
	}
	var a Assembler
	a.addDelta(msg)
	r := a.Reply()
	r.Usage = parseUsage(usage)
	if finish.Type == gjson.String {
		r.FinishReason = strings.Clone(finish.Str)
	}
	if model.Type == gjson.String {
		r.Model = strings.Clone(model.Str)
	}
	if id.Type == gjson.String {
		r.ID = strings.Clone(id.Str)
	}
	return r, nil
}

// first sets *dst to v unless it holds a member already.
func first(dst *gjson.Result, v gjson.Result) {
	if !dst.Exists() {
		*dst = v
	}
}

// firstChoice returns the choice of index 0 among choices, else the
// first one (choices.#(index==0), else choices.0).
func firstChoice(choices gjson.Result) gjson.Result {
	if !choices.IsArray() {
		return choices.Get("0")
	}
	var zero, head gjson.Result
	choices.ForEach(func(_, c gjson.Result) bool {
		if !head.Exists() {
			head = c
		}
		if i := c.Get("index"); i.Type == gjson.Number && i.Num == 0 || i.Type == gjson.String && i.Str == "0" {
			zero = c
			return false
		}
		return true
	})
	if zero.Exists() {
		return zero
	}
	return head
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
