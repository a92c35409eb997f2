package chat

import (
	"bytes"
	"errors"
	"io"
	"math"
)

// ErrEventTooLarge is returned by [EventReader.Next] when one event is
// longer than the reader's bound.
var ErrEventTooLarge = errors.New("chat: sse event too large")

// defaultMaxEvent bounds an event when NewEventReader is given no bound.
const defaultMaxEvent = 1 << 20

// keptBuffer is the largest buffer Reset keeps: a recycled reader should
// not hold on to what one large event needed.
const keptBuffer = 64 << 10

// Event is one server-sent event.
type Event struct {
	// Raw is every byte of the event as read, including its terminating
	// blank line and any comment or non-data field lines, ready to relay.
	Raw []byte
	// Data is the value of the event's "data" field: each data line's
	// value with one leading space stripped, joined with "\n". It is empty
	// for events without data (comments, keepalives).
	Data []byte
	// Name is the value of the event's "event" field, empty if it has
	// none (chat completions sends none; the Responses API and Anthropic
	// name every event).
	Name []byte
}

// EventReader reads server-sent events from a stream, returning each
// event's exact bytes for relaying alongside its parsed data.
//
// Lines end in "\r\n", "\n" or a lone "\r", as the SSE specification
// says (a "\r" split from its "\n" across reads is still one ending).
// Concatenating the Raw of every event returned reproduces the stream
// exactly, including blank lines between events, which come back as
// events of their own with no data.
type EventReader struct {
	r   io.Reader
	max int
	err error // sticky: returned once buffered events are drained

	buf        []byte // buf[start:end] is read but not yet returned
	start, end int

	data []byte // scratch for events with several data lines

	// lf and cr remember where the next "\n" and "\r" are, so that each
	// buffered byte is searched at most once for each, whichever ending a
	// stream uses.
	lf, cr finder
}

// finder is what a search for one byte in the buffer found: at is its
// offset from EventReader.start (-1: none found), and the bytes before
// offset to are known to hold none.
type finder struct{ at, to int }

// NewEventReader returns a reader of the events of r. maxEvent bounds the
// size of one event in bytes (1 MiB when maxEvent <= 0); the reader buffers
// at most that much.
func NewEventReader(r io.Reader, maxEvent int) *EventReader {
	er := new(EventReader)
	er.Reset(r, maxEvent)
	return er
}

// Reset makes er a reader of the events of r, as NewEventReader(r,
// maxEvent) returns, reusing er's buffers: a reader recycled from one
// stream to the next (a sync.Pool) allocates nothing for the next. A buffer
// a large event grew past keptBuffer is dropped, not kept. The events er
// returned before are no longer valid.
func (er *EventReader) Reset(r io.Reader, maxEvent int) {
	if maxEvent <= 0 {
		maxEvent = defaultMaxEvent
	}
	maxEvent = min(maxEvent, math.MaxInt/2)
	buf, size, data := er.buf, min(4096, maxEvent+1), er.data[:0]
	if cap(buf) < size || cap(buf) > keptBuffer {
		buf = make([]byte, size)
	}
	if cap(data) > keptBuffer {
		data = nil
	}
	*er = EventReader{r: r, max: maxEvent, buf: buf[:size], data: data, lf: finder{at: -1}, cr: finder{at: -1}}
}

// Next returns the next event. A final event not terminated by a blank line
// is returned at the end of the stream, and io.EOF after it.
//
// The event's slices point into the reader's buffer and are valid only
// until the next call to Next. It returns [ErrEventTooLarge] when an event
// exceeds the bound, and the read error when the stream fails; both are
// returned again by every later call.
func (er *EventReader) Next() (Event, error) {
	var ev pending
	for {
		// Scan the complete lines buffered so far.
		for {
			lineOff := ev.size
			n, term := er.lineEnd(lineOff)
			if term == 0 {
				break
			}
			ev.size += n + term
			if ev.size > er.max {
				return er.fail(ErrEventTooLarge)
			}
			if n == 0 {
				return er.emit(&ev), nil
			}
			er.scanLine(&ev, lineOff, er.buf[er.start+lineOff:er.start+lineOff+n])
		}
		if er.end-er.start > er.max {
			return er.fail(ErrEventTooLarge)
		}
		if er.err == io.EOF {
			// A final unterminated line counts as if it ended.
			if lineOff := ev.size; er.start+lineOff < er.end {
				ev.size = er.end - er.start
				er.scanLine(&ev, lineOff, er.buf[er.start+lineOff:er.end])
			}
			if ev.size > 0 {
				return er.emit(&ev), nil
			}
		}
		if er.err != nil {
			return Event{}, er.err
		}
		er.fill()
	}
}

