package upstreamtest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// sse is a parsed event stream: the data payloads in order, whether it
// ended with [DONE], and the read error that ended it, if any.
type sse struct {
	events []gjson.Result
	raw    []string
	done   bool
	err    error
}

// readSSE parses "data: ...\n\n" events from r until EOF or an error.
func readSSE(r io.Reader) sse {
	var out sse
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if strings.HasPrefix(line, "data: ") && strings.HasSuffix(line, "\n") {
			data := strings.TrimSuffix(strings.TrimPrefix(line, "data: "), "\n")
			if data == "[DONE]" {
				out.done = true
			} else {
				out.raw = append(out.raw, data)
				out.events = append(out.events, gjson.Parse(data))
			}
		}
		if err != nil {
			if err != io.EOF {
				out.err = err
			}
			return out
		}
	}
}

func TestStreamShape(t *testing.T) {
	const content = "hello world, this is a streamed reply"
	tests := []struct {
		name      string
		extra     string
		wantUsage bool
	}{
		{"with usage", `"stream":true,"stream_options":{"include_usage":true}`, true},
		{"without usage", `"stream":true`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewTB(t)
			s.Enqueue(Reply{Content: content, Chunks: 4})
			resp := post(t, s, "/chat/completions", chatBody(`[`+user+`]`, tt.extra))
			if got := resp.Header.Get("Content-Type"); got != "text/event-stream" {
				t.Errorf("got content-type %q, want text/event-stream", got)
			}
			if got := resp.Header.Get("X-Request-Id"); !strings.HasPrefix(got, "req_") {
				t.Errorf("got x-request-id %q, want req_<n>", got)
			}
			st := readSSE(resp.Body)
			if st.err != nil || !st.done {
				t.Fatalf("got err %v done %v, want a complete stream", st.err, st.done)
			}
			evs := st.events
			if len(evs) < 3 {
				t.Fatalf("got %d events, want at least 3", len(evs))
			}
			id := evs[0].Get("id").Str
			for i, ev := range evs {
				if !gjson.Valid(st.raw[i]) {
					t.Fatalf("event %d: got invalid JSON %s", i, st.raw[i])
				}
				if ev.Get("object").Str != "chat.completion.chunk" || ev.Get("id").Str != id || ev.Get("model").Str != "gpt-test" || !ev.Get("created").Exists() {
					t.Errorf("event %d: got %s, want object chat.completion.chunk, id %s, model gpt-test, created", i, st.raw[i], id)
				}
				if got := ev.Get("usage").Exists(); got != tt.wantUsage {
					t.Errorf("event %d: got usage present %v, want %v", i, got, tt.wantUsage)
				}
			}
			if !strings.HasPrefix(id, "chatcmpl-") {
				t.Errorf("got id %q, want chatcmpl-<n>", id)
			}
			if got := evs[0].Get("choices.0.delta").Raw; got != `{"role":"assistant","content":""}` {
				t.Errorf("got first delta %s, want the role delta", got)
			}
			body := evs
			if tt.wantUsage {
				u := evs[len(evs)-1]
				if got := u.Get("choices").Raw; got != "[]" {
					t.Errorf("got usage chunk choices %s, want []", got)
				}
				if p, c := u.Get("usage.prompt_tokens").Int(), u.Get("usage.completion_tokens").Int(); p <= 0 || c <= 0 || u.Get("usage.total_tokens").Int() != p+c {
					t.Errorf("got usage %s, want positive counts that add up", u.Get("usage").Raw)
				}
				body = evs[:len(evs)-1]
			}
			fin := body[len(body)-1]
			if fin.Get("choices.0.delta").Raw != "{}" || fin.Get("choices.0.finish_reason").Str != "stop" {
				t.Errorf("got finish chunk %s, want empty delta and stop", fin.Raw)
			}
			var text strings.Builder
			pieces := 0
			for _, ev := range body[1 : len(body)-1] {
				if ev.Get("choices.0.finish_reason").Type != gjson.Null {
					t.Errorf("got finish_reason on a content chunk %s, want null", ev.Raw)
				}
				text.WriteString(ev.Get("choices.0.delta.content").Str)
				pieces++
			}
			if text.String() != content || pieces != 4 {
				t.Errorf("got %d pieces %q, want 4 pieces %q", pieces, text.String(), content)
			}
		})
	}
}

