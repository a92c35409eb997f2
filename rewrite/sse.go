package rewrite

import (
	"bytes"
	"errors"
	"io"
	"math"
)

// ErrEventTooLarge is returned by [EventReader.Next] when one event is
// longer than the reader's bound.
var ErrEventTooLarge = errors.New("rewrite: sse event too large")

// defaultMaxEvent bounds an event when NewEventReader is given no bound.
const defaultMaxEvent = 1 << 20

// Event is one server-sent event.
type Event struct {
	// Raw is every byte of the event as read, including its terminating
	// blank line and any comment or non-data field lines, ready to relay.
	Raw []byte
	// Data is the value of the event's "data" field: each data line's
	// value with one leading space stripped, joined with "\n". It is empty
	// for events without data (comments, keepalives).
	Data []byte
}

// EventReader reads server-sent events from a stream, returning each
// event's exact bytes for relaying alongside its parsed data.
//
// Lines end in "\n" or "\r\n"; a lone "\r" is not a line ending (OpenAI and
// compatible servers never send one). Concatenating the Raw of every event
// returned reproduces the stream exactly, including blank lines between
// events, which come back as events of their own with no data.
type EventReader struct {
	r   io.Reader
	max int
	err error // sticky: returned once buffered events are drained

	buf        []byte // buf[start:end] is read but not yet returned
	start, end int

	data []byte // scratch for events with several data lines
}

// NewEventReader returns a reader of the events of r. maxEvent bounds the
// size of one event in bytes (1 MiB when maxEvent <= 0); the reader buffers
// at most that much.
func NewEventReader(r io.Reader, maxEvent int) *EventReader {
	if maxEvent <= 0 {
		maxEvent = defaultMaxEvent
	}
	maxEvent = min(maxEvent, math.MaxInt/2)
	return &EventReader{r: r, max: maxEvent, buf: make([]byte, min(4096, maxEvent+1))}
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
			window := er.buf[er.start+ev.size : er.end]
			nl := bytes.IndexByte(window, '\n')
			if nl < 0 {
				break
			}
			lineOff := ev.size
			ev.size += nl + 1
			if ev.size > er.max {
				return er.fail(ErrEventTooLarge)
			}
			line := trimCR(window[:nl])
			if len(line) == 0 {
				return er.emit(&ev), nil
			}
			er.scanLine(&ev, lineOff, line)
		}
		if er.end-er.start > er.max {
			return er.fail(ErrEventTooLarge)
		}
		if er.err == io.EOF {
			// A final unterminated line counts as if it ended.
			if lineOff := ev.size; er.start+lineOff < er.end {
				ev.size = er.end - er.start
				er.scanLine(&ev, lineOff, trimCR(er.buf[er.start+lineOff:er.end]))
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

// pending is the scanning state of the event at the front of the buffer;
// offsets are relative to EventReader.start, which stays valid when the
// buffer is compacted or grown.
type pending struct {
	size     int // bytes of the event scanned so far: whole lines
	dataOff  int // the first data value, while there is only one
	dataLen  int
	dataRows int
}

// scanLine records line, found at lineOff in the pending event, if it is a
// data line. A single data value stays in place; further values are joined
// into the scratch buffer.
func (er *EventReader) scanLine(ev *pending, lineOff int, line []byte) {
	value, ok := dataValue(line)
	if !ok {
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
	switch ev.dataRows {
	case 0:
	case 1:
		from, to := er.start+ev.dataOff, er.start+ev.dataOff+ev.dataLen
		out.Data = er.buf[from:to:to]
	default:
		out.Data = er.data
	}
	er.start = end
	return out
}

// trimCR strips the "\r" of a "\r\n" line ending.
func trimCR(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		return line[:n-1]
	}
	return line
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
	return Event{}, err
}

// dataValue returns the value of line when it is a "data" field, with one
// leading space stripped.
func dataValue(line []byte) ([]byte, bool) {
	if !bytes.HasPrefix(line, []byte("data")) {
		return nil, false
	}
	rest := line[4:]
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