// lineEnd finds the end of the line buffered at offset from (relative to
// start): it returns the line's length without its ending and the ending's
// length, 0 when the line is not complete yet. A "\r" that is the last
// byte buffered ends a line only at the end of the stream: until then a
// "\n" may follow it.
func (er *EventReader) lineEnd(from int) (n, term int) {
	buffered := er.end - er.start
	if er.cr.at < 0 && er.cr.to == buffered {
		// No "\r" buffered, the common case: the next "\n" ends the line.
		if lf := er.find(&er.lf, '\n', from); lf >= 0 {
			return lf - from, 1
		}
		return 0, 0
	}
	lf := er.find(&er.lf, '\n', from)
	cr := er.find(&er.cr, '\r', from)
	switch {
	case cr >= 0 && (lf < 0 || cr < lf):
		switch {
		case cr+1 < buffered:
			if er.buf[er.start+cr+1] == '\n' {
				return cr - from, 2
			}
			return cr - from, 1
		case er.err == io.EOF:
			return cr - from, 1
		}
		return 0, 0
	case lf >= 0:
		return lf - from, 1
	}
	return 0, 0
}

// find returns the offset from start of the first c buffered at or after
// from, or -1, searching only bytes f has not searched yet.
func (er *EventReader) find(f *finder, c byte, from int) int {
	if f.at >= from {
		return f.at
	}
	lo := max(from, f.to)
	if i := bytes.IndexByte(er.buf[er.start+lo:er.end], c); i >= 0 {
		f.at = lo + i
		return f.at
	}
	f.at, f.to = -1, er.end-er.start
	return -1
}

// shift moves f's offsets back by n bytes, as start moves forward.
func (f *finder) shift(n int) {
	f.at, f.to = max(f.at-n, -1), max(f.to-n, 0)
}

// pending is the scanning state of the event at the front of the buffer;
// offsets are relative to EventReader.start, which stays valid when the
// buffer is compacted or grown.
type pending struct {
	size     int // bytes of the event scanned so far: whole lines
	dataOff  int // the first data value, while there is only one
	dataLen  int
	dataRows int
	nameOff  int // the "event" field's value, if any
	nameLen  int
}

// scanLine records line, found at lineOff in the pending event, if it is a
// data line. A single data value stays in place; further values are joined
// into the scratch buffer.
func (er *EventReader) scanLine(ev *pending, lineOff int, line []byte) {
	value, ok := dataValue(line)
	if !ok {
		if name, ok := fieldValue(line, "event"); ok {
			ev.nameOff, ev.nameLen = lineOff+len(line)-len(name), len(name)
		}
		return
	}
	ev.dataRows++
	switch ev.dataRows {
	case 1:
		ev.dataOff, ev.dataLen = lineOff+len(line)-len(value), len(value)
	case 2:
		first := er.buf[er.start+ev.dataOff : er.start+ev.dataOff+ev.dataLen]
		er.data = append(append(append(er.data[:0], first...), '\n'), value...)
	default:
		er.data = append(append(er.data, '\n'), value...)
	}
}

// emit returns the pending event and consumes it from the buffer.
func (er *EventReader) emit(ev *pending) Event {
	end := er.start + ev.size
	out := Event{Raw: er.buf[er.start:end:end]}
	if ev.nameLen > 0 {
		from, to := er.start+ev.nameOff, er.start+ev.nameOff+ev.nameLen
		out.Name = er.buf[from:to:to]
	}
	switch ev.dataRows {
	case 0:
	case 1:
		from, to := er.start+ev.dataOff, er.start+ev.dataOff+ev.dataLen
		out.Data = er.buf[from:to:to]
	default:
		out.Data = er.data
	}
	er.start = end
	er.lf.shift(ev.size)
	er.cr.shift(ev.size)
	return out
}

// fill reads more of the stream into the buffer, making room first by
// moving unread bytes to its front or, when the pending event already fills
// it, by growing it up to the bound.
func (er *EventReader) fill() {
	if er.end == len(er.buf) {
		if er.start > 0 {
			er.end = copy(er.buf, er.buf[er.start:er.end])
			er.start = 0
		} else {
			grown := make([]byte, min(2*len(er.buf), er.max+1))
			er.end = copy(grown, er.buf[:er.end])
			er.buf = grown
		}
	}
	for range 100 {
		n, err := er.r.Read(er.buf[er.end:])
		er.end += n
		if err != nil {
			er.err = err
			return
		}
		if n > 0 {
			return
		}
	}
	er.err = io.ErrNoProgress
}

// fail makes err sticky and returns it.
func (er *EventReader) fail(err error) (Event, error) {
	er.err = err
	er.start, er.end = 0, 0
	er.lf, er.cr = finder{at: -1}, finder{at: -1}
	return Event{}, err
}

// dataValue returns the value of line when it is a "data" field, with one
// leading space stripped.
func dataValue(line []byte) ([]byte, bool) { return fieldValue(line, "data") }

// fieldValue returns the value of line if it is the field name, with one
// leading space stripped.
func fieldValue(line []byte, name string) ([]byte, bool) {
	if !bytes.HasPrefix(line, []byte(name)) {
		return nil, false
	}
	rest := line[len(name):]
	switch {
	case len(rest) == 0:
		return rest, true
	case rest[0] != ':':
		return nil, false
	}
	rest = rest[1:]
	if len(rest) > 0 && rest[0] == ' ' {
		rest = rest[1:]
	}
	return rest, true
}
