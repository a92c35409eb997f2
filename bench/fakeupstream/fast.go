package main

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// fastChat answers chat completions at once without validating them: it
// reads the body, checks only that it is an object and looks only at its
// "stream" flag (streamed), and answers one fixed assistant message (or
// the same as a stream). Every other path goes to
// next, the strict fake. The load script uses it (-fast) so that the fake
// upstream, which shares the load generator's core, does not saturate it:
// validating the ~60 KB prompts the history rows send made the strict fake
// the bottleneck of every open-loop history row (a resending client got
// 937 req/s through it closed loop on one core, 3,811 through this).
func fastChat(next http.Handler) http.Handler {
	bufs := sync.Pool{New: func() any { return new(bytes.Buffer) }}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			next.ServeHTTP(w, r)
			return
		}
		b := bufs.Get().(*bytes.Buffer)
		defer bufs.Put(b)
		b.Reset()
		if _, err := io.Copy(b, r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if body := bytes.TrimSpace(b.Bytes()); len(body) < 2 || body[0] != '{' || body[len(body)-1] != '}' {
			http.Error(w, `{"error":{"message":"invalid JSON","type":"invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		if !streamed(b.Bytes()) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(fastAnswer)))
			io.WriteString(w, fastAnswer)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, fastStream)
	})
}

const fastAnswer = `{"id":"chatcmpl-fast","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello there."},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`

const fastStream = `data: {"id":"chatcmpl-fast","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n" +
	`data: {"id":"chatcmpl-fast","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"Hello there."},"finish_reason":null}]}` + "\n\n" +
	`data: {"id":"chatcmpl-fast","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}` + "\n\n" +
	"data: [DONE]\n\n"

// streamed reads a chat completion's "stream" flag without parsing the
// body: the value of the first "stream" key. A "stream" inside a string
// cannot match (its quotes are escaped there), and the load script's
// bodies carry no nested "stream" key (no tools). Validating each ~60 KB
// body as JSON and finding the key past the messages with gjson were a
// third of the fake's CPU, on the core it shares with the load generator
// and, in the recall-pg rows, PostgreSQL.
func streamed(b []byte) bool {
	key := []byte(`"stream"`)
	for {
		i := bytes.Index(b, key)
		if i < 0 {
			return false
		}
		b = bytes.TrimLeft(b[i+len(key):], " \t\r\n")
		if len(b) > 0 && b[0] == ':' {
			return bytes.HasPrefix(bytes.TrimLeft(b[1:], " \t\r\n"), []byte("true"))
		}
	}
}
