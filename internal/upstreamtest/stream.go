package upstreamtest

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"strconv"

	"github.com/tidwall/gjson"
)

// delta is one streamed chunk of one choice: the delta object's JSON and,
// on the last chunk of the choice, its finish_reason.
type delta struct {
	index  int
	json   []byte
	finish string
}

// startEventStream answers 200 with the header of an event stream
// (text/event-stream, no-cache) and returns the controller that flushes
// its events.
func startEventStream(w http.ResponseWriter) *http.ResponseController {
	h := w.Header()
	h["Content-Type"] = []string{"text/event-stream"}
	h["Cache-Control"] = []string{"no-cache"}
	w.WriteHeader(http.StatusOK)
	return http.NewResponseController(w)
}

// writeStream writes the completion as OpenAI's SSE stream: per choice a
// role delta, content (or refusal) deltas, tool-call fragments and a finish
// chunk, the choices interleaved; then the usage chunk when asked for; then
// [DONE]. Every event is flushed on its own.
func (s *Server) writeStream(ctx context.Context, w http.ResponseWriter, c *completion, gate <-chan struct{}) {
	var out io.Writer = w
	var zw *gzip.Writer
	if c.reply.Gzip {
		w.Header()["Content-Encoding"] = []string{"gzip"}
		zw = gzip.NewWriter(w)
		out = zw
	}
	rc := startEventStream(w)
	send := func(b []byte) bool {
		if _, err := out.Write(b); err != nil {
			return false
		}
		if zw != nil {
			if err := zw.Flush(); err != nil {
				return false
			}
		}
		return rc.Flush() == nil
	}

	// end ends a line, end+end an event.
	end := c.reply.LineEnding
	if end == "" {
		end = "\n"
	}
	events := c.deltas()
	buf := make([]byte, 0, 512)
	faults := streamFaults{
		cut: cutConnection(w),
		malformed: func(int) bool {
			buf = append(buf[:0], "data: "...)
			buf = c.appendHead(buf, "chat.completion.chunk")
			buf = append(append(buf[:len(buf)/2], end...), end...) // an object never closed
			return send(buf)
		},
		errorEvent: func(int) {
			buf = append(buf[:0], "data: "...)
			buf = append(buf, `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":"`+ErrorEventCode+`"}}`...)
			buf = append(append(buf, end...), end...)
			if send(buf) && zw != nil {
				_ = zw.Close()
			}
		},
	}
	if !s.sendEvents(ctx, c.reply.Fault, len(events), 2, gate, faults, func(i int) bool {
		buf = append(buf[:0], "data: "...)
		buf = c.appendChunk(buf, events[i])
		buf = append(append(buf, end...), end...)
		return send(buf)
	}) {
		return
	}
	if c.usage {
		buf = append(buf[:0], "data: "...)
		buf = c.appendHead(buf, "chat.completion.chunk")
		buf = append(buf, `],"usage":`...)
		buf = c.appendUsage(buf)
		buf = append(buf, `,"service_tier":"default","system_fingerprint":"fp_upstreamtest"}`...)
		buf = append(append(buf, end...), end...)
		if !send(buf) {
			return
		}
	}
	done := []byte("data: [DONE]" + end + end)
	if c.reply.Fault != FaultNoDone && !send(done) {
		return
	}
	if c.reply.Fault == FaultEventsAfterDone {
		for _, ev := range []delta{
			{json: append(gjson.AppendJSONString([]byte(`{"content":`), AfterDoneText), '}')},
			{json: []byte("{}"), finish: "stop"},
		} {
			buf = append(buf[:0], "data: "...)
			buf = c.appendChunk(buf, ev)
			buf = append(append(buf, end...), end...)
			if !send(buf) {
				return
			}
		}
		if !send(done) {
			return
		}
	}
	if zw != nil {
		_ = zw.Close()
	}
}

// appendChunk appends one chat.completion.chunk object carrying ev.
func (c *completion) appendChunk(b []byte, ev delta) []byte {
	b = c.appendHead(b, "chat.completion.chunk")
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(ev.index), 10)
	b = append(b, `,"delta":`...)
	b = append(b, ev.json...)
	b = append(b, `,"logprobs":null,"finish_reason":`...)
	b = appendNullableString(b, ev.finish)
	b = append(b, "}]"...)
	if c.usage {
		b = append(b, `,"usage":null`...)
	}
	return append(b, `,"service_tier":"default","system_fingerprint":"fp_upstreamtest"}`...)
}

// deltas lists the stream's chunks in sending order, choices interleaved.
func (c *completion) deltas() []delta {
	n := max(1, len(c.content))
	per := make([][]delta, n)
	longest := 0
	for i := range n {
		per[i] = c.choiceDeltas(i)
		longest = max(longest, len(per[i]))
	}
	if n == 1 {
		return per[0]
	}
	out := make([]delta, 0, n*longest)
	for k := range longest {
		for i := range n {
			if k < len(per[i]) {
				out = append(out, per[i][k])
			}
		}
	}
	return out
}

func (c *completion) choiceDeltas(i int) []delta {
	chunks := c.reply.Chunks
	if chunks <= 0 {
		chunks = 4
	}
	var ds []delta
	add := func(b []byte) { ds = append(ds, delta{index: i, json: b}) }
	if c.content != nil {
		add([]byte(`{"role":"assistant","content":""}`))
		for _, p := range splitRunes(c.content[i], chunks) {
			add(append(gjson.AppendJSONString([]byte(`{"content":`), p), '}'))
		}
	} else {
		add([]byte(`{"role":"assistant","content":null}`))
	}
	for _, p := range splitRunes(c.reply.Refusal, chunks) {
		add(append(gjson.AppendJSONString([]byte(`{"refusal":`), p), '}'))
	}
	for j, tc := range c.calls {
		if c.reply.DescendingToolIndexes {
			j = len(c.calls) - 1 - j
			tc = c.calls[j]
		}
		b := []byte(`{"tool_calls":[{"index":`)
		b = strconv.AppendInt(b, int64(j), 10)
		b = append(b, `,"id":`...)
		b = gjson.AppendJSONString(b, tc.ID)
		b = append(b, `,"type":"function","function":{"name":`...)
		b = gjson.AppendJSONString(b, tc.Name)
		add(append(b, `,"arguments":""}}]}`...))
		for _, p := range splitRunes(tc.Arguments, 3) {
			b := []byte(`{"tool_calls":[{"index":`)
			b = strconv.AppendInt(b, int64(j), 10)
			b = append(b, `,"function":{"arguments":`...)
			b = gjson.AppendJSONString(b, p)
			add(append(b, "}}]}"...))
		}
	}
	ds = append(ds, delta{index: i, json: []byte("{}"), finish: c.finish})
	return ds
}

// splitRunes splits s into about k pieces of similar length, on rune
// boundaries. An empty s gives no pieces.
func splitRunes(s string, k int) []string {
	if s == "" {
		return nil
	}
	rs := []rune(s)
	k = min(k, len(rs))
	out := make([]string, 0, k)
	for i := range k {
		lo, hi := i*len(rs)/k, (i+1)*len(rs)/k
		out = append(out, string(rs[lo:hi]))
	}
	return out
}
