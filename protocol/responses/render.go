package responses

import (
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/wire"
)

// NewRenderer returns a Renderer of req's answer as a Responses stream.
// req.ResponseID and req.Created name the response from its first event.
func (Ingress) NewRenderer(req *wire.Request) wire.Renderer {
	return &Renderer{req: req, cur: -1}
}

// Renderer writes a streamed answer as OpenAI's Responses events:
// response.created and response.in_progress first; per output item
// response.output_item.added, then for a message response.content_part.added,
// response.output_text.delta (or response.refusal.delta) events,
// response.output_text.done and response.content_part.done, for a
// function call response.function_call_arguments.delta events and
// .done; response.output_item.done; and at End response.completed (or
// response.incomplete) carrying the whole Response, the same object
// AppendResponse renders. Every event has its SSE "event:" line and a
// sequence_number counting from 0.
//
// Items are opened as deltas arrive and closed when the next one opens
// (as OpenAI does), text and refusals in a message item, each tool call
// in a function_call item, and a reasoning item for each ReasoningDelta
// that names a Responses reasoning item (CallID; readable reasoning of
// other protocols is not rendered). Items of the answer that no delta
// announced are rendered whole at End.
type Renderer struct {
	req     *wire.Request
	id      string
	seq     int
	started bool
	items   []*rItem
	cur     int         // index of the open item, -1 when none
	calls   map[int]int // tool call index to item
	reason  map[int]int // reasoning index to item

	// Relaying a Responses upstream's events (Event):
	relayed [][]byte   // Recall's id (JSON) of each item by output index
	edits   []edit     // the spans of the event being relayed to replace
	data    []byte     // the data of an event of several data lines
	from    *Assembler // the assembler whose Relay read the events, if known

	// The stored copy of the finished Response of the answer doneFor
	// (StoredResponse's, its output empty at done[doneOut:doneOut+2]) and
	// its items, from which End renders the Response again.
	doneFor   *wire.Answer
	done      []byte
	doneOut   int
	doneItems [][]byte
}

// rItem is one output item being streamed.
type rItem struct {
	typ    string // message, function_call, reasoning
	id     string
	parts  []rPart // message content
	part   int     // the text part index TextDelta last wrote, -1: none
	callID string
	name   string
	args   strings.Builder
	raw    []byte // a reasoning item as the upstream finished it, nil until then
	closed bool
}

// partText is the room a streamed part's text is given when it opens,
// enough for a short answer's in one allocation (the text then grows by
// doubling).
const partText = 256

// rPart is one content part of a streamed message.
type rPart struct {
	refusal bool
	text    strings.Builder
}

var (
	_ wire.Renderer      = (*Renderer)(nil)
	_ wire.ErrorRenderer = (*Renderer)(nil)
)

