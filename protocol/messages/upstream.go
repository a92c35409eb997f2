package messages

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/jsonscan"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/protocol/internal/body"
	"github.com/recallproxy/recall/wire"
)

// ErrUpstream is returned (wrapped) for an answer or stream event in
// which the upstream reported an error in its own words.
var ErrUpstream = fmt.Errorf("messages: %w", wire.ErrUpstream)

// ErrBadAnswer is returned (wrapped) for an answer that is not a Message.
var ErrBadAnswer = errors.New("messages: not a message answer")

// APIVersion is the anthropic-version Recall sends with a request it
// makes itself (a translated client's, a summary's).
const APIVersion = "2023-06-01"

// openingUser is the user message sent before messages that open with
// the assistant's: the shortest text Anthropic takes (it refuses empty
// ones), saying nothing the model could answer.
var openingUser = []byte(`{"role":"user","content":[{"type":"text","text":"."}]}`)

// DefaultMaxTokens is the max_tokens sent for a request from another
// protocol that set no cap: Anthropic requires one.
const DefaultMaxTokens = 4096

// Upstream is the upstream side of the Messages API: an anthropic
// upstream. The zero value is ready to use.
type Upstream struct{}

var (
	_ wire.Upstream      = Upstream{}
	_ wire.KeyHeader     = Upstream{}
	_ wire.DefaultHeader = Upstream{}
	_ wire.CacheMarker   = Upstream{}
	_ wire.TurnJoiner    = Upstream{}
)

// KeyHeaderName is the header the Messages API reads its key from.
const KeyHeaderName = "x-api-key"

// Path returns "/messages", appended to the tenant's base_url
// (https://api.anthropic.com/v1).
func (Upstream) Path() string { return "/messages" }

// KeyHeader returns KeyHeaderName.
func (Upstream) KeyHeader() string { return KeyHeaderName }

// DefaultHeader returns anthropic-version and APIVersion: the API
// refuses a request without a version, and a client of another protocol
// names none (a Messages client's own is sent as it came).
func (Upstream) DefaultHeader() (name, value string) { return "anthropic-version", APIVersion }

// AppendMarkedBody is AppendBody followed by MarkHistoryEnd(body, last),
// and reports whether the mark was placed. A request that came in as
// Messages, with one "messages" member, holds msgs in its body as they
// are: message last is marked before the body is written (as MarkedEnd
// marks it), so the ~60 KB body is not walked to find it, and the slots
// are counted on the body only when it names cache_control more than
// MaxBreakpoints times (the mark's own included). msgs is as it was when
// it returns; message last is replaced while the body is written, so
// msgs must be the caller's own, read by no one else meanwhile.
func (Upstream) AppendMarkedBody(dst []byte, req *wire.Request, instructions, msgs [][]byte, last int) ([]byte, bool, error) {
	if req.Protocol != wire.Messages || last < 0 || last >= len(msgs) || !oneMessagesMember(req.Body) {
		body, err := Upstream{}.AppendBody(dst, req, instructions, msgs)
		if err != nil {
			return body, false, err
		}
		m := len(body)
		body = MarkHistoryEnd(body, last)
		return body, len(body) != m, nil
	}
	marked := markEnd(slices.Clip(msgs[last]), parse(msgs[last]))
	if len(marked) == len(msgs[last]) { // takes no mark
		body, err := appendSameBody(dst, req, instructions, msgs)
		return body, false, err
	}
	orig := msgs[last]
	msgs[last] = marked // for the body's writing only
	body, err := appendSameBody(dst, req, instructions, msgs)
	msgs[last] = orig
	if err != nil {
		return body, false, err
	}
	// MarkHistoryEnd's rule on the body without the mark, which takes
	// one mention and one slot: every slot taken, no mark.
	if hintMentions(body) > MaxBreakpoints && Breakpoints(parse(body)) > MaxBreakpoints {
		body, err = appendSameBody(dst, req, instructions, msgs)
		return body, false, err
	}
	return body, true, nil
}

