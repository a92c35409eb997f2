package pipeline

import (
	"errors"
	"strings"
	"testing"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/wire"
)

// A chat completions stream of one answer, "forty-two", event by event.
const (
	chatRole = `data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}` + "\n\n"
	chatText = `data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"forty-two"}}]}` + "\n\n"
	chatStop = `data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"
	chatDone = "data: [DONE]\n\n"
)

// TestPumpEndsEveryStreamAsItShould: the pump stage over a chat
// completions stream, relayed and rendered: a whole stream is one answer
// whose last event is the one that completes it; a stream that stops
// before its answer, or that grows past the bound, is the client's error
// kind; the upstream's own error event comes back as it came, for a relay
// in the upstream's protocol to hand on.
func TestPumpEndsEveryStreamAsItShould(t *testing.T) {
	const (
		role, text, stop, done = chatRole, chatText, chatStop, chatDone
		fault                  = `data: {"error":{"message":"overloaded","type":"server_error"}}` + "\n\n"
	)
	tests := []struct {
		name   string
		stream string
		max    int
		// want is the error kind (nil: a whole answer); events, the
		// events handed on, and last, the one that completed it.
		want   error
		events int
		last   int
	}{
		{name: "whole", stream: role + text + stop + done, max: 1 << 20, events: 4, last: 3},
		{name: "whole without [DONE]", stream: role + text + stop, max: 1 << 20, events: 3, last: -1},
		{name: "cut before the answer ends", stream: role + text, max: 1 << 20, want: apierr.UpstreamStreamCut, events: 2, last: -1},
		{name: "larger than the bound", stream: role + text + stop + done, max: 120, want: apierr.UpstreamTooLarge, events: 1, last: -1},
		{name: "the upstream's error event", stream: role + fault, max: 1 << 20, want: apierr.UpstreamBadResponse, events: 1, last: -1},
	}
	for _, tt := range tests {
		for _, relay := range []bool{false, true} {
			name := tt.name + map[bool]string{false: " rendered", true: " relayed"}[relay]
			t.Run(name, func(t *testing.T) {
				events, last := 0, -1
				var text strings.Builder
				a, err := Pump(strings.NewReader(tt.stream), chat.Protocol{}.NewAssembler(), tt.max, relay,
					func(raw []byte, deltas []wire.Delta, isLast bool) error {
						if isLast {
							last = events
						}
						for _, d := range deltas {
							if d.Kind == wire.TextDelta {
								text.WriteString(d.Text)
							}
						}
						events++
						return nil
					})
				if events != tt.events || last != tt.last {
					t.Errorf("got %d events, the last at %d, want %d, the last at %d", events, last, tt.events, tt.last)
				}
				if tt.want != nil {
					if !errors.Is(err, tt.want) {
						t.Fatalf("got error %v, want %v", err, tt.want)
					}
					var ue *UpstreamEvent
					if isEvent := errors.As(err, &ue); isEvent != (tt.want == apierr.UpstreamBadResponse) {
						t.Fatalf("got %v as the upstream's event: %v", err, isEvent)
					} else if isEvent && string(ue.Raw) != fault {
						t.Errorf("got the upstream's event %q, want %q", ue.Raw, fault)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if a.Stop != wire.StopEnd {
					t.Errorf("got stop %q, want the end of the turn", a.Stop)
				}
				if len(a.Stored) != 1 || !strings.Contains(string(a.Stored[0]), "forty-two") {
					t.Errorf("got the stored answer %q, want the one message with its text", a.Stored)
				}
				if want := map[bool]string{false: "forty-two", true: ""}[relay]; text.String() != want {
					t.Errorf("got deltas' text %q, want %q (relayed: only the finish)", text.String(), want)
				}
			})
		}
	}
}
