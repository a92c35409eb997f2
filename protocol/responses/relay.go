package responses

import (
	"bytes"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/wire"
)

// Relaying a Responses upstream's stream to a Responses client: the
// upstream's own events, each as it came but for Recall's ids and
// sequence numbers (Renderer.Event), where a stream of another
// protocol's is rebuilt from its deltas (Renderer.Delta). Recall renders
// only the Response objects: response.created and response.in_progress
// (the upstream's carry its own id and settings) and, after the commit,
// response.completed (End).

// Reads reports whether r renders asm's stream from its events
// (Renderer.Event) rather than from their deltas: asm is a Responses
// upstream's.
func (r *Renderer) Reads(asm wire.Assembler) bool {
	_, ok := asm.(*Assembler)
	return ok
}

// Event appends the client's events for one event of a Responses
// upstream's stream, raw as it came (its SSE lines): the event with
// Recall's sequence number, and Recall's id on the response's message
// and function call items (item_id, the item of
// response.output_item.added, and the item of response.output_item.done
// as [outputItems] renders it), its other bytes as the upstream sent
// them. The upstream's response.created and response.in_progress are
// replaced by Recall's (once), its response.completed and
// response.incomplete by End's after the commit; a comment or a ping
// becomes nothing. Event and Delta are not mixed on one Renderer.
//
// flush is false for an event a client has no use for before the next
// one (a response's, an item's or a part's opening, a done event): as
// Delta renders them, with the next event that carries output.
func (r *Renderer) Event(dst, raw []byte) (out []byte, flush bool) {
	data := r.eventData(raw)
	if len(data) == 0 {
		return dst, false
	}
	dst = r.start(dst)
	var typ, seq, index, itemRef, item gjson.Result
	parse(data).ForEach(func(k, v gjson.Result) bool {
		var m *gjson.Result
		switch k.Str {
		case "type":
			m = &typ
		case "sequence_number":
			m = &seq
		case "output_index":
			m = &index
		case "item_id":
			m = &itemRef
		case "item":
			m = &item
		}
		if m != nil && !m.Exists() {
			*m = v
		}
		return true
	})
	name := typ.Str
	switch name {
	case "response.created", "response.in_progress", "response.completed", "response.incomplete":
		return dst, false
	case "":
		name = string(eventName(raw))
	}
	i := -1
	if index.Type == gjson.Number && index.Int() >= 0 && index.Int() < 1<<20 {
		i = int(index.Int())
	}
	edits := r.edits[:0]
	if seq.Exists() {
		edits = append(edits, edit{at: seq.Index, end: seq.Index + len(seq.Raw), seq: true})
	} else if typ.Exists() { // after the type, where OpenAI has it
		at := typ.Index + len(typ.Raw)
		edits = append(edits, edit{at: at, end: at, seq: true, member: true})
	} else if at := bytes.IndexByte(data, '{'); at >= 0 {
		edits = append(edits, edit{at: at + 1, end: at + 1, seq: true, member: true, first: true})
	}
	flush = true
	switch name {
	case "response.output_item.added":
		if item.IsObject() && i >= 0 {
			t := itemType(item)
			id := r.itemIDAt(t, i, item.Get("id").Str)
			if idv := item.Get("id"); idv.Exists() && idv.Type == gjson.String && idv.Str != id {
				edits = append(edits, edit{at: idv.Index, end: idv.Index + len(idv.Raw), with: gjson.AppendJSONString(nil, id)})
			}
			flush = t != typeMessage
		}
	case "response.output_item.done":
		if item.IsObject() && i >= 0 {
			edits = append(edits, edit{at: item.Index, end: item.Index + len(item.Raw), with: withRecallID(data[item.Index:item.Index+len(item.Raw)], r.id, i)})
		}
		flush = false
	default:
		if itemRef.Type == gjson.String && i >= 0 && i < len(r.relayed) && r.relayed[i] != "" && itemRef.Str != r.relayed[i] {
			edits = append(edits, edit{at: itemRef.Index, end: itemRef.Index + len(itemRef.Raw), with: gjson.AppendJSONString(nil, r.relayed[i])})
		}
		flush = name != "response.content_part.added" && !strings.HasSuffix(name, ".done")
	}
	slices.SortFunc(edits, func(a, b edit) int { return a.at - b.at })
	r.edits = edits
	dst = append(append(append(dst, "event: "...), name...), "\ndata: "...)
	at := 0
	for _, e := range edits {
		dst = append(dst, data[at:e.at]...)
		switch {
		case e.seq:
			if e.member && !e.first {
				dst = append(dst, ',')
			}
			if e.member {
				dst = append(dst, `"sequence_number":`...)
			}
			dst = strconv.AppendInt(dst, int64(r.seq), 10)
			r.seq++
			if e.first && hasMember(data[e.at:]) {
				dst = append(dst, ',')
			}
		default:
			dst = append(dst, e.with...)
		}
		at = e.end
	}
	dst = append(dst, data[at:]...)
	return append(dst, "\n\n"...), flush
}

