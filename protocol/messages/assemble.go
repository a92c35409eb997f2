package messages

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/protocol/internal/body"
	"github.com/recallproxy/recall/wire"
)

// ErrIncomplete is returned (wrapped) by Assembler.Answer before the
// stream's message_stop.
var ErrIncomplete = errors.New("messages: stream incomplete")

// NewAssembler returns an Assembler for one streamed answer.
func (Upstream) NewAssembler() wire.Assembler { return &Assembler{} }

// Assembler builds a Message from Anthropic's event stream
// (https://docs.anthropic.com/en/docs/build-with-claude/streaming):
// message_start, then per content block content_block_start, its
// content_block_delta events (text_delta, input_json_delta,
// thinking_delta, signature_delta) and content_block_stop, then
// message_delta with the stop_reason and usage, and message_stop; ping
// events may come anywhere, and an error event ends the stream in error.
// It emits canonical deltas as it goes: TextDelta per text block (Index
// counts text blocks), ToolCallStart and ArgumentsDelta per tool_use
// block (Index counts tool_use blocks), ReasoningDelta for thinking, and
// Finish at message_delta. It copies what it keeps: data may be reused
// after Event returns.
type Assembler struct {
	id, model string
	started   bool
	done      bool
	blocks    []block
	texts     int // text blocks so far
	calls     int // tool_use blocks so far
	thinks    int // thinking blocks so far
	stop      string
	usage     usage
}

// block is one content block being assembled.
type block struct {
	typ     string
	start   string // the content_block of its start event
	ordinal int    // its index among the blocks of its kind
	text    strings.Builder
	input   strings.Builder
	sig     strings.Builder
}

var _ wire.Assembler = (*Assembler)(nil)

// Event reads one event. name is the SSE event name; when it is empty the
// data's "type" names the event.
func (a *Assembler) Event(dst []wire.Delta, name, data []byte) ([]wire.Delta, bool, error) {
	if a.done {
		return dst, true, nil
	}
	if chat.CheckDepth(data) != nil || !gjson.ValidBytes(data) {
		return dst, false, fmt.Errorf("messages: stream event: %w", ErrBadAnswer)
	}
	ev := parse(data)
	typ := string(name)
	if typ == "" {
		typ = ev.Get("type").Str
	}
	switch typ {
	case "message_start":
		m := ev.Get("message")
		a.started = true
		a.id, a.model = strings.Clone(m.Get("id").Str), strings.Clone(m.Get("model").Str)
		a.usage.read(m.Get("usage"))
	case "content_block_start":
		return a.blockStart(dst, ev)
	case "content_block_delta":
		return a.blockDelta(dst, ev)
	case "message_delta":
		a.stop = canonicalStop(ev.Get("delta.stop_reason").Str)
		a.usage.read(ev.Get("usage"))
		dst = append(dst, wire.Delta{Kind: wire.Finish, Text: a.stop, Usage: a.usage.canonical()})
	case "message_stop":
		if !a.started {
			return dst, false, fmt.Errorf("messages: stream event: message_stop before message_start: %w", ErrBadAnswer)
		}
		a.done = true
		return dst, true, nil
	case "error":
		return dst, false, fmt.Errorf("messages: stream event: %w: %s: %s", ErrUpstream, ev.Get("error.type").Str, ev.Get("error.message").Str)
	}
	// ping, content_block_stop and events added later carry nothing to keep.
	return dst, false, nil
}

