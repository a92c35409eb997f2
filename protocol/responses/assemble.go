package responses

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/jsonscan"
	"github.com/recallproxy/recall/wire"
)

// Assembler reads a Responses stream (response.created, ...,
// response.completed) one event at a time. It emits TextDelta per
// output_text delta (Index counting the answer's text parts), RefusalDelta,
// ToolCallStart when a function_call item is added and ArgumentsDelta per
// arguments delta (Index counting calls), ReasoningDelta when a reasoning
// item is added (CallID its id, Text empty), per reasoning summary delta,
// and when the item is done (Raw the finished item), and Finish at the end. It is done at response.completed or
// response.incomplete; response.failed and an error event are errors.
// The answer is the final Response object's.
type Assembler struct {
	texts     map[[2]int64]int // (output_index, content_index) to text part
	calls     map[int64]int    // output_index to tool call
	reasoning map[int64]int    // output_index to reasoning item
	itemDone  map[int64][]byte // items of response.output_item.done
	final     []byte           // the Response of the terminal event, as Event read it
	answer    wire.Answer      // the terminal event's, once read (read)
	read      bool
	done      bool
	relay     bool    // reading for Relay: no deltas
	last      members // the members of the event Relay read last
	lastData  []byte  // that event's data, nil when it was not read so
}

var (
	_ wire.Assembler = (*Assembler)(nil)
	_ wire.Relayer   = (*Assembler)(nil)
)

// Relay reads one event as Event does, without its deltas: the events of
// a stream relayed to a Responses client (Renderer.Event), of which the
// answer is all that is needed. finished and done are set at the
// terminal event.
//
// An event the answer needs nothing of is read in one pass that
// validates it and keeps the members a Renderer relaying it reads
// (scanned).
func (a *Assembler) Relay(name, data []byte) (finished, done bool, err error) {
	a.relay, a.lastData = true, nil
	if len(data) > 0 && !a.done {
		// The pass stops at the type of an event whose Response Recall
		// renders its own of: the rest is only checked.
		m, ok := scanMembers(data)
		if ok && m.typ != "" && !endsAnswer(m.typ) && (!ownEvent(m.typ) || gjson.ValidBytes(data)) {
			a.last, a.lastData = m, data
			return false, false, nil
		}
		// A finished item, the other event the answer needs, is read
		// from the same pass as Event would read it (its output_index a
		// number: Event reads a string's digits too).
		if ok && m.typ == "response.output_item.done" && m.index.Type == gjson.Number {
			a.keepItem(m.index.Int(), m.item.Raw)
			a.last, a.lastData = m, data
			return false, false, nil
		}
		// The answer's end, read in one pass too.
		if ok && (m.typ == "response.completed" || m.typ == "response.incomplete") {
			if read, err := a.finish(data); read {
				return err == nil, err == nil, err
			}
		}
	}
	_, done, err = a.Event(nil, name, data)
	return done, done, err
}

// finish reads data, a response.completed or response.incomplete event,
// for the answer (as Event reads it) in one pass that validates the
// event and reads its Response's members as it goes (scanResponseAt),
// where Event validates the event whole, looks its Response up and walks
// that again (most of a streamed answer's end). read is false for an
// event the pass cannot read so (see scanResponse), which Event reads.
func (a *Assembler) finish(data []byte) (read bool, err error) {
	s := jsonscan.Scanner{B: data}
	var m responseMembers
	at := -1
	walked := s.Object(func(name []byte) bool {
		if string(name) == "response" && at < 0 { // the first, as gjson's lookup
			at = s.I
			var ok bool
			m, ok = scanResponseAt(&s)
			return ok
		}
		_, ok := s.Value(maxEventDepth)
		return ok
	})
	if s.Space(); !walked || s.I != len(data) || at < 0 {
		return false, nil
	}
	ans, err := m.answer(a.doneItems())
	if err != nil {
		return true, err
	}
	a.answer, a.read, a.done = ans, true, true
	return true, nil
}

// scanned returns the members Relay read of the event of data, when
// that is the event it read last in one pass.
func (a *Assembler) scanned(data []byte) (members, bool) {
	if a == nil || len(data) == 0 || len(a.lastData) != len(data) || &a.lastData[0] != &data[0] {
		return members{}, false
	}
	return a.last, true
}

// StoredAnswer returns the answer, as Answer does (wire.Relayer).
func (a *Assembler) StoredAnswer() (wire.Answer, error) { return a.Answer() }

