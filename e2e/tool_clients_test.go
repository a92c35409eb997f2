package e2e

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// toolClient is a client of one protocol that keeps its history and
// resends it whole on every request (as coding agents do), offering its
// own tool get_weather, and reads answers streamed or not the way the
// protocol's SDKs do, checking that a stream is well formed.
type toolClient struct {
	name string
	path string
	// body is a request carrying msgs (messages or items in the
	// protocol's JSON).
	body func(msgs []string, stream bool) string
	// user is a user message; result the client's result of its call id.
	user   func(text string) string
	result func(id, text string) string
	// read reads an answer: what the client holds of it.
	read func(t *testing.T, body string, stream bool) heard
}

// heard is an answer as a client holds it.
type heard struct {
	text  string
	calls []string // the ids of the tool calls it asks for
	stop  string
	// resend are the answer's messages (or items) as the client sends
	// them back.
	resend []string
}

func quoteJSON(s string) string { b, _ := json.Marshal(s); return string(b) }

// sseData returns the data of each event of an SSE body, with its event
// name.
func sseEvents(body string) (names, data []string) {
	for _, block := range strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n\n") {
		name, d := "", ""
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				name = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				d += line[len("data: "):]
			}
		}
		if d != "" {
			names, data = append(names, name), append(data, d)
		}
	}
	return names, data
}

var chatClient = toolClient{
	name: "chat",
	path: "/v1/chat/completions",
	body: func(msgs []string, stream bool) string {
		return `{"model":"gpt-4o","stream":` + strconv.FormatBool(stream) +
			`,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],"messages":[` +
			strings.Join(msgs, ",") + `]}`
	},
	user: func(text string) string { return `{"role":"user","content":` + quoteJSON(text) + `}` },
	result: func(id, text string) string {
		return `{"role":"tool","tool_call_id":` + quoteJSON(id) + `,"content":` + quoteJSON(text) + `}`
	},
	read: func(t *testing.T, body string, stream bool) heard {
		t.Helper()
		if !stream {
			m := gjson.Get(body, "choices.0.message")
			h := heard{text: m.Get("content").String(), stop: gjson.Get(body, "choices.0.finish_reason").String(), resend: []string{m.Raw}}
			for _, c := range m.Get("tool_calls").Array() {
				h.calls = append(h.calls, c.Get("id").String())
			}
			return h
		}
		type call struct{ id, name, args string }
		var h heard
		var calls []call
		ids := map[string]bool{}
		_, data := sseEvents(body)
		if n := len(data); n == 0 || data[n-1] != "[DONE]" {
			t.Errorf("chat stream: got %d events, want [DONE] last", n)
		}
		for _, d := range data {
			if d == "[DONE]" {
				continue
			}
			ev := gjson.Parse(d)
			ids[ev.Get("id").String()] = true
			ch := ev.Get("choices.0")
			h.text += ch.Get("delta.content").String()
			for _, tc := range ch.Get("delta.tool_calls").Array() {
				i := int(tc.Get("index").Int())
				for len(calls) <= i {
					calls = append(calls, call{})
				}
				if id := tc.Get("id").String(); id != "" {
					calls[i].id, calls[i].name = id, tc.Get("function.name").String()
				}
				calls[i].args += tc.Get("function.arguments").String()
			}
			if f := ch.Get("finish_reason").String(); f != "" {
				if h.stop != "" {
					t.Errorf("chat stream: a second finish_reason %q after %q", f, h.stop)
				}
				h.stop = f
			}
		}
		if len(ids) != 1 {
			t.Errorf("chat stream: got chunk ids %v, want one", ids)
		}
		msg := `{"role":"assistant","content":` + quoteJSON(h.text)
		if len(calls) > 0 {
			var tcs []string
			for _, c := range calls {
				h.calls = append(h.calls, c.id)
				tcs = append(tcs, `{"id":`+quoteJSON(c.id)+`,"type":"function","function":{"name":`+quoteJSON(c.name)+`,"arguments":`+quoteJSON(c.args)+`}}`)
			}
			msg += `,"tool_calls":[` + strings.Join(tcs, ",") + `]`
		}
		h.resend = []string{msg + "}"}
		return h
	},
}

