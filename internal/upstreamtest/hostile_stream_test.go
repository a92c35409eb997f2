package upstreamtest

import (
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// The hostile stream shapes a fake answer can take: events after [DONE],
// no [DONE], an error event, CR or CRLF line endings, descending
// tool-call indexes.
func TestHostileStreams(t *testing.T) {
	tests := []struct {
		name  string
		reply Reply
		check func(t *testing.T, body string)
	}{
		{"events after done", Reply{Content: "hello", Fault: FaultEventsAfterDone}, func(t *testing.T, body string) {
			first, after, ok := strings.Cut(body, "data: [DONE]\n\n")
			if !ok || !strings.Contains(first, `"finish_reason":"stop"`) {
				t.Fatalf("got %q, want a complete stream, then more", body)
			}
			if !strings.Contains(after, AfterDoneText) || !strings.HasSuffix(after, "data: [DONE]\n\n") {
				t.Errorf("after [DONE] got %q, want a chunk with %q and a second [DONE]", after, AfterDoneText)
			}
		}},
		{"no done", Reply{Content: "hello", Fault: FaultNoDone}, func(t *testing.T, body string) {
			if strings.Contains(body, "[DONE]") {
				t.Errorf("got %q, want no [DONE]", body)
			}
			if !strings.Contains(body, `"finish_reason":"stop"`) || !strings.HasSuffix(body, "\n\n") {
				t.Errorf("got %q, want the finish chunk, cleanly ended", body)
			}
		}},
		{"error event", Reply{Content: "one two three four", Chunks: 8, Fault: FaultErrorEvent}, func(t *testing.T, body string) {
			events := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
			last := strings.TrimPrefix(events[len(events)-1], "data: ")
			if got := gjson.Get(last, "error.code").Str; got != ErrorEventCode {
				t.Errorf("got last event %q, want an error with code %q", last, ErrorEventCode)
			}
			if strings.Contains(body, "finish_reason\":\"") || strings.Contains(body, "[DONE]") {
				t.Errorf("got %q, want no finish_reason nor [DONE]", body)
			}
		}},
		{"cr endings", Reply{Content: "hello", LineEnding: "\r"}, func(t *testing.T, body string) {
			if strings.Contains(body, "\n") || !strings.HasSuffix(body, "data: [DONE]\r\r") {
				t.Errorf("got %q, want lines ended by a lone CR", body)
			}
		}},
		{"crlf endings", Reply{Content: "hello", LineEnding: "\r\n"}, func(t *testing.T, body string) {
			if strings.Count(body, "\n") != strings.Count(body, "\r\n") || !strings.HasSuffix(body, "data: [DONE]\r\n\r\n") {
				t.Errorf("got %q, want lines ended by CRLF", body)
			}
		}},
		{"descending tool indexes", Reply{DescendingToolIndexes: true, ToolCalls: []ToolCall{
			{ID: "call_a", Name: "f", Arguments: `{"n":0}`}, {ID: "call_b", Name: "f", Arguments: `{"n":1}`}, {ID: "call_c", Name: "f", Arguments: `{"n":2}`},
		}}, func(t *testing.T, body string) {
			var got []string
			for _, m := range regexp.MustCompile(`"index":(\d),"id":"(call_.)"`).FindAllStringSubmatch(body, -1) {
				got = append(got, m[1]+"="+m[2])
			}
			if want := "2=call_c 1=call_b 0=call_a"; strings.Join(got, " ") != want {
				t.Errorf("got calls opened as %v, want %s", got, want)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewTB(t)
			s.Enqueue(tt.reply)
			resp := post(t, s, "/chat/completions", chatBody(`[`+user+`]`, `"stream":true`))
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("read: got %v, want a cleanly ended stream", err)
			}
			tt.check(t, string(b))
		})
	}
}
