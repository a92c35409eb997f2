package responses

import (
	"bytes"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/jsonscan"
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
//
// When it does, Event reads each event's members as asm's Relay read
// them, where it can, instead of reading them again.
func (r *Renderer) Reads(asm wire.Assembler) bool {
	a, ok := asm.(*Assembler)
	if ok {
		r.from = a
	}
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
	m, ok := r.from.scanned(data)
	if !ok {
		m, ok = scanMembers(data)
	}
	if !ok {
		m = readMembers(data)
	}
	name := m.typ
	switch {
	case ownEvent(name):
		return dst, false
	case name == "":
		name = string(eventName(raw))
	}
	edits, flush := r.plan(data, name, &m)
	dst = append(append(append(dst, "event: "...), name...), "\ndata: "...)
	return append(r.appendEdited(dst, data, edits), "\n\n"...), flush
}

// plan returns the edits of the event data whose members are m (its
// sequence number and, for an item's events, the item's id), sorted by
// where they are, and whether the event is flushed (see Event).
func (r *Renderer) plan(data []byte, name string, m *members) (edits []edit, flush bool) {
	i := -1
	if m.index.Type == gjson.Number && m.index.Int() >= 0 && m.index.Int() < 1<<20 {
		i = int(m.index.Int())
	}
	typ, seq, itemRef, item := m.typEnd, m.seq, m.itemRef, m.item
	edits = r.edits[:0]
	if seq.Exists() {
		edits = append(edits, edit{at: seq.Index, end: seq.Index + len(seq.Raw), seq: true})
	} else if typ > 0 { // after the type, where OpenAI has it
		edits = append(edits, edit{at: typ, end: typ, seq: true, member: true})
	} else if at := bytes.IndexByte(data, '{'); at >= 0 {
		edits = append(edits, edit{at: at + 1, end: at + 1, seq: true, member: true, first: true})
	}
	flush = true
	switch name {
	case "response.output_item.added":
		if item.IsObject() && i >= 0 {
			item := parseAt(data, item) // the item's own, not the event's
			t := itemType(item)
			idv := item.Get("id")
			id := r.itemIDAt(t, i, idv.Str)
			if idv.Type == gjson.String && idv.Raw != string(id) {
				edits = append(edits, edit{at: idv.Index, end: idv.Index + len(idv.Raw), with: id})
			}
			flush = t != typeMessage
		}
	case "response.output_item.done":
		if item.IsObject() && i >= 0 {
			edits = append(edits, edit{at: item.Index, end: item.Index + len(item.Raw), with: withRecallID(data[item.Index:item.Index+len(item.Raw)], r.id, i)})
		}
		flush = false
	default:
		if itemRef.Type == gjson.String && i >= 0 && i < len(r.relayed) && r.relayed[i] != nil && itemRef.Raw != string(r.relayed[i]) {
			edits = append(edits, edit{at: itemRef.Index, end: itemRef.Index + len(itemRef.Raw), with: r.relayed[i]})
		}
		flush = name != "response.content_part.added" && !strings.HasSuffix(name, ".done")
	}
	slices.SortFunc(edits, func(a, b edit) int { return a.at - b.at })
	r.edits = edits
	return edits, flush
}

// appendEdited appends data with edits made: each sequence number
// Recall's next, each replaced span its replacement.
func (r *Renderer) appendEdited(dst, data []byte, edits []edit) []byte {
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
	return append(dst, data[at:]...)
}

// members are the members of an upstream event that Event reads (the
// first of duplicates, as gjson's lookup finds it), each at its Index in
// the event's data: typ the type (typEnd the index after it, 0 when
// there is none), index the output_index. Of the others Event reads the
// Raw, Index and Type only.
type members struct {
	typ                       string
	typEnd                    int
	seq, index, itemRef, item gjson.Result
}

// scanMembers reads an event's members in one pass (jsonscan) that
// validates what it reads and stops at the type of an event Recall
// renders its own of (ownEvent); ok is false for an event it cannot read
// so (invalid JSON, a name with an escape, an escaped type, a value
// nested past maxEventDepth), which readMembers reads. Of any other
// event, ok says it is valid JSON.
func scanMembers(data []byte) (m members, ok bool) {
	s := jsonscan.Scanner{B: data}
	own := false
	ok = s.Object(func(name []byte) bool {
		if string(name) == "type" && m.typEnd == 0 {
			typ, ok := s.Plain()
			if !ok {
				return false
			}
			m.typ, m.typEnd = bytesString(typ), s.I
			own = ownEvent(m.typ)
			return !own // Recall renders its own: nothing else read
		}
		v := m.slot(bytesString(name))
		at := s.I
		kind, ok := s.Value(maxEventDepth)
		if ok && v != nil && !v.Exists() {
			*v = gjson.Result{Raw: bytesString(data[at:s.I]), Index: at, Type: resultType(kind)}
			if kind == jsonscan.KindNumber {
				v.Num = numberAt(data[at:s.I])
			}
		}
		return ok
	})
	if ok {
		s.Space()
		ok = s.I == len(data)
	}
	return m, ok || own
}

// numberAt is the value of num, a valid JSON number: read as a digit
// run where it is a small whole number (an event's output_index and
// sequence_number are), else as gjson reads it.
func numberAt(num []byte) float64 {
	s := jsonscan.Scanner{B: num}
	if n, ok := s.SmallUint(); ok && s.I == len(num) {
		return float64(n)
	}
	return parse(num).Num
}

// slot is where an event's member name goes, nil for one Event does not
// read (the type is read apart).
func (m *members) slot(name string) *gjson.Result {
	switch name {
	case "sequence_number":
		return &m.seq
	case "output_index":
		return &m.index
	case "item_id":
		return &m.itemRef
	case "item":
		return &m.item
	}
	return nil
}

// resultType is the gjson type of a jsonscan kind (an object and an
// array are JSON).
func resultType(kind int) gjson.Type {
	switch kind {
	case jsonscan.KindString:
		return gjson.String
	case jsonscan.KindNumber:
		return gjson.Number
	case jsonscan.KindTrue:
		return gjson.True
	case jsonscan.KindFalse:
		return gjson.False
	case jsonscan.KindNull:
		return gjson.Null
	}
	return gjson.JSON
}

// readMembers is scanMembers for any event (gjson).
func readMembers(data []byte) members {
	var m members
	var typ gjson.Result
	parse(data).ForEach(func(k, v gjson.Result) bool {
		p := m.slot(k.Str)
		if k.Str == "type" {
			p = &typ
		}
		if p != nil && !p.Exists() {
			*p = v
		}
		return true
	})
	if typ.Exists() {
		m.typ, m.typEnd = typ.Str, typ.Index+len(typ.Raw)
	}
	return m
}

// parseAt is v, a value of data at v.Index, parsed, its members' Index
// in data.
func parseAt(data []byte, v gjson.Result) gjson.Result {
	r := parse(data[v.Index : v.Index+len(v.Raw)])
	r.Index = v.Index
	return r
}

// ownEvent reports whether events of type typ are ones Recall renders
// its own of (the Response's) instead of relaying the upstream's.
func ownEvent(typ string) bool {
	switch typ {
	case "response.created", "response.in_progress", "response.completed", "response.incomplete":
		return true
	}
	return false
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

// itemIDAt is the id, as a JSON string, of the upstream's output item at
// index i, of type t, upstream its own id: Recall's for a message or a
// function call (as outputItems names them), else the upstream's. Events
// naming the item (item_id) get the same.
func (r *Renderer) itemIDAt(t string, i int, upstream string) []byte {
	id := upstream
	switch t {
	case typeMessage:
		id = itemID("msg", r.id, i)
	case typeFunctionCall:
		id = itemID("fc", r.id, i)
	}
	for len(r.relayed) <= i {
		r.relayed = append(r.relayed, nil)
	}
	r.relayed[i] = gjson.AppendJSONString(r.relayed[i][:0], id)
	return r.relayed[i]
}

// eventData is the data of the SSE event raw: its data lines' values,
// joined when there is more than one (into r's scratch buffer, valid
// until the next call) by a space where SSE joins them by a newline: the
// data is JSON, where a newline can only be white space, and the event
// relayed has it on one data line.
func (r *Renderer) eventData(raw []byte) []byte {
	var one []byte
	n := 0
	cr := bytes.IndexByte(raw, '\r') >= 0
	for len(raw) > 0 {
		var line []byte
		line, raw = nextLine(raw, cr)
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
	cr := bytes.IndexByte(raw, '\r') >= 0
	for len(raw) > 0 {
		var line []byte
		line, raw = nextLine(raw, cr)
		if v, ok := field(line, "event"); ok {
			return v
		}
	}
	return nil
}

// nextLine splits raw's first line, without its terminator (\n, \r\n
// or, when cr says raw has a \r, \r), from the rest.
func nextLine(raw []byte, cr bool) (line, rest []byte) {
	end := bytes.IndexByte(raw, '\n')
	if cr {
		end = bytes.IndexAny(raw, "\r\n")
	}
	if end < 0 {
		return raw, nil
	}
	next := end + 1
	if raw[end] == '\r' && next < len(raw) && raw[next] == '\n' {
		next++
	}
	return raw[:end], raw[next:]
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
