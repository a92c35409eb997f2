package messages

import (
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/protocol/internal/body"
	"github.com/recallproxy/recall/wire"
)

// NewRenderer returns a Renderer of one streamed answer to req.
func (Ingress) NewRenderer(req *wire.Request) wire.Renderer {
	return &Renderer{id: NewMessageID(), model: req.Model, open: -1}
}

// Renderer writes a canonical delta stream as Anthropic's event stream
// (https://docs.anthropic.com/en/docs/build-with-claude/streaming), each
// event an SSE "event:" line and a "data:" line: message_start (a Message
// with empty content), then per content block content_block_start, its
// content_block_delta events (text_delta, input_json_delta,
// thinking_delta) and content_block_stop, blocks in the order they first
// appear; End writes message_delta (stop_reason and usage) and
// message_stop. A block is closed when the next one starts; a delta for a
// block already closed (tool call arguments interleaved across calls,
// which chat upstreams may stream) still names that block's index, which
// the SDKs accumulate by index. The Message id is minted when the
// renderer is made, as message_start must carry it.
type Renderer struct {
	id, model string
	started   bool
	blocks    map[blockKey]int // block index of each canonical part
	next      int              // blocks started
	open      int              // the open block, -1 when none
	stop      string
	usage     wire.Usage
}

// blockKey names a canonical part: a delta kind (the kind that starts
// it) and the part's index among its kind.
type blockKey struct {
	kind  wire.DeltaKind
	index int
}

var _ wire.Renderer = (*Renderer)(nil)

// Delta appends the events for d.
func (r *Renderer) Delta(dst []byte, d wire.Delta) []byte {
	dst = r.start(dst)
	switch d.Kind {
	case wire.TextDelta, wire.RefusalDelta:
		if d.Text == "" {
			return dst
		}
		var i int
		dst, i = r.block(dst, blockKey{d.Kind, d.Index}, `{"type":"text","text":""}`)
		return appendDelta(dst, i, `{"type":"text_delta","text":`, d.Text)
	case wire.ToolCallStart:
		cb := append([]byte(`{"type":"tool_use","id":`), gjson.AppendJSONString(nil, d.CallID)...)
		cb = append(append(append(cb, `,"name":`...), gjson.AppendJSONString(nil, d.Name)...), `,"input":{}}`...)
		dst, _ = r.block(dst, blockKey{wire.ToolCallStart, d.Index}, string(cb))
		return dst
	case wire.ArgumentsDelta:
		if d.Text == "" {
			return dst
		}
		var i int
		dst, i = r.block(dst, blockKey{wire.ToolCallStart, d.Index}, `{"type":"tool_use","id":"","name":"","input":{}}`)
		return appendDelta(dst, i, `{"type":"input_json_delta","partial_json":`, d.Text)
	case wire.ReasoningDelta:
		if d.Text == "" {
			return dst
		}
		var i int
		dst, i = r.block(dst, blockKey{wire.ReasoningDelta, d.Index}, `{"type":"thinking","thinking":"","signature":""}`)
		return appendDelta(dst, i, `{"type":"thinking_delta","thinking":`, d.Text)
	case wire.Finish:
		r.stop, r.usage = d.Text, d.Usage
		return r.closeOpen(dst)
	}
	return dst
}

// End appends the events that close the stream: the rest of a when no
// delta carried any of it (a stream rendered from a whole answer), the
// last content_block_stop, message_delta with a's stop reason and usage
// (the event a client holds a durable turn by), and message_stop.
func (r *Renderer) End(dst []byte, a *wire.Answer) []byte {
	if r.next == 0 && a != nil {
		for _, d := range answerDeltas(a) {
			dst = r.Delta(dst, d)
		}
	}
	dst = r.start(dst)
	dst = r.closeOpen(dst)
	stop, u := body.Ending(a, r.stop, r.usage)
	dst = append(dst, "event: message_delta\ndata: "...)
	dst = append(dst, `{"type":"message_delta","delta":{"stop_reason":`...)
	dst = gjson.AppendJSONString(dst, stopReason(stop))
	dst = append(dst, `,"stop_sequence":null},"usage":`...)
	dst = appendUsage(dst, u, true)
	dst = append(dst, "}\n\n"...)
	return append(dst, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
}

// answerDeltas are the deltas that stream a's text and tool calls.
func answerDeltas(a *wire.Answer) []wire.Delta {
	var ds []wire.Delta
	texts, calls := 0, 0
	for _, p := range a.Message.Parts {
		switch p.Kind {
		case wire.Text, wire.Refusal:
			ds = append(ds, wire.Delta{Kind: wire.TextDelta, Index: texts, Text: p.Text})
			texts++
		case wire.ToolCall:
			ds = append(ds, wire.Delta{Kind: wire.ToolCallStart, Index: calls, CallID: p.CallID, Name: p.Name},
				wire.Delta{Kind: wire.ArgumentsDelta, Index: calls, Text: p.Arguments})
			calls++
		}
	}
	return ds
}

// start appends message_start once.
func (r *Renderer) start(dst []byte) []byte {
	if r.started {
		return dst
	}
	r.started = true
	dst = append(dst, "event: message_start\ndata: "...)
	dst = append(dst, `{"type":"message_start","message":{"id":`...)
	dst = gjson.AppendJSONString(dst, r.id)
	dst = append(dst, `,"type":"message","role":"assistant","model":`...)
	dst = gjson.AppendJSONString(dst, r.model)
	dst = append(dst, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}}`+"\n\n"...)
	return dst
}

// block returns the block index of key, starting the block (with
// content block cb) and closing the open one if it is new.
func (r *Renderer) block(dst []byte, key blockKey, cb string) ([]byte, int) {
	if i, ok := r.blocks[key]; ok {
		return dst, i
	}
	dst = r.closeOpen(dst)
	if r.blocks == nil {
		r.blocks = make(map[blockKey]int, 4)
	}
	i := r.next
	r.next++
	r.blocks[key], r.open = i, i
	dst = append(dst, "event: content_block_start\ndata: "...)
	dst = append(dst, `{"type":"content_block_start","index":`...)
	dst = strconv.AppendInt(dst, int64(i), 10)
	dst = append(dst, `,"content_block":`...)
	dst = append(dst, cb...)
	return append(dst, "}\n\n"...), i
}

// closeOpen appends content_block_stop for the open block, if any.
func (r *Renderer) closeOpen(dst []byte) []byte {
	if r.open < 0 {
		return dst
	}
	dst = append(dst, "event: content_block_stop\ndata: "...)
	dst = append(dst, `{"type":"content_block_stop","index":`...)
	dst = strconv.AppendInt(dst, int64(r.open), 10)
	r.open = -1
	return append(dst, "}\n\n"...)
}

// appendDelta appends a content_block_delta of block i: head is the
// delta object up to its text member, text that member's value.
func appendDelta(dst []byte, i int, head, text string) []byte {
	dst = append(dst, "event: content_block_delta\ndata: "...)
	dst = append(dst, `{"type":"content_block_delta","index":`...)
	dst = strconv.AppendInt(dst, int64(i), 10)
	dst = append(dst, `,"delta":`...)
	dst = append(dst, head...)
	dst = gjson.AppendJSONString(dst, text)
	return append(dst, "}}\n\n"...)
}