// Event reads one event. name is the SSE event name; the event's type is
// read from the data's "type", which OpenAI always sends.
func (a *Assembler) Event(dst []wire.Delta, name, data []byte) ([]wire.Delta, bool, error) {
	if a.done {
		return dst, true, nil
	}
	if len(data) == 0 {
		return dst, false, nil // a comment or keepalive
	}
	if out, ok := a.textDelta(dst, data); ok {
		return out, false, nil
	}
	if !gjson.ValidBytes(data) {
		return dst, false, errors.New("responses: stream event: invalid JSON")
	}
	ev := parse(data)
	typ := ev.Get("type").Str
	if typ == "" {
		typ = string(name)
	}
	if a.relay && !endsAnswer(typ) {
		return dst, false, nil
	}
	switch typ {
	case "response.output_item.added":
		item := ev.Get("item")
		idx := ev.Get("output_index").Int()
		switch item.Get("type").Str {
		case typeFunctionCall:
			if a.calls == nil {
				a.calls = map[int64]int{}
			}
			n := len(a.calls)
			a.calls[idx] = n
			dst = append(dst, wire.Delta{Kind: wire.ToolCallStart, Index: n,
				CallID: strings.Clone(item.Get("call_id").Str), Name: strings.Clone(item.Get("name").Str)})
			if args := item.Get("arguments").Str; args != "" {
				dst = append(dst, wire.Delta{Kind: wire.ArgumentsDelta, Index: n, Text: strings.Clone(args)})
			}
		case typeReasoning:
			if a.reasoning == nil {
				a.reasoning = map[int64]int{}
			}
			n := len(a.reasoning)
			a.reasoning[idx] = n
			dst = append(dst, wire.Delta{Kind: wire.ReasoningDelta, Index: n, CallID: strings.Clone(item.Get("id").Str)})
		}
	case "response.output_text.delta":
		dst = a.appendText(dst, ev.Get("output_index").Int(), ev.Get("content_index").Int(), ev.Get("delta").Str)
	case "response.refusal.delta":
		dst = append(dst, wire.Delta{Kind: wire.RefusalDelta, Text: strings.Clone(ev.Get("delta").Str)})
	case "response.function_call_arguments.delta":
		if n, ok := a.calls[ev.Get("output_index").Int()]; ok {
			dst = append(dst, wire.Delta{Kind: wire.ArgumentsDelta, Index: n, Text: strings.Clone(ev.Get("delta").Str)})
		}
	case "response.reasoning_summary_text.delta":
		if n, ok := a.reasoning[ev.Get("output_index").Int()]; ok {
			dst = append(dst, wire.Delta{Kind: wire.ReasoningDelta, Index: n,
				CallID: strings.Clone(ev.Get("item_id").Str), Text: strings.Clone(ev.Get("delta").Str)})
		}
	case "response.output_item.done":
		idx := ev.Get("output_index").Int()
		item := ev.Get("item")
		a.keepItem(idx, item.Raw)
		if n, ok := a.reasoning[idx]; ok && item.Get("type").Str == typeReasoning {
			// The finished item carries encrypted_content, which a client
			// that asked for it reads from this event and sends back.
			dst = append(dst, wire.Delta{Kind: wire.ReasoningDelta, Index: n,
				CallID: strings.Clone(item.Get("id").Str), Raw: a.itemDone[idx]})
		}
	case "response.completed", "response.incomplete":
		a.final = []byte(ev.Get("response").Raw)
		ans, err := a.Answer()
		a.done = err == nil
		if err != nil {
			return dst, false, err
		}
		return append(dst, wire.Delta{Kind: wire.Finish, Text: ans.Stop, Usage: ans.Usage}), true, nil
	case "response.failed":
		msg := ev.Get("response.error.message").Str
		if msg == "" {
			msg = "no error given"
		}
		return dst, false, fmt.Errorf("%w: %s", ErrFailed, msg)
	case "error":
		msg := ev.Get("message").Str
		if msg == "" {
			msg = ev.Get("error.message").Str
		}
		return dst, false, fmt.Errorf("responses: stream error event: %w: %s", wire.ErrUpstream, msg)
	}
	return dst, false, nil
}