// edit is a span of an upstream event's data that Event replaces: by
// Recall's sequence number (seq; member: inserted as a member, the
// upstream sent none, after the type or, first, ahead of every other
// member), else by with.
type edit struct {
	at, end            int
	seq, member, first bool
	with               []byte
}

// itemIDAt is the id of the upstream's output item at index i, of type
// t, upstream its own id: Recall's for a message or a function call (as
// outputItems names them), else the upstream's. Events naming the item
// (item_id) get the same.
func (r *Renderer) itemIDAt(t string, i int, upstream string) string {
	id := upstream
	switch t {
	case typeMessage:
		id = itemID("msg", r.id, i)
	case typeFunctionCall:
		id = itemID("fc", r.id, i)
	}
	for len(r.relayed) <= i {
		r.relayed = append(r.relayed, "")
	}
	r.relayed[i] = id
	return id
}

// eventData is the data of the SSE event raw: its data lines' values,
// joined when there is more than one (into r's scratch buffer, valid
// until the next call) by a space where SSE joins them by a newline: the
// data is JSON, where a newline can only be white space, and the event
// relayed has it on one data line.
func (r *Renderer) eventData(raw []byte) []byte {
	var one []byte
	n := 0
	for line := range sseLines(raw) {
		v, ok := field(line, "data")
		if !ok {
			continue
		}
		switch n++; n {
		case 1:
			one = v
		case 2:
			r.data = append(append(append(r.data[:0], one...), ' '), v...)
		default:
			r.data = append(append(r.data, ' '), v...)
		}
	}
	if n > 1 {
		return r.data
	}
	return one
}

// eventName is the SSE event raw's event field, nil when it has none.
func eventName(raw []byte) []byte {
	for line := range sseLines(raw) {
		if v, ok := field(line, "event"); ok {
			return v
		}
	}
	return nil
}

// sseLines yields raw's lines without their terminators (\n, \r\n or \r).
func sseLines(raw []byte) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for len(raw) > 0 {
			end := bytes.IndexAny(raw, "\r\n")
			if end < 0 {
				yield(raw)
				return
			}
			line := raw[:end]
			next := end + 1
			if raw[end] == '\r' && next < len(raw) && raw[next] == '\n' {
				next++
			}
			raw = raw[next:]
			if !yield(line) {
				return
			}
		}
	}
}

// field is line's value when it is the SSE field name ("name:" and the
// value, one leading space dropped).
func field(line []byte, name string) ([]byte, bool) {
	if len(line) <= len(name) || string(line[:len(name)]) != name || line[len(name)] != ':' {
		return nil, false
	}
	v := line[len(name)+1:]
	if len(v) > 0 && v[0] == ' ' {
		v = v[1:]
	}
	return v, true
}

// hasMember reports whether the object whose members rest starts has
// any (rest begins after its '{').
func hasMember(rest []byte) bool {
	rest = bytes.TrimLeft(rest, " \t\r\n")
	return len(rest) > 0 && rest[0] != '}'
}