func (a *Assembler) blockStart(dst []wire.Delta, ev gjson.Result) ([]wire.Delta, bool, error) {
	if ev.Get("index").Int() != int64(len(a.blocks)) {
		return dst, false, fmt.Errorf("messages: stream event: content block %d started after %d blocks: %w",
			ev.Get("index").Int(), len(a.blocks), ErrBadAnswer)
	}
	cb := ev.Get("content_block")
	if !cb.IsObject() {
		return dst, false, fmt.Errorf("messages: stream event: content block without content_block: %w", ErrBadAnswer)
	}
	a.blocks = append(a.blocks, block{typ: strings.Clone(cb.Get("type").Str), start: strings.Clone(cb.Raw)})
	b := &a.blocks[len(a.blocks)-1]
	switch b.typ {
	case typeText:
		b.ordinal = a.texts
		a.texts++
		if t := cb.Get("text").Str; t != "" {
			b.text.WriteString(t)
			dst = append(dst, wire.Delta{Kind: wire.TextDelta, Index: b.ordinal, Text: t})
		}
	case typeToolUse:
		b.ordinal = a.calls
		a.calls++
		dst = append(dst, wire.Delta{Kind: wire.ToolCallStart, Index: b.ordinal,
			CallID: strings.Clone(cb.Get("id").Str), Name: strings.Clone(cb.Get("name").Str)})
	case typeThinking:
		b.ordinal = a.thinks
		a.thinks++
		if t := cb.Get("thinking").Str; t != "" {
			b.text.WriteString(t)
			dst = append(dst, wire.Delta{Kind: wire.ReasoningDelta, Index: b.ordinal, Text: t})
		}
		b.sig.WriteString(cb.Get("signature").Str)
	}
	return dst, false, nil
}

func (a *Assembler) blockDelta(dst []wire.Delta, ev gjson.Result) ([]wire.Delta, bool, error) {
	i := ev.Get("index").Int()
	if i < 0 || i >= int64(len(a.blocks)) {
		return dst, false, fmt.Errorf("messages: stream event: delta for content block %d of %d: %w", i, len(a.blocks), ErrBadAnswer)
	}
	b := &a.blocks[i]
	d := ev.Get("delta")
	switch d.Get("type").Str {
	case "text_delta":
		t := d.Get("text").Str
		b.text.WriteString(t)
		if b.typ == typeText && t != "" {
			dst = append(dst, wire.Delta{Kind: wire.TextDelta, Index: b.ordinal, Text: strings.Clone(t)})
		}
	case "input_json_delta":
		p := d.Get("partial_json").Str
		b.input.WriteString(p)
		if b.typ == typeToolUse && p != "" {
			dst = append(dst, wire.Delta{Kind: wire.ArgumentsDelta, Index: b.ordinal, Text: strings.Clone(p)})
		}
	case "thinking_delta":
		t := d.Get("thinking").Str
		b.text.WriteString(t)
		if t != "" {
			dst = append(dst, wire.Delta{Kind: wire.ReasoningDelta, Index: b.ordinal, Text: strings.Clone(t)})
		}
	case "signature_delta":
		b.sig.WriteString(d.Get("signature").Str)
	}
	return dst, false, nil
}

// Answer returns the assembled answer once message_stop arrived: Stored
// is one assistant message whose blocks are the start events' blocks
// with their streamed text, input, thinking and signature filled in.
func (a *Assembler) Answer() (wire.Answer, error) {
	if !a.done {
		return wire.Answer{}, fmt.Errorf("messages: assemble: %w", ErrIncomplete)
	}
	blocks := make([]string, 0, len(a.blocks))
	for i := range a.blocks {
		b, err := a.blocks[i].json()
		if err != nil {
			return wire.Answer{}, fmt.Errorf("messages: assemble block %d: %w", i, err)
		}
		blocks = append(blocks, b)
	}
	stored := body.AppendMessage(nil, roleAssistant, "content", blocks)
	msg, err := Codec{}.Decode(stored)
	if err != nil {
		return wire.Answer{}, fmt.Errorf("messages: assemble: %w", err)
	}
	return wire.Answer{ID: a.id, Model: a.model, Stored: [][]byte{stored}, Hashed: Codec{}.hashed(stored, msg), Message: msg, Stop: a.stop, Usage: a.usage.canonical()}, nil
}

// json returns the block's JSON: its start block with what streamed in.
func (b *block) json() (string, error) {
	raw := b.start
	var err error
	set := func(key, val string) {
		if err == nil {
			raw, err = sjson.SetRaw(raw, key, val)
		}
	}
	quote := func(s string) string { return string(gjson.AppendJSONString(nil, s)) }
	switch b.typ {
	case typeText:
		set("text", quote(b.text.String()))
	case typeThinking:
		set("thinking", quote(b.text.String()))
		set("signature", quote(b.sig.String()))
	}
	if in := strings.TrimSpace(b.input.String()); in != "" {
		if !gjson.Valid(in) {
			return "", fmt.Errorf("tool input is not JSON: %w", ErrBadAnswer)
		}
		set("input", in)
	}
	return raw, err
}