var messagesClient = toolClient{
	name: "messages",
	path: "/v1/messages",
	body: func(msgs []string, stream bool) string {
		return `{"model":"claude-sonnet-4-5","max_tokens":500,"stream":` + strconv.FormatBool(stream) +
			`,"tools":[{"name":"get_weather","input_schema":{"type":"object"}}],"messages":[` + strings.Join(msgs, ",") + `]}`
	},
	user: func(text string) string { return `{"role":"user","content":` + quoteJSON(text) + `}` },
	result: func(id, text string) string {
		return `{"role":"user","content":[{"type":"tool_result","tool_use_id":` + quoteJSON(id) + `,"content":` + quoteJSON(text) + `}]}`
	},
	read: func(t *testing.T, body string, stream bool) heard {
		t.Helper()
		content := gjson.Get(body, "content").Raw
		var h heard
		if !stream {
			h.stop = gjson.Get(body, "stop_reason").String()
		} else {
			type block struct {
				typ, id, name, text, input, thinking, signature string
			}
			var blocks []*block
			starts, stops := 0, 0
			names, data := sseEvents(body)
			for i, d := range data {
				ev := gjson.Parse(d)
				if ev.Get("type").String() != names[i] {
					t.Errorf("messages stream: event %q carries type %q", names[i], ev.Get("type").String())
				}
				switch names[i] {
				case "message_start":
					starts++
				case "message_stop":
					stops++
				case "content_block_start":
					idx := int(ev.Get("index").Int())
					if idx != len(blocks) {
						t.Errorf("messages stream: block %d started after %d blocks", idx, len(blocks))
						continue
					}
					cb := ev.Get("content_block")
					blocks = append(blocks, &block{typ: cb.Get("type").String(), id: cb.Get("id").String(), name: cb.Get("name").String()})
				case "content_block_delta":
					idx := int(ev.Get("index").Int())
					if idx >= len(blocks) {
						t.Errorf("messages stream: delta of block %d never started", idx)
						continue
					}
					blocks[idx].text += ev.Get("delta.text").String()
					blocks[idx].input += ev.Get("delta.partial_json").String()
					blocks[idx].thinking += ev.Get("delta.thinking").String()
					blocks[idx].signature += ev.Get("delta.signature").String()
				case "message_delta":
					if h.stop != "" {
						t.Errorf("messages stream: a second stop_reason")
					}
					h.stop = ev.Get("delta.stop_reason").String()
				}
			}
			if starts != 1 || stops != 1 || names[len(names)-1] != "message_stop" {
				t.Errorf("messages stream: got %d message_start and %d message_stop (last %q), want one each, message_stop last",
					starts, stops, names[len(names)-1])
			}
			var cs []string
			for _, b := range blocks {
				switch b.typ {
				case "text":
					cs = append(cs, `{"type":"text","text":`+quoteJSON(b.text)+`}`)
				case "tool_use":
					input := b.input
					if input == "" {
						input = "{}"
					}
					cs = append(cs, `{"type":"tool_use","id":`+quoteJSON(b.id)+`,"name":`+quoteJSON(b.name)+`,"input":`+input+`}`)
				case "thinking":
					cs = append(cs, `{"type":"thinking","thinking":`+quoteJSON(b.thinking)+`,"signature":`+quoteJSON(b.signature)+`}`)
				default:
					t.Errorf("messages stream: got a %s block", b.typ)
				}
			}
			content = "[" + strings.Join(cs, ",") + "]"
		}
		for _, b := range gjson.Parse(content).Array() {
			switch b.Get("type").String() {
			case "text":
				h.text += b.Get("text").String()
			case "tool_use":
				h.calls = append(h.calls, b.Get("id").String())
			}
		}
		h.resend = []string{`{"role":"assistant","content":` + content + `}`}
		return h
	},
}

var responsesClient = toolClient{
	name: "responses",
	path: "/v1/responses",
	body: func(msgs []string, stream bool) string {
		return `{"model":"gpt-4o","store":false,"stream":` + strconv.FormatBool(stream) +
			`,"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}],"input":[` + strings.Join(msgs, ",") + `]}`
	},
	user: func(text string) string { return `{"role":"user","content":` + quoteJSON(text) + `}` },
	result: func(id, text string) string {
		return `{"type":"function_call_output","call_id":` + quoteJSON(id) + `,"output":` + quoteJSON(text) + `}`
	},
	read: func(t *testing.T, body string, stream bool) heard {
		t.Helper()
		resp := gjson.Parse(body)
		if stream {
			names, data := sseEvents(body)
			created, completed := 0, 0
			deltas := map[int64]string{} // streamed text by output index
			for i, d := range data {
				ev := gjson.Parse(d)
				if got := ev.Get("sequence_number").Int(); got != int64(i) {
					t.Errorf("responses stream: event %d (%s) has sequence_number %d", i, names[i], got)
				}
				switch names[i] {
				case "response.created":
					created++
				case "response.output_text.delta":
					deltas[ev.Get("output_index").Int()] += ev.Get("delta").String()
				case "response.completed", "response.incomplete":
					completed++
					resp = ev.Get("response")
				}
			}
			if created != 1 || completed != 1 || !strings.HasPrefix(names[len(names)-1], "response.") ||
				(names[len(names)-1] != "response.completed" && names[len(names)-1] != "response.incomplete") {
				t.Errorf("responses stream: got %d response.created and %d completed (last %q), want one each, completed last",
					created, completed, names[len(names)-1])
			}
			for i, it := range resp.Get("output").Array() {
				want := ""
				for _, p := range it.Get("content").Array() {
					want += p.Get("text").String()
				}
				if deltas[int64(i)] != want {
					t.Errorf("responses stream: output %d streamed %q, completed with %q", i, deltas[int64(i)], want)
				}
			}
		}
		h := heard{stop: resp.Get("status").String()}
		for _, it := range resp.Get("output").Array() {
			switch it.Get("type").String() {
			case "message":
				for _, p := range it.Get("content").Array() {
					h.text += p.Get("text").String()
				}
			case "function_call":
				h.calls = append(h.calls, it.Get("call_id").String())
			}
			h.resend = append(h.resend, it.Raw)
		}
		return h
	},
}
