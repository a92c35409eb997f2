package main

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// fastAnswers answers chat completions, Anthropic Messages and the
// Responses API at once without validating them: it reads the body,
// checks only that it is an object and looks only at its "stream" flag
// (streamed), and answers one fixed assistant message in the path's
// protocol (or the same as a stream, written in one piece). Every other
// path goes to next, the strict fake. The load script uses it (-fast) so
// that the fake upstream, which shares the load generator's core, does
// not saturate it: validating the ~60 KB prompts the history rows send
// made the strict fake the bottleneck of every open-loop history row (a
// resending client got 937 req/s through it closed loop on one core,
// 3,811 through this), and the strict Messages fake also plays
// Anthropic's prompt cache, keeping every marked prompt it is sent.
func fastAnswers(next http.Handler) http.Handler {
	bufs := sync.Pool{New: func() any { return new(bytes.Buffer) }}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var answer, stream string
		switch {
		case r.Method != http.MethodPost:
		case strings.HasSuffix(r.URL.Path, "/chat/completions"):
			answer, stream = fastAnswer, fastStream
		case strings.HasSuffix(r.URL.Path, "/messages"):
			answer, stream = fastMessage, fastMessageStream
		case strings.HasSuffix(r.URL.Path, "/responses"):
			answer, stream = fastResponse, fastResponseStream
		case strings.HasSuffix(r.URL.Path, ":generateContent"), strings.HasSuffix(r.URL.Path, ":streamGenerateContent"):
			answer, stream = fastGemini, fastGeminiStream
		}
		if answer == "" {
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
		if !streamed(b.Bytes()) && !strings.HasSuffix(r.URL.Path, ":streamGenerateContent") {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
			io.WriteString(w, answer)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, stream)
	})
}

const fastAnswer = `{"id":"chatcmpl-fast","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello there."},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`

const fastStream = `data: {"id":"chatcmpl-fast","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n" +
	`data: {"id":"chatcmpl-fast","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"Hello there."},"finish_reason":null}]}` + "\n\n" +
	`data: {"id":"chatcmpl-fast","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}` + "\n\n" +
	"data: [DONE]\n\n"

// fastMessage is fastAnswer as an Anthropic Message, fastMessageStream
// as Anthropic's events.
const fastMessage = `{"id":"msg_fast","type":"message","role":"assistant","model":"claude-fast",` +
	`"content":[{"type":"text","text":"Hello there."}],"stop_reason":"end_turn","stop_sequence":null,` +
	`"usage":{"input_tokens":12,"output_tokens":3}}`

const fastMessageStream = "event: message_start\ndata: " + `{"type":"message_start","message":{"id":"msg_fast","type":"message","role":"assistant","model":"claude-fast","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1}}}` + "\n\n" +
	"event: content_block_start\ndata: " + `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
	"event: content_block_delta\ndata: " + `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello there."}}` + "\n\n" +
	"event: content_block_stop\ndata: " + `{"type":"content_block_stop","index":0}` + "\n\n" +
	"event: message_delta\ndata: " + `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":3}}` + "\n\n" +
	"event: message_stop\ndata: " + `{"type":"message_stop"}` + "\n\n"

// fastResponse is fastAnswer as a Response (stateless: store false),
// fastResponseStream as the Responses API's events.
const fastResponse = `{"id":"resp_fast","object":"response","created_at":1700000000,"status":"completed","background":false,"completed_at":1700000001,` +
	`"error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"max_tool_calls":null,"model":"gpt-4o-mini",` +
	`"output":[` + fastResponseItem + `],"parallel_tool_calls":true,"presence_penalty":0.0,"frequency_penalty":0.0,"previous_response_id":null,` +
	`"prompt_cache_key":null,"reasoning":{"effort":null,"summary":null},"safety_identifier":null,"service_tier":"default","store":false,` +
	`"temperature":1.0,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_logprobs":0,"top_p":1.0,"truncation":"disabled",` +
	`"usage":` + fastResponseUsage + `,"user":null,"metadata":{}}`

const (
	fastResponseItem  = `{"id":"msg_fast","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"Hello there."}],"role":"assistant"}`
	fastResponseUsage = `{"input_tokens":12,"input_tokens_details":{"cached_tokens":0},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":15}`
	fastInProgress    = `{"id":"resp_fast","object":"response","created_at":1700000000,"status":"in_progress","background":false,"completed_at":null,"error":null,"incomplete_details":null,"model":"gpt-4o-mini","output":[],"service_tier":"auto","store":false,"usage":null,"metadata":{}}`
	fastPart          = `"item_id":"msg_fast","output_index":0,"content_index":0`
)

const fastResponseStream = "event: response.created\ndata: " + `{"type":"response.created","sequence_number":0,"response":` + fastInProgress + `}` + "\n\n" +
	"event: response.in_progress\ndata: " + `{"type":"response.in_progress","sequence_number":1,"response":` + fastInProgress + `}` + "\n\n" +
	"event: response.output_item.added\ndata: " + `{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_fast","type":"message","status":"in_progress","content":[],"role":"assistant"}}` + "\n\n" +
	"event: response.content_part.added\ndata: " + `{"type":"response.content_part.added","sequence_number":3,` + fastPart + `,"part":{"type":"output_text","annotations":[],"text":""}}` + "\n\n" +
	"event: response.output_text.delta\ndata: " + `{"type":"response.output_text.delta","sequence_number":4,` + fastPart + `,"delta":"Hello there."}` + "\n\n" +
	"event: response.output_text.done\ndata: " + `{"type":"response.output_text.done","sequence_number":5,` + fastPart + `,"text":"Hello there."}` + "\n\n" +
	"event: response.content_part.done\ndata: " + `{"type":"response.content_part.done","sequence_number":6,` + fastPart + `,"part":{"type":"output_text","annotations":[],"text":"Hello there."}}` + "\n\n" +
	"event: response.output_item.done\ndata: " + `{"type":"response.output_item.done","sequence_number":7,"output_index":0,"item":` + fastResponseItem + `}` + "\n\n" +
	"event: response.completed\ndata: " + `{"type":"response.completed","sequence_number":8,"response":` + fastResponse + `}` + "\n\n"

// streamed reads a request's "stream" flag without parsing the
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

// fastGemini is fastAnswer as a GenerateContentResponse, fastGeminiStream
// as :streamGenerateContent?alt=sse's chunks (Gemini names the stream in
// the path, not the body; its last chunk carries the finishReason).
const fastGemini = `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hello there."}]},"finishReason":"STOP","index":0}],` +
	`"usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":3,"totalTokenCount":15},"modelVersion":"gemini-2.5-flash","responseId":"fast"}`

const fastGeminiStream = `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hello "}]},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"fast"}` + "\r\n\r\n" +
	`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"there."}]},"finishReason":"STOP","index":0}],` +
	`"usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":3,"totalTokenCount":15},"modelVersion":"gemini-2.5-flash","responseId":"fast"}` + "\r\n\r\n"