// Delta appends the events for d.
func (r *Renderer) Delta(dst []byte, d wire.Delta) []byte {
	dst = r.start(dst)
	switch d.Kind {
	case wire.TextDelta, wire.RefusalDelta:
		refusal := d.Kind == wire.RefusalDelta
		var it *rItem
		if r.cur >= 0 && r.items[r.cur].typ == typeMessage {
			it = r.items[r.cur]
		} else {
			dst, it = r.open(dst, typeMessage)
			it.part = -1
		}
		ci := len(it.parts) - 1
		if ci < 0 || it.parts[ci].refusal != refusal || (!refusal && it.part != d.Index) {
			dst = r.closePart(dst, it)
			it.parts = append(it.parts, rPart{refusal: refusal})
			it.closed = false
			ci = len(it.parts) - 1
			it.parts[ci].text.Grow(partText)
			kind := wire.Text
			if refusal {
				kind = wire.Refusal
			}
			dst = r.event(dst, "response.content_part.added", func(b []byte) []byte {
				b = r.itemRef(b, it, ci)
				return appendOutputPart(append(b, `,"part":`...), kind, "")
			})
		}
		if !refusal {
			it.part = d.Index
		}
		it.parts[ci].text.WriteString(d.Text)
		typ := "response.output_text.delta"
		if refusal {
			typ = "response.refusal.delta"
		}
		dst = r.event(dst, typ, func(b []byte) []byte {
			b = r.itemRef(b, it, ci)
			b = gjson.AppendJSONString(append(b, `,"delta":`...), d.Text)
			if !refusal {
				b = append(b, `,"logprobs":[]`...)
			}
			return b
		})
	case wire.ToolCallStart:
		var it *rItem
		dst, it = r.open(dst, typeFunctionCall, func(it *rItem) { it.callID, it.name = d.CallID, d.Name })
		if r.calls == nil {
			r.calls = map[int]int{}
		}
		r.calls[d.Index] = r.indexOf(it)
	case wire.ArgumentsDelta:
		i, ok := r.calls[d.Index]
		if !ok || d.Text == "" {
			break
		}
		it := r.items[i]
		it.args.WriteString(d.Text)
		dst = r.event(dst, "response.function_call_arguments.delta", func(b []byte) []byte {
			b = r.itemRef(b, it, -1)
			return gjson.AppendJSONString(append(b, `,"delta":`...), d.Text)
		})
	case wire.ReasoningDelta:
		if d.CallID == "" {
			break // another protocol's readable reasoning: not an item here
		}
		if i, ok := r.reason[d.Index]; ok {
			if d.Raw != nil {
				r.items[i].raw = d.Raw // the item as done, encrypted_content included
			}
			break // summary text: the final item carries it
		}
		var it *rItem
		dst, it = r.open(dst, typeReasoning, func(it *rItem) { it.id = d.CallID })
		if r.reason == nil {
			r.reason = map[int]int{}
		}
		r.reason[d.Index] = r.indexOf(it)
		it.raw = d.Raw
	}
	return dst
}

// Error appends the error event that ends a stream which failed instead
// of End, numbered after every event r rendered: OpenAI numbers each event
// of a stream, its error event too.
func (r *Renderer) Error(dst []byte, code, message string) []byte {
	return r.event(dst, "error", func(b []byte) []byte {
		b = gjson.AppendJSONString(append(b, `,"code":`...), code)
		b = gjson.AppendJSONString(append(b, `,"message":`...), message)
		return append(b, `,"param":null`...)
	})
}

// AppendErrorEvent appends the error event of a Responses stream, OpenAI's
// {"type":"error","sequence_number","code","message","param"}, numbered
// seq: the event a stream that failed ends with (see [Renderer.Error]).
func AppendErrorEvent(dst []byte, seq int, code, message string) []byte {
	r := Renderer{seq: seq}
	return r.Error(dst, code, message)
}

// AppendError appends OpenAI's error body,
// {"error":{"message","type","param","code"}}.
func (Ingress) AppendError(dst []byte, status int, typ, code, param, message string) []byte {
	return append(dst, apierr.OpenAI(&apierr.Error{Status: status, Type: typ, Code: code, Param: param, Message: message})...)
}

// AppendErrorEvent appends the error event of a stream whose events
// Recall did not render (the upstream's, relayed): AppendErrorEvent's,
// numbered 0. A stream Recall rendered ends with its renderer's
// (Renderer.Error), numbered after the events before it.
func (Ingress) AppendErrorEvent(dst []byte, status int, typ, code, param, message string) []byte {
	return AppendErrorEvent(dst, 0, code, message)
}

// End closes the open item, renders the items no delta announced, and
// appends response.completed (response.incomplete when the answer was cut
// at its token limit or filtered) with the whole Response.
func (r *Renderer) End(dst []byte, a *wire.Answer) []byte {
	dst = r.start(dst)
	r.id = responseID(r.req, a)
	items := r.doneItems
	if r.doneFor != a {
		items = outputItems(a, r.id)
	}
	dst = r.closeItem(dst, items)
	for len(r.items) < len(r.relayed) { // relayed (Event), closed as they came
		r.items = append(r.items, &rItem{closed: true})
	}
	for i := len(r.items); i < len(items); i++ {
		dst = r.replay(dst, items[i])
	}
	typ := "response.completed"
	if a.Stop == wire.StopLength || a.Stop == wire.StopFilter {
		typ = "response.incomplete"
	}
	return r.event(dst, typ, func(b []byte) []byte {
		return r.appendFinished(append(b, `,"response":`...), a, items)
	})
}

