package responses

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/recallproxy/recall/wire"
)

// A stream that fails ends with OpenAI's error event, numbered after the
// events before it, and the official SDK reads it as the error event with
// its code, message and sequence_number.
func TestErrorEventContinuesSequence(t *testing.T) {
	tests := []struct {
		name   string
		deltas []wire.Delta
	}{
		{"after text and a call", sdkDeltas[:5]},
		{"after the first delta", sdkDeltas[:1]},
		{"before any delta", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				rd := Ingress{}.NewRenderer(&wire.Request{ResponseID: "resp_e", Created: 1700000000})
				var out []byte
				for _, d := range tt.deltas {
					out = rd.Delta(out, d)
				}
				_, _ = w.Write(rd.(*Renderer).Error(out, "history_write_failed", `the turn was not stored: "disk"`))
			}))
			defer srv.Close()
			client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("k"), option.WithMaxRetries(0))
			stream := client.Responses.NewStreaming(context.Background(), sdkParams())
			n := int64(0)
			var types []string
			for stream.Next() {
				ev := stream.Current()
				if ev.SequenceNumber != n {
					t.Errorf("event %d (%s): sequence_number %d, want %d", n, ev.Type, ev.SequenceNumber, n)
				}
				types = append(types, ev.Type)
				n++
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("stream: %v, want it read to its end", err)
			}
			last := stream.Current()
			e := last.AsError()
			if last.Type != "error" || e.Code != "history_write_failed" || e.Message != `the turn was not stored: "disk"` ||
				e.SequenceNumber != n-1 || !e.JSON.SequenceNumber.Valid() {
				t.Errorf("got events %v ending with %s, want the error event numbered %d", types, last.RawJSON(), n-1)
			}
		})
	}
}

func TestAppendErrorEvent(t *testing.T) {
	got := string(AppendErrorEvent(nil, 7, "c", "m"))
	want := "event: error\ndata: {\"type\":\"error\",\"sequence_number\":7,\"code\":\"c\",\"message\":\"m\",\"param\":null}\n\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
