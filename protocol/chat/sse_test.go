package chat

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll reads every event of r, copying each because its slices are only
// valid until the next call.
func readAll(er *EventReader) (raws, datas []string, err error) {
	for {
		ev, err := er.Next()
		if err != nil {
			return raws, datas, err
		}
		raws = append(raws, string(ev.Raw))
		datas = append(datas, string(ev.Data))
	}
}

func TestEventReader(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		raws  []string
		datas []string
	}{
		{
			name:  "two events",
			in:    "data: a\n\ndata: b\n\n",
			raws:  []string{"data: a\n\n", "data: b\n\n"},
			datas: []string{"a", "b"},
		},
		{
			name:  "crlf",
			in:    "data: a\r\n\r\ndata: b\r\n\r\n",
			raws:  []string{"data: a\r\n\r\n", "data: b\r\n\r\n"},
			datas: []string{"a", "b"},
		},
		{
			name:  "multi-line data joined with newline",
			in:    "data: a\ndata:b\ndata:  c\n\n",
			raws:  []string{"data: a\ndata:b\ndata:  c\n\n"},
			datas: []string{"a\nb\n c"},
		},
		{
			name:  "comments, other fields and empty data",
			in:    ": keepalive\n\nevent: message\nid: 7\nretry: 10\n: note\ndata\n\ndata:\ndata: x\n\n",
			raws:  []string{": keepalive\n\n", "event: message\nid: 7\nretry: 10\n: note\ndata\n\n", "data:\ndata: x\n\n"},
			datas: []string{"", "", "\nx"},
		},
		{
			name:  "field names are exact",
			in:    "datum: x\ndata2: y\nDATA: z\n\n",
			raws:  []string{"datum: x\ndata2: y\nDATA: z\n\n"},
			datas: []string{""},
		},
		{
			name:  "blank lines between events come back as events",
			in:    "\n\ndata: a\n\n\n",
			raws:  []string{"\n", "\n", "data: a\n\n", "\n"},
			datas: []string{"", "", "a", ""},
		},
		{
			name:  "final event without blank line",
			in:    "data: a\n\ndata: [DONE]\n",
			raws:  []string{"data: a\n\n", "data: [DONE]\n"},
			datas: []string{"a", "[DONE]"},
		},
		{
			name:  "final line without newline",
			in:    "data: a\n\ndata: b\ndata: c\r",
			raws:  []string{"data: a\n\n", "data: b\ndata: c\r"},
			datas: []string{"a", "b\nc"},
		},
		{
			name:  "cr only",
			in:    "data: a\r\rdata: b\rdata: c\r\r",
			raws:  []string{"data: a\r\r", "data: b\rdata: c\r\r"},
			datas: []string{"a", "b\nc"},
		},
		{
			name:  "cr, lf and crlf mixed",
			in:    "data: a\r\ndata: b\n\rdata: c\r\n\r\n: x\r\n",
			raws:  []string{"data: a\r\ndata: b\n\r", "data: c\r\n\r\n", ": x\r\n"},
			datas: []string{"a\nb", "c", ""},
		},
		{
			name:  "blank lines of a lone cr come back as events",
			in:    "\r\rdata: [DONE]\r\r",
			raws:  []string{"\r", "\r", "data: [DONE]\r\r"},
			datas: []string{"", "", "[DONE]"},
		},
		{
			name: "empty stream",
			in:   "",
		},
	}
	readers := []struct {
		name string
		wrap func(io.Reader) io.Reader
	}{
		{"whole", func(r io.Reader) io.Reader { return r }},
		{"one byte", iotest.OneByteReader},
		{"half", iotest.HalfReader},
		{"data with EOF", iotest.DataErrReader},
	}
	for _, tt := range tests {
		for _, rd := range readers {
			t.Run(tt.name+"/"+rd.name, func(t *testing.T) {
				er := NewEventReader(rd.wrap(strings.NewReader(tt.in)), 1<<10)
				raws, datas, err := readAll(er)
				if err != io.EOF {
					t.Fatalf("got error %v, want io.EOF", err)
				}
				if strings.Join(raws, "|") != strings.Join(tt.raws, "|") {
					t.Errorf("Raw: got %q, want %q", raws, tt.raws)
				}
				if strings.Join(datas, "|") != strings.Join(tt.datas, "|") {
					t.Errorf("Data: got %q, want %q", datas, tt.datas)
				}
				if _, err := er.Next(); err != io.EOF {
					t.Errorf("Next after EOF: got %v, want io.EOF", err)
				}
			})
		}
	}
}

func TestEventReaderTooLarge(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		max     int
		wantOK  int // events returned before the error
		wantErr error
	}{
		{"at the bound", "data: 12345\n\n", 13, 1, io.EOF},
		{"one past the bound", "data: 12345\n\n", 12, 0, ErrEventTooLarge},
		{"unterminated past the bound", strings.Repeat("x", 100), 50, 0, ErrEventTooLarge},
		{"second event too large", "data: a\n\ndata: " + strings.Repeat("b", 5000) + "\n\n", 1000, 1, ErrEventTooLarge},
		{"large events under a large bound", strings.Repeat("data: "+strings.Repeat("c", 9000)+"\n\n", 3), 10000, 3, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			er := NewEventReader(strings.NewReader(tt.in), tt.max)
			raws, _, err := readAll(er)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("got error %v, want %v", err, tt.wantErr)
			}
			if len(raws) != tt.wantOK {
				t.Errorf("got %d events, want %d", len(raws), tt.wantOK)
			}
			if _, err := er.Next(); !errors.Is(err, tt.wantErr) {
				t.Errorf("Next after error: got %v, want %v again", err, tt.wantErr)
			}
		})
	}
}