// StoredResponse appends what AppendStoredResponse appends for r's
// request and a, the answer End is to render: the stored copy of the
// finished Response, which is committed before End renders the stream's
// last event. End then renders that event's Response from the copy and
// the items rendered here, so neither a nor the bytes appended may change
// until End.
func (r *Renderer) StoredResponse(dst []byte, a *wire.Answer) []byte {
	id := responseID(r.req, a)
	items := outputItems(a, id)
	start := len(dst)
	dst, out := appendResponseAt(dst, r.req, a, id, nil, false)
	r.doneFor, r.done, r.doneOut, r.doneItems = a, dst[start:], out[0]-start, items
	return dst
}

// AppendAnswer appends what Ingress.AppendAnswer appends for req and a,
// a non-streamed answer: from the stored copy StoredResponse rendered for
// a (and r's request) when it did, so that the Response is rendered once
// for the commit and the client, else anew. As with End, neither a nor
// the stored copy may change in between.
func (r *Renderer) AppendAnswer(dst []byte, req *wire.Request, a *wire.Answer) []byte {
	if r.doneFor != a || req != r.req {
		return AppendResponse(dst, req, a)
	}
	return r.appendFinished(dst, a, r.doneItems)
}

// appendFinished appends a's finished Response with its output items:
// the stored copy with the items in its empty output when StoredResponse
// rendered one for a, else rendered anew.
func (r *Renderer) appendFinished(dst []byte, a *wire.Answer, items [][]byte) []byte {
	if r.doneFor != a {
		return appendResponse(dst, r.req, a, r.id, items, false)
	}
	dst = append(dst, r.done[:r.doneOut]...)
	dst = appendItemArray(dst, items)
	return append(dst, r.done[r.doneOut+len("[]"):]...)
}

// start appends response.created and response.in_progress once.
func (r *Renderer) start(dst []byte) []byte {
	if r.started {
		return dst
	}
	r.started = true
	r.id = responseID(r.req, nil)
	dst = slices.Grow(dst, startRoom)
	// The two events carry the same in-progress Response: rendered once,
	// into the first, and copied into the second.
	var at int
	dst = r.event(dst, "response.created", func(b []byte) []byte {
		at = len(b)
		return appendResponse(append(b, `,"response":`...), r.req, nil, r.id, nil, true)
	})
	object := dst[at : len(dst)-len("}\n\n")]
	return r.event(dst, "response.in_progress", func(b []byte) []byte {
		return append(b, object...)
	})
}

// startRoom is the room start makes for a stream's first events, in one
// allocation where appending them grew the buffer half a dozen times:
// response.created and response.in_progress, each carrying the
// in-progress Response (about 1 KiB with the request's settings), and
// the first output's events after them.
const startRoom = 4 << 10

// open closes the open item and opens one of type typ.
func (r *Renderer) open(dst []byte, typ string, set ...func(*rItem)) ([]byte, *rItem) {
	dst = r.closeItem(dst, nil)
	it := &rItem{typ: typ, part: -1}
	for _, f := range set {
		f(it)
	}
	i := len(r.items)
	switch typ {
	case typeMessage:
		it.id = itemID("msg", r.id, i)
	case typeFunctionCall:
		it.id = itemID("fc", r.id, i)
	}
	r.items = append(r.items, it)
	r.cur = i
	dst = r.event(dst, "response.output_item.added", func(b []byte) []byte {
		b = strconv.AppendInt(append(b, `,"output_index":`...), int64(i), 10)
		return appendProgressItem(append(b, `,"item":`...), it)
	})
	return dst, it
}