// Answer returns the answer of the terminal event's Response; an output
// left empty there is made of the output_item.done items. The terminal
// event read it already (for the Finish delta): it is read once, and
// every call returns it.
func (a *Assembler) Answer() (wire.Answer, error) {
	if a.read {
		return a.answer, nil
	}
	if a.final == nil {
		return wire.Answer{}, errors.New("responses: answer: the stream has not completed")
	}
	ans, err := parseResponse(parse(a.final), a.doneItems())
	if err != nil {
		return wire.Answer{}, err
	}
	a.answer, a.read = ans, true
	return ans, nil
}

// doneItems are the output_item.done events' items, in output order
// (see parseResponse).
func (a *Assembler) doneItems() []gjson.Result {
	var done []gjson.Result
	for i := int64(0); i < int64(len(a.itemDone)); i++ {
		if raw, ok := a.itemDone[i]; ok {
			done = append(done, parse(raw))
		}
	}
	return done
}

// keepItem keeps a copy of item, the finished item at output index i
// (Answer's when the final Response has no output).
func (a *Assembler) keepItem(i int64, item string) {
	if a.itemDone == nil {
		a.itemDone = map[int64][]byte{}
	}
	a.itemDone[i] = []byte(item)
}

// endsAnswer reports whether events of type typ are ones a relay's
// Assembler reads (Relay): the items as done, the answer's end, its
// failure.
func endsAnswer(typ string) bool {
	switch typ {
	case "response.output_item.done", "response.completed", "response.incomplete", "response.failed", "error":
		return true
	}
	return false
}

// appendText appends the TextDelta of an output_text delta of text part
// (output, content).
func (a *Assembler) appendText(dst []wire.Delta, output, content int64, text string) []wire.Delta {
	key := [2]int64{output, content}
	if a.texts == nil {
		a.texts = map[[2]int64]int{}
	}
	n, ok := a.texts[key]
	if !ok {
		n = len(a.texts)
		a.texts[key] = n
	}
	return append(dst, wire.Delta{Kind: wire.TextDelta, Index: n, Text: strings.Clone(text)})
}

// textDelta reads a response.output_text.delta event, the one a token of
// a stream, in one pass that validates it as it reads its members
// (jsonscan), where Event's own reading validates the whole event, then
// looks each member up from its start. ok is false for any other event,
// and for one it cannot decide on (a member it does not expect in the
// shape it expects, invalid JSON): Event then reads it as it reads every
// other, and says what is wrong with it. The first of duplicate members
// counts, as gjson's lookup finds it.
func (a *Assembler) textDelta(dst []wire.Delta, data []byte) (out []wire.Delta, ok bool) {
	s := jsonscan.Scanner{B: data}
	var output, content int64
	var text []byte
	var escaped bool
	seen := 0 // of the bits below
	const (
		sType = 1 << iota
		sOutput
		sContent
		sDelta
	)
	walked := s.Object(func(name []byte) bool {
		bit := 0
		switch string(name) {
		case "type":
			bit = sType
		case "output_index":
			bit = sOutput
		case "content_index":
			bit = sContent
		case "delta":
			bit = sDelta
		}
		if bit == 0 || seen&bit != 0 {
			_, ok := s.Value(maxEventDepth)
			return ok
		}
		seen |= bit
		switch bit {
		case sType:
			typ, ok := s.Plain()
			return ok && string(typ) == "response.output_text.delta"
		case sDelta:
			start, end, esc, ok := s.Str()
			if ok {
				text, escaped = data[start-1:end+1], esc
			}
			return ok
		case sOutput:
			n, ok := scanIndex(&s)
			output = n
			return ok
		default:
			n, ok := scanIndex(&s)
			content = n
			return ok
		}
	})
	if s.Space(); !walked || s.I != len(data) || seen&sType == 0 {
		return dst, false
	}
	if a.relay {
		return dst, true
	}
	delta := ""
	if seen&sDelta != 0 {
		delta = bytesString(text[1 : len(text)-1])
		if escaped {
			delta = gjson.ParseBytes(text).Str
		}
	}
	return a.appendText(dst, output, content, delta), true
}

// maxEventDepth is how deeply textDelta follows a member it skips: a
// deeper event is Event's to read.
const maxEventDepth = 32

// scanIndex consumes an index, a number of at most nine digits without
// sign, fraction or exponent (any other number is Event's to read).
func scanIndex(s *jsonscan.Scanner) (int64, bool) {
	n, ok := s.SmallUint()
	return int64(n), ok
}