func TestEventReaderReadError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("data: a\n\ndata: partial\n"), iotest.ErrReader(boom))
	er := NewEventReader(r, 0)
	raws, _, err := readAll(er)
	if !errors.Is(err, boom) {
		t.Fatalf("got error %v, want %v", err, boom)
	}
	if want := []string{"data: a\n\n"}; strings.Join(raws, "|") != strings.Join(want, "|") {
		t.Errorf("got events %q, want %q (a partial event is not returned on a read error)", raws, want)
	}
}

func TestEventReaderNoProgress(t *testing.T) {
	er := NewEventReader(zeroReader{}, 0)
	if _, err := er.Next(); !errors.Is(err, io.ErrNoProgress) {
		t.Errorf("got %v, want io.ErrNoProgress", err)
	}
}

// zeroReader returns no bytes and no error, forever.
type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

func TestEventReaderGoldenStreamsRoundTrip(t *testing.T) {
	files, err := sseFiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Run(f.name, func(t *testing.T) {
			for _, wrap := range []func(io.Reader) io.Reader{func(r io.Reader) io.Reader { return r }, iotest.OneByteReader} {
				er := NewEventReader(wrap(bytes.NewReader(f.data)), 0)
				raws, _, err := readAll(er)
				if err != io.EOF {
					t.Fatalf("got error %v, want io.EOF", err)
				}
				if got := strings.Join(raws, ""); got != string(f.data) {
					t.Errorf("concatenated Raw: got %q, want the input %q", got, f.data)
				}
			}
		})
	}
}

// chunkReader returns r's bytes at most n at a time.
type chunkReader struct {
	r io.Reader
	n int
}

func (c chunkReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// BenchmarkEventReaderLongLine reads one event of a 16 MiB line arriving
// 16 KiB at a time: each buffered byte must be searched once, not once per
// read (which would be quadratic in the line's length).
func BenchmarkEventReaderLongLine(b *testing.B) {
	for _, ending := range []string{"\n", "\r"} {
		stream := []byte("data: " + strings.Repeat("x", 16<<20) + ending + ending)
		b.Run(fmt.Sprintf("ending=%q", ending), func(b *testing.B) {
			b.SetBytes(int64(len(stream)))
			for b.Loop() {
				er := NewEventReader(chunkReader{bytes.NewReader(stream), 16 << 10}, 32<<20)
				if ev, err := er.Next(); err != nil || len(ev.Raw) != len(stream) {
					b.Fatalf("got an event of %d bytes, %v; want %d", len(ev.Raw), err, len(stream))
				}
			}
		})
	}
}

// TestEventName: an event's "event" field is read, over any line ending;
// an event without one has no name.
func TestEventName(t *testing.T) {
	for _, nl := range []string{"\n", "\r\n", "\r"} {
		stream := "event: message_start" + nl + "data: {\"a\":1}" + nl + nl + "data: {}" + nl + nl
		er := NewEventReader(strings.NewReader(stream), 1<<10)
		ev, err := er.Next()
		if err != nil || string(ev.Name) != "message_start" || string(ev.Data) != `{"a":1}` {
			t.Errorf("%q: got name %q data %q err %v, want message_start {\"a\":1}", nl, ev.Name, ev.Data, err)
		}
		ev, _ = er.Next()
		if ev.Name != nil || string(ev.Data) != "{}" {
			t.Errorf("%q: second event: got name %q data %q, want none and {}", nl, ev.Name, ev.Data)
		}
	}
}

// A reader Reset for another stream reads that stream as a new reader
// would, whatever the last one left in its buffers: a large event, a
// multi-line one, an event cut short, a sticky error; and with the bound
// Reset gives it, not the last one's.
func TestEventReaderResetReadsTheNextStreamAsNew(t *testing.T) {
	big := "data: " + strings.Repeat("x", 10_000) + "\n\n"
	multi := "data: a\ndata: b\n\n"
	next := "data: one\n\nevent: e\ndata: two\n\n"
	tests := []struct {
		name   string
		before string
		max    int // the bound of the stream read before
	}{
		{name: "after a large event", before: big + multi, max: 1 << 20},
		{name: "after a cut event", before: multi + "data: cut", max: 1 << 20},
		{name: "after an event too large", before: big, max: 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			er := NewEventReader(strings.NewReader(tt.before), tt.max)
			for {
				if _, err := er.Next(); err != nil {
					break
				}
			}
			er.Reset(strings.NewReader(next), 0)
			want := []struct{ raw, data, name string }{{"data: one\n\n", "one", ""}, {"event: e\ndata: two\n\n", "two", "e"}}
			for i, w := range want {
				ev, err := er.Next()
				if err != nil || string(ev.Raw) != w.raw || string(ev.Data) != w.data || string(ev.Name) != w.name {
					t.Fatalf("event %d: got %q %q %q, %v; want %q %q %q", i, ev.Raw, ev.Data, ev.Name, err, w.raw, w.data, w.name)
				}
			}
			if _, err := er.Next(); err != io.EOF {
				t.Fatalf("after the last event: got %v, want io.EOF", err)
			}
			er.Reset(strings.NewReader(big), 100)
			if _, err := er.Next(); !errors.Is(err, ErrEventTooLarge) {
				t.Fatalf("reset with a bound of 100: got %v, want ErrEventTooLarge", err)
			}
		})
	}
}