// appendProgressItem appends an item as output_item.added shows it.
func appendProgressItem(b []byte, it *rItem) []byte {
	switch it.typ {
	case typeMessage:
		return appendOutputMessage(b, it.id, "in_progress", emptyContent)
	case typeFunctionCall:
		return appendCallItem(b, it.id, "in_progress", it.callID, it.name, "")
	}
	b = gjson.AppendJSONString(append(b, `{"id":`...), it.id)
	return append(b, `,"type":"reasoning","summary":[]}`...)
}

// emptyContent is the content of a message item no part was added to.
var emptyContent = []byte("[]")

// closeItem closes the open item; its done event carries final's item at
// its index when final has one of its type (the answer's item), else the
// item as streamed.
func (r *Renderer) closeItem(dst []byte, final [][]byte) []byte {
	if r.cur < 0 {
		return dst
	}
	i := r.cur
	it := r.items[i]
	r.cur = -1
	switch it.typ {
	case typeMessage:
		dst = r.closePart(dst, it)
	case typeFunctionCall:
		dst = r.event(dst, "response.function_call_arguments.done", func(b []byte) []byte {
			b = r.itemRef(b, it, -1)
			return gjson.AppendJSONString(append(b, `,"arguments":`...), it.args.String())
		})
	}
	var item []byte
	if i < len(final) && itemType(parse(final[i])) == it.typ {
		item = final[i]
	} else {
		item = r.streamedItem(it)
	}
	it.closed = true
	return r.event(dst, "response.output_item.done", func(b []byte) []byte {
		b = strconv.AppendInt(append(b, `,"output_index":`...), int64(i), 10)
		return append(append(b, `,"item":`...), item...)
	})
}

// streamedItem is a finished item made of what was streamed.
func (r *Renderer) streamedItem(it *rItem) []byte {
	switch it.typ {
	case typeMessage:
		content := []byte{'['}
		for j := range it.parts {
			if j > 0 {
				content = append(content, ',')
			}
			kind := wire.Text
			if it.parts[j].refusal {
				kind = wire.Refusal
			}
			content = appendOutputPart(content, kind, it.parts[j].text.String())
		}
		return appendOutputMessage(nil, it.id, "completed", append(content, ']'))
	case typeFunctionCall:
		return appendCallItem(nil, it.id, "completed", it.callID, it.name, it.args.String())
	}
	if it.raw != nil {
		return it.raw
	}
	return appendProgressItem(nil, it)
}

// closePart closes the message's last content part, if open.
func (r *Renderer) closePart(dst []byte, it *rItem) []byte {
	ci := len(it.parts) - 1
	if ci < 0 || it.closed {
		return dst
	}
	p := &it.parts[ci]
	text := p.text.String()
	kind, typ, field := wire.Text, "response.output_text.done", "text"
	if p.refusal {
		kind, typ, field = wire.Refusal, "response.refusal.done", "refusal"
	}
	dst = r.event(dst, typ, func(b []byte) []byte {
		b = r.itemRef(b, it, ci)
		b = append(append(append(b, `,"`...), field...), `":`...)
		b = gjson.AppendJSONString(b, text)
		if !p.refusal {
			b = append(b, `,"logprobs":[]`...)
		}
		return b
	})
	dst = r.event(dst, "response.content_part.done", func(b []byte) []byte {
		b = r.itemRef(b, it, ci)
		return appendOutputPart(append(b, `,"part":`...), kind, text)
	})
	it.closed = true // reopened by the next part
	return dst
}