// oneMessagesMember reports whether body, a request, has one member
// named "messages" (as body.Splice compares names): where a second
// one came, AppendBody writes msgs in each, and MarkHistoryEnd marks the
// first only.
func oneMessagesMember(body []byte) bool {
	n := 0
	parse(body).ForEach(func(k, _ gjson.Result) bool {
		if k.Str == "messages" {
			n++
		}
		return true
	})
	return n == 1
}

// JoinTurns is JoinResults.
func (Upstream) JoinTurns(msgs [][]byte, roles []string, last int) ([][]byte, int) {
	return JoinResults(msgs, roles, last)
}

// AppendBody appends the body of a Messages API request.
//
// A request that came in as Messages keeps its body: every member as the
// client sent it (metadata, thinking, tools with their cache_control, …),
// "messages" replaced by msgs, and "system" as sent when instructions are
// the request's own (otherwise, say with a summary added, "system" is the
// instructions' blocks, their cache_control kept).
//
// A request from another protocol gets a fresh body: model, max_tokens
// (the request's, or DefaultMaxTokens), system (the instructions' text
// blocks, then any system message found among msgs, which Encode writes
// for a canonical system message and which Anthropic does not take in
// place), messages, tools (input_schema from the canonical parameters),
// tool_choice, temperature, top_p, stop_sequences and stream. Messages
// that open with the assistant's (a Responses or chat client may send
// its own history so) are preceded by openingUser, since Anthropic
// refuses a first message that is not the user's.
func (Upstream) AppendBody(dst []byte, req *wire.Request, instructions, msgs [][]byte) ([]byte, error) {
	if req.Protocol == wire.Messages {
		return appendSameBody(dst, req, instructions, msgs)
	}
	var system [][]byte
	kept := make([][]byte, 0, len(msgs)+1)
	for _, m := range msgs {
		if parse(m).Get("role").Str == roleSystem {
			system = append(system, m)
		} else {
			kept = append(kept, m)
		}
	}
	if len(kept) > 0 && parse(kept[0]).Get("role").Str == roleAssistant {
		kept = slices.Insert(kept, 0, openingUser)
	}
	dst = append(dst, `{"model":`...)
	dst = gjson.AppendJSONString(dst, req.Model)
	dst = append(dst, `,"max_tokens":`...)
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	dst = strconv.AppendInt(dst, int64(maxTokens), 10)
	if sys := appendSystem(nil, append(append([][]byte(nil), instructions...), system...)); sys != nil {
		dst = append(dst, `,"system":`...)
		dst = append(dst, sys...)
	}
	dst = append(dst, `,"messages":`...)
	dst = body.AppendArray(dst, kept)
	if len(req.Tools) > 0 {
		dst = append(dst, `,"tools":[`...)
		for i, t := range req.Tools {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"name":`...)
			dst = gjson.AppendJSONString(dst, t.Name)
			if t.Description != "" {
				dst = append(dst, `,"description":`...)
				dst = gjson.AppendJSONString(dst, t.Description)
			}
			dst = append(dst, `,"input_schema":`...)
			if len(t.Parameters) > 0 && parse(t.Parameters).IsObject() {
				dst = append(dst, t.Parameters...)
			} else {
				dst = append(dst, `{"type":"object","properties":{}}`...)
			}
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	switch req.ToolChoice {
	case "":
	case "auto", "none":
		dst = append(dst, `,"tool_choice":{"type":"`+req.ToolChoice+`"}`...)
	case "required":
		dst = append(dst, `,"tool_choice":{"type":"any"}`...)
	default:
		dst = append(dst, `,"tool_choice":{"type":"tool","name":`...)
		dst = gjson.AppendJSONString(dst, req.ToolChoice)
		dst = append(dst, '}')
	}
	dst = body.AppendSampling(dst, req, "stop_sequences", gjson.AppendJSONString)
	if req.Stream {
		dst = append(dst, `,"stream":true`...)
	}
	return append(dst, '}'), nil
}

// appendSameBody is AppendBody for a request that came in as Messages:
// every member as it came but messages, and system unless instructions
// are the request's own.
func appendSameBody(dst []byte, req *wire.Request, instructions, msgs [][]byte) ([]byte, error) {
	root := parse(req.Body)
	if !root.IsObject() {
		return dst, fmt.Errorf("messages: append body: request body is not an object")
	}
	own := slices.EqualFunc(instructions, req.Instructions, bytes.Equal)
	var system []byte
	if !own {
		system = appendSystem(nil, instructions)
	}
	return sameBody.Append(dst, root, msgs, system, own), nil
}

var sameBody = body.Splice{Messages: "messages", System: "system"}

// appendSystem appends "system" as the text blocks of instructions (their
// string content as one block, their blocks as they are), or returns nil
// when they hold no text.
func appendSystem(dst []byte, instructions [][]byte) []byte {
	var blocks []string
	for _, in := range instructions {
		c := parse(in).Get("content")
		switch {
		case c.Type == gjson.String && c.Str != "":
			blocks = append(blocks, `{"type":"text","text":`+c.Raw+`}`)
		case c.IsArray():
			c.ForEach(func(_, b gjson.Result) bool {
				if b.Get("type").Str == typeText && b.Get("text").Str != "" {
					blocks = append(blocks, b.Raw)
				}
				return true
			})
		}
	}
	if len(blocks) == 0 {
		return nil
	}
	return append(dst, body.JoinArray(blocks)...)
}

// MaxBreakpoints is how many cache_control breakpoints a Messages request
// may carry. A top-level cache_control (Anthropic's automatic caching)
// takes one of them.
const MaxBreakpoints = 4

// ephemeral is the cache hint Recall places.
const ephemeral = `"cache_control":{"type":"ephemeral"}`

// MarkHistoryEnd returns body, a Messages API request body (as AppendBody
// writes it), with a cache_control breakpoint on the last block of
// message last (the last message of the curated history), so that the
// provider caches the stable prefix of the conversation. It leaves body as
// it is when last is out of range, when the request already uses all
// MaxBreakpoints (as Breakpoints counts them, the top-level cache_control
// included), or when the message has no block that can carry one
// (thinking blocks cannot, nor empty text) or already carries one there.
// A string content becomes one text block carrying the hint. The proxy
// asks for it through AppendMarkedBody, for an anthropic upstream, with
// the index in the sent messages of the last history message.
//
// As append does, it marks body in place when body has the capacity for
// the hint, and the caller uses the result only: a request's ~60 KB body
// is not copied for the few bytes after the mark.
func MarkHistoryEnd(body []byte, last int) []byte {
	if last < 0 {
		return body
	}
	root := parse(body)
	// Every slot names cache_control: fewer mentions than slots, and the
	// body need not be walked.
	if hintMentions(body) >= MaxBreakpoints && Breakpoints(root) >= MaxBreakpoints {
		return body
	}
	if i, j, ok := messageAt(body, last); ok {
		msg := parse(body[i:j])
		msg.Index = i // markEnd splices at offsets into body
		return markEnd(body, msg)
	}
	return markEnd(body, messageOf(root, last))
}

// messageAt returns the bounds in body, a request body, of message last
// of its "messages" array (the first member so named), found in one pass
// of jsonscan up to the message's end, or false when the pass cannot
// decide (messages not an array, fewer messages, a member name with an
// escape, JSON it does not take): messageOf decides those. gjson's walk
// (a parse of the whole array to find its end, then one of each message
// up to last) was most of the Messages path's cost beyond chat's.
func messageAt(body []byte, last int) (i, j int, ok bool) {
	s := jsonscan.Scanner{B: body}
	found := false
	s.Object(func(name []byte) bool {
		if string(name) != "messages" {
			_, ok := s.Value(chat.MaxDepth)
			return ok
		}
		s.Array(func(n int) bool {
			if n == last {
				i = s.I
			}
			_, ok := s.Value(chat.MaxDepth)
			if ok && n == last {
				j, found = s.I, true
			}
			return ok && n < last
		})
		return false // the first "messages" decides, as gjson's Get
	})
	return i, j, found
}

// messageOf is message last of root's "messages", as gjson finds it.
func messageOf(root gjson.Result, last int) gjson.Result {
	var msg gjson.Result
	if msgs := root.Get("messages"); msgs.IsArray() { // as AppendBody writes it: no path to build
		n := 0
		msgs.ForEach(func(_, m gjson.Result) bool {
			if n == last {
				msg = m
			}
			n++
			return n <= last
		})
	} else {
		msg = root.Get("messages." + strconv.Itoa(last))
	}
	return msg
}

// MarkedEnd implements wire.EndMarker: raw, one stored message, with the
// breakpoint MarkHistoryEnd places at the end of the last history
// message, raw itself where that message takes none. raw is not
// modified.
func (Codec) MarkedEnd(raw []byte) []byte {
	return markEnd(slices.Clip(raw), parse(raw))
}

var _ wire.EndMarker = Codec{}

// markEnd returns body with the breakpoint at the end of msg, a message
// parsed from body (see MarkHistoryEnd).
func markEnd(body []byte, msg gjson.Result) []byte {
	if !msg.IsObject() {
		return body
	}
	content := msg.Get("content")
	var at gjson.Result
	switch {
	case content.Type == gjson.String:
		if content.Str == "" {
			return body
		}
		// The string becomes one text block with the hint.
		at = content
		i, j := at.Index, at.Index+len(at.Raw)
		return spliceHint(spliceHint(body, j, j, hintedClose, len(textOpen)), i, i, textOpen, 0)
	case content.IsArray():
		content.ForEach(func(_, b gjson.Result) bool {
			typ := b.Get("type").Str
			if !isThinking(typ) && !(typ == typeText && b.Get("text").Str == "") && b.IsObject() {
				at = b
			}
			return true
		})
		if !at.Exists() || at.Get("cache_control").Exists() {
			return body
		}
		// The block's closing brace becomes the hint and the brace.
		k := at.Index + len(strings.TrimRight(at.Raw, " \t\r\n")) - 1
		return spliceHint(body, k, at.Index+len(at.Raw), hintedBrace, 0)
	}
	return body
}

// textOpen, hintedClose and hintedBrace are what MarkHistoryEnd writes
// around a string content, and at a block's end.
const (
	textOpen    = `[{"type":"text","text":`
	hintedClose = `,` + ephemeral + `}]`
	hintedBrace = `,` + ephemeral + `}`
)

// spliceHint returns body with body[i:j] replaced by s, in place (as append
// does) when body has room for s and reserve bytes more, else in a copy
// with that room.
func spliceHint(body []byte, i, j int, s string, reserve int) []byte {
	grow := len(s) - (j - i)
	if cap(body)-len(body) < grow+reserve {
		out := make([]byte, 0, len(body)+grow+reserve)
		out = append(out, body[:i]...)
		out = append(out, s...)
		return append(out, body[j:]...)
	}
	body = body[:len(body)+grow]
	copy(body[j+grow:], body[j:len(body)-grow])
	copy(body[i:], s)
	return body
}

// Breakpoints counts the cache_control breakpoints of a Messages API
// request, the slots of MaxBreakpoints it uses: a non-null top-level
// cache_control, and the non-null cache_control members in system, tools
// and messages, at any depth. A member repeated at the top level counts
// each time, so that a doubt leaves a slot unused rather than overfills.
func Breakpoints(root gjson.Result) int {
	n := 0
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "cache_control":
			if v.Type != gjson.Null {
				n++
			}
		case "system", "tools", "messages":
			n += countHints(v)
		}
		return true
	})
	return n
}

// hintMentions counts "cache_control" in body, as bytes.Count does. It
// searches from the underscore, which prose has few of, where Count's
// search stops at every c of the text (BenchmarkHintMentions: a 60 KB
// body of prose counted about ten times as fast).
func hintMentions(body []byte) int {
	const head, tail = "cache", "_control"
	n := 0
	for {
		i := bytes.Index(body, []byte(tail))
		if i < 0 {
			return n
		}
		if i >= len(head) && string(body[i-len(head):i]) == head {
			n++
		}
		body = body[i+len(tail):]
	}
}

func countHints(v gjson.Result) int {
	if !v.IsObject() && !v.IsArray() || !strings.Contains(v.Raw, "cache_control") {
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
		n += countHints(val)
		return true
	})
	return n
}

// ParseAnswer reads a non-streamed answer, a Message object
// (https://docs.anthropic.com/en/api/messages): Stored is one assistant
// message, {"role":"assistant","content":[…]} with the content blocks as
// they came (thinking blocks and their signatures included), Message its
// canonical form, Stop and Usage mapped (input tokens are input_tokens
// plus the cache reads and writes, which Anthropic counts apart). An
// error object wraps ErrUpstream; anything else that is not a Message
// wraps ErrBadAnswer. The Answer shares no memory with raw.
func (Upstream) ParseAnswer(raw []byte) (wire.Answer, error) {
	if chat.CheckDepth(raw) != nil || !gjson.ValidBytes(raw) {
		return wire.Answer{}, fmt.Errorf("messages: parse answer: %w", ErrBadAnswer)
	}
	root := parse(raw)
	if root.Get("type").Str == "error" {
		return wire.Answer{}, fmt.Errorf("messages: parse answer: %w: %s", ErrUpstream, root.Get("error.message").Str)
	}
	content := root.Get("content")
	if root.Get("type").Str != "message" || !content.IsArray() {
		return wire.Answer{}, fmt.Errorf("messages: parse answer: %w", ErrBadAnswer)
	}
	stored := body.AppendMessageRaw(nil, roleAssistant, "content", content.Raw)
	a := wire.Answer{
		ID:     strings.Clone(root.Get("id").Str),
		Model:  strings.Clone(root.Get("model").Str),
		Stored: [][]byte{stored},
		Stop:   canonicalStop(root.Get("stop_reason").Str),
	}
	var u usage
	u.read(root.Get("usage"))
	a.Usage = u.canonical()
	var err error
	if a.Message, err = (Codec{}).Decode(stored); err != nil {
		return wire.Answer{}, fmt.Errorf("messages: parse answer: %w", err)
	}
	a.Hashed = Codec{}.hashed(stored, a.Message)
	return a, nil
}

// usage is the counts of a usage object, which Anthropic splits: input
// tokens that hit the cache, that wrote it, and the rest.
type usage struct{ in, cacheRead, cacheWrite, out int64 }

// read updates u with the counts v holds (a stream's message_delta holds
// only some: they are whole-message totals that replace what message_start
// said).
func (u *usage) read(v gjson.Result) {
	v.ForEach(func(k, n gjson.Result) bool {
		switch k.Str {
		case "input_tokens":
			u.in = n.Int()
		case "cache_read_input_tokens":
			u.cacheRead = n.Int()
		case "cache_creation_input_tokens":
			u.cacheWrite = n.Int()
		case "output_tokens":
			u.out = n.Int()
		}
		return true
	})
}

// canonical returns u in the canonical model: every input token counts as
// input, the cache reads as cached, the cache writes as cache creation.
func (u usage) canonical() wire.Usage {
	return wire.Usage{InputTokens: int(u.in + u.cacheRead + u.cacheWrite), CachedTokens: int(u.cacheRead),
		CacheCreationTokens: int(u.cacheWrite), OutputTokens: int(u.out)}
}

// canonicalStop maps a stop_reason to the canonical stop reason.
func canonicalStop(reason string) string {
	switch reason {
	case "max_tokens", "model_context_window_exceeded":
		return wire.StopLength
	case "tool_use":
		return wire.StopToolCalls
	case "refusal":
		return wire.StopFilter
	case "":
		return ""
	}
	return wire.StopEnd // end_turn, stop_sequence, pause_turn
}

// stopReason maps a canonical stop reason to a stop_reason.
func stopReason(stop string) string {
	switch stop {
	case wire.StopLength:
		return "max_tokens"
	case wire.StopToolCalls:
		return "tool_use"
	case wire.StopFilter:
		return "refusal"
	}
	return "end_turn"
}

// WithTools implements wire.Upstream.
func (Upstream) WithTools(raw []byte, tools []wire.Tool, stream bool) ([]byte, error) {
	return body.WithTools(raw, tools, stream, func(item []byte, t wire.Tool) []byte {
		item = append(item, `{"name":`...)
		item = gjson.AppendJSONString(item, t.Name)
		item = append(item, `,"description":`...)
		item = gjson.AppendJSONString(item, t.Description)
		item = append(item, `,"input_schema":`...)
		item = append(item, t.Parameters...)
		return append(item, '}')
	})
}