func TestStreamToolCalls(t *testing.T) {
	s := NewTB(t)
	calls := []ToolCall{{ID: "call_x", Name: "get_weather", Arguments: `{"city":"Paris"}`}, {ID: "call_y", Name: "get_time", Arguments: `{"tz":"CET"}`}}
	s.Enqueue(Reply{ToolCalls: calls})
	st := readSSE(post(t, s, "/chat/completions", chatBody(`[`+user+`]`, `"stream":true`)).Body)
	if st.err != nil || !st.done {
		t.Fatalf("got err %v done %v, want a complete stream", st.err, st.done)
	}
	if got := st.events[0].Get("choices.0.delta").Raw; got != `{"role":"assistant","content":null}` {
		t.Errorf("got first delta %s, want the role delta with content null", got)
	}
	type assembled struct {
		id, typ, name, args string
		fragments           int
	}
	got := map[int64]*assembled{}
	var order []int64
	for _, ev := range st.events[1 : len(st.events)-1] {
		tcs := ev.Get("choices.0.delta.tool_calls").Array()
		if len(tcs) != 1 {
			t.Fatalf("got chunk %s, want one tool call fragment", ev.Raw)
		}
		tc := tcs[0]
		idx := tc.Get("index").Int()
		a, seen := got[idx]
		if !seen {
			if tc.Get("function.arguments").Str != "" || !tc.Get("function.arguments").Exists() {
				t.Errorf("got first fragment %s, want empty arguments", tc.Raw)
			}
			a = &assembled{id: tc.Get("id").Str, typ: tc.Get("type").Str, name: tc.Get("function.name").Str}
			got[idx] = a
			order = append(order, idx)
			continue
		}
		if tc.Get("id").Exists() || tc.Get("function.name").Exists() {
			t.Errorf("got later fragment %s, want index and arguments only", tc.Raw)
		}
		a.args += tc.Get("function.arguments").Str
		a.fragments++
	}
	if len(order) != len(calls) {
		t.Fatalf("got %d calls, want %d", len(order), len(calls))
	}
	for i, c := range calls {
		a := got[int64(i)]
		if order[i] != int64(i) || a.id != c.ID || a.typ != "function" || a.name != c.Name || a.args != c.Arguments {
			t.Errorf("call %d: got %+v, want %+v", i, *a, c)
		}
		if a.fragments < 2 || a.fragments > 3 {
			t.Errorf("call %d: got %d argument fragments, want 2-3", i, a.fragments)
		}
	}
	if fin := st.events[len(st.events)-1]; fin.Get("choices.0.finish_reason").Str != "tool_calls" {
		t.Errorf("got finish chunk %s, want finish_reason tool_calls", fin.Raw)
	}
}

func TestStreamNChoices(t *testing.T) {
	s := NewTB(t)
	st := readSSE(post(t, s, "/chat/completions", chatBody(`[`+user+`]`, `"stream":true,"n":2`)).Body)
	if st.err != nil || !st.done {
		t.Fatalf("got err %v done %v, want a complete stream", st.err, st.done)
	}
	text := map[int64]string{}
	finished := map[int64]bool{}
	var indexes []int64
	for _, ev := range st.events {
		c := ev.Get("choices.0")
		i := c.Get("index").Int()
		indexes = append(indexes, i)
		text[i] += c.Get("delta.content").Str
		if c.Get("finish_reason").Str == "stop" {
			finished[i] = true
		}
	}
	for i, want := range []string{"[0] echo: hi", "[1] echo: hi"} {
		if text[int64(i)] != want || !finished[int64(i)] {
			t.Errorf("choice %d: got %q finished %v, want %q finished", i, text[int64(i)], finished[int64(i)], want)
		}
	}
	if len(indexes) < 4 || indexes[0] != 0 || indexes[1] != 1 || indexes[2] != 0 {
		t.Errorf("got choice order %v, want interleaved 0 1 0 ...", indexes)
	}
}

func TestGzip(t *testing.T) {
	tests := []struct {
		name  string
		extra string
	}{
		{"non-streaming", ""},
		{"streaming", `"stream":true`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewTB(t)
			s.Enqueue(Reply{Content: "zipped", Gzip: true})
			resp := post(t, s, "/chat/completions", chatBody(`[`+user+`]`, tt.extra))
			if got := resp.Header.Get("Content-Encoding"); got != "gzip" {
				t.Fatalf("got content-encoding %q, want gzip", got)
			}
			zr, err := gzip.NewReader(resp.Body)
			if err != nil {
				t.Fatalf("got %v, want a gzip stream", err)
			}
			plain, err := io.ReadAll(zr)
			if err != nil {
				t.Fatalf("got %v reading the gzip body, want none", err)
			}
			var text string
			if tt.extra == "" {
				text = gjson.GetBytes(plain, "choices.0.message.content").Str
			} else {
				st := readSSE(bytes.NewReader(plain))
				if !st.done {
					t.Errorf("got no [DONE] in %s", plain)
				}
				for _, ev := range st.events {
					text += ev.Get("choices.0.delta.content").Str
				}
			}
			if text != "zipped" {
				t.Errorf("got content %q, want zipped", text)
			}
		})
	}
}