// replay renders an item of the answer that no delta announced, whole.
func (r *Renderer) replay(dst []byte, item []byte) []byte {
	v := parse(item)
	it := &rItem{typ: itemType(v), id: v.Get("id").Str, part: -1}
	i := len(r.items)
	r.items = append(r.items, it)
	switch it.typ {
	case typeMessage:
		dst = r.event(dst, "response.output_item.added", func(b []byte) []byte {
			b = strconv.AppendInt(append(b, `,"output_index":`...), int64(i), 10)
			return appendOutputMessage(append(b, `,"item":`...), it.id, "in_progress", emptyContent)
		})
		for _, p := range v.Get("content").Array() {
			refusal := p.Get("type").Str == partRefusal
			it.parts = append(it.parts, rPart{refusal: refusal})
			ci := len(it.parts) - 1
			text := p.Get("text").Str
			kind := wire.Text
			if refusal {
				text, kind = p.Get("refusal").Str, wire.Refusal
			}
			it.parts[ci].text.WriteString(text)
			it.closed = false
			dst = r.event(dst, "response.content_part.added", func(b []byte) []byte {
				b = r.itemRef(b, it, ci)
				return appendOutputPart(append(b, `,"part":`...), kind, "")
			})
			typ := "response.output_text.delta"
			if refusal {
				typ = "response.refusal.delta"
			}
			if text != "" {
				dst = r.event(dst, typ, func(b []byte) []byte {
					b = r.itemRef(b, it, ci)
					b = gjson.AppendJSONString(append(b, `,"delta":`...), text)
					if !refusal {
						b = append(b, `,"logprobs":[]`...)
					}
					return b
				})
			}
			dst = r.closePart(dst, it)
		}
	case typeFunctionCall:
		it.callID, it.name = v.Get("call_id").Str, v.Get("name").Str
		dst = r.event(dst, "response.output_item.added", func(b []byte) []byte {
			b = strconv.AppendInt(append(b, `,"output_index":`...), int64(i), 10)
			return appendCallItem(append(b, `,"item":`...), it.id, "in_progress", it.callID, it.name, "")
		})
		if args := v.Get("arguments").Str; args != "" {
			it.args.WriteString(args)
			dst = r.event(dst, "response.function_call_arguments.delta", func(b []byte) []byte {
				b = r.itemRef(b, it, -1)
				return gjson.AppendJSONString(append(b, `,"delta":`...), args)
			})
		}
		dst = r.event(dst, "response.function_call_arguments.done", func(b []byte) []byte {
			b = r.itemRef(b, it, -1)
			return gjson.AppendJSONString(append(b, `,"arguments":`...), it.args.String())
		})
	default:
		dst = r.event(dst, "response.output_item.added", func(b []byte) []byte {
			b = strconv.AppendInt(append(b, `,"output_index":`...), int64(i), 10)
			return append(append(b, `,"item":`...), item...)
		})
	}
	return r.event(dst, "response.output_item.done", func(b []byte) []byte {
		b = strconv.AppendInt(append(b, `,"output_index":`...), int64(i), 10)
		return append(append(b, `,"item":`...), item...)
	})
}

// itemRef appends item_id, output_index and (ci >= 0) content_index.
func (r *Renderer) itemRef(b []byte, it *rItem, ci int) []byte {
	b = gjson.AppendJSONString(append(b, `,"item_id":`...), it.id)
	b = strconv.AppendInt(append(b, `,"output_index":`...), int64(r.indexOf(it)), 10)
	if ci >= 0 {
		b = strconv.AppendInt(append(b, `,"content_index":`...), int64(ci), 10)
	}
	return b
}

func (r *Renderer) indexOf(it *rItem) int {
	for i, x := range r.items {
		if x == it {
			return i
		}
	}
	return -1
}

// event appends one SSE event of type typ; fields appends the members
// after type and sequence_number, each with its leading comma.
func (r *Renderer) event(dst []byte, typ string, fields func([]byte) []byte) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, typ...)
	dst = append(dst, "\ndata: {\"type\":\""...)
	dst = append(dst, typ...)
	dst = append(dst, `","sequence_number":`...)
	dst = strconv.AppendInt(dst, int64(r.seq), 10)
	r.seq++
	dst = fields(dst)
	return append(dst, "}\n\n"...)
}
