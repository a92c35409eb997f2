package chat

import (
	"errors"
	"io"
	"strings"
	"testing"
)

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
