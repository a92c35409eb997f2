package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/wire"
)

// The APIs a crash-test conversation is driven through. A conversation
// keeps its API; the load mixes them.
const (
	apiChat      = "chat"
	apiResponses = "responses"
	apiMessages  = "messages"
)

// allAPIs are the three APIs Recall serves with memory.
var allAPIs = []string{apiChat, apiResponses, apiMessages}

// exchangeAPI sends msgs on conv through api and returns the answer, or an
// error unless the answer was acknowledged as that API's clients read it:
// a 200 with a complete body or, streamed, the event that ends the answer
// (chat: the chunk with finish_reason; Responses: response.completed;
// Messages: the message_delta with stop_reason). The rest of a stream is
// not read, as a client need not read it.
func exchangeAPI(client *http.Client, url, api, conv string, msgs []msg, stream bool) (msg, error) {
	if api == apiChat || api == "" {
		return exchange(client, url, conv, msgs, stream)
	}
	var body, path string
	switch api {
	case apiResponses:
		body, path = responsesBody(msgs, stream), "/v1/responses"
	case apiMessages:
		body, path = messagesBody(msgs, stream), "/v1/messages"
	default:
		return msg{}, fmt.Errorf("unknown api %q", api)
	}
	answer := messagesAnswer
	if api == apiResponses {
		answer = responsesAnswer
	}
	a := msg{role: "assistant"}
	event := func(data string) (msg, bool, error) {
		ev := gjson.Parse(data)
		switch typ := ev.Get("type").Str; {
		case typ == "error" || typ == "response.failed":
			return msg{}, true, fmt.Errorf("error event: %s", data)
		case api == apiResponses && (typ == "response.completed" || typ == "response.incomplete"):
			a, err := responsesAnswer(ev.Get("response")) // acknowledged
			return a, true, err
		case api == apiMessages && typ == "content_block_start":
			if b := ev.Get("content_block"); b.Get("type").Str == "tool_use" {
				a.calls = append(a.calls, b.Get("id").Str)
			} else {
				a.content += b.Get("text").Str
			}
		case api == apiMessages && typ == "content_block_delta":
			a.content += ev.Get("delta.text").Str
		case api == apiMessages && typ == "message_delta" && ev.Get("delta.stop_reason").Type == gjson.String:
			return a, true, nil // acknowledged
		case api == apiMessages && typ == "message_stop":
			return msg{}, true, errors.New("message_stop without a stop_reason before it")
		}
		return msg{}, false, nil
	}
	return postAnswer(client, url+path, conv, body, api == apiMessages, stream, answerReader{
		whole: func(b []byte) (msg, error) { return answer(gjson.ParseBytes(b)) },
		end:   "stream ended before its answer did",
		event: event,
	})
}

// responsesBody is a Responses request that sends msgs as input items.
func responsesBody(msgs []msg, stream bool) string {
	items := make([]string, len(msgs))
	for i, m := range msgs {
		var v map[string]string
		if m.role == "tool" {
			v = map[string]string{"type": "function_call_output", "call_id": m.toolCallID, "output": m.content}
		} else {
			v = map[string]string{"role": m.role, "content": m.content}
		}
		b, _ := json.Marshal(v)
		items[i] = string(b)
	}
	return fmt.Sprintf(`{"model":"gpt-4.1","stream":%v,"input":[%s]}`, stream, strings.Join(items, ","))
}

// messagesBody is a Messages request that sends msgs, tool results
// together in one user message as Anthropic wants them.
func messagesBody(msgs []msg, stream bool) string {
	var out []string
	var results []map[string]string
	for _, m := range msgs {
		if m.role == "tool" {
			results = append(results, map[string]string{"type": "tool_result", "tool_use_id": m.toolCallID, "content": m.content})
			continue
		}
		b, _ := json.Marshal(map[string]string{"role": m.role, "content": m.content})
		out = append(out, string(b))
	}
	if len(results) > 0 {
		b, _ := json.Marshal(map[string]any{"role": "user", "content": results})
		out = append(out, string(b))
	}
	return fmt.Sprintf(`{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":%v,"messages":[%s]}`, stream, strings.Join(out, ","))
}

// responsesAnswer reads a Response object's output.
func responsesAnswer(r gjson.Result) (msg, error) {
	if r.Get("object").Str != "response" || r.Get("status").Str != "completed" {
		return msg{}, fmt.Errorf("not a completed response: %s", r.Raw)
	}
	a := msg{role: "assistant"}
	for _, it := range r.Get("output").Array() {
		switch it.Get("type").Str {
		case "message":
			for _, p := range it.Get("content").Array() {
				a.content += p.Get("text").Str
			}
		case "function_call":
			a.calls = append(a.calls, it.Get("call_id").Str)
		}
	}
	return a, nil
}

// messagesAnswer reads a Message object's content.
func messagesAnswer(m gjson.Result) (msg, error) {
	if m.Get("type").Str != "message" || m.Get("stop_reason").Type != gjson.String {
		return msg{}, fmt.Errorf("not a whole message: %s", m.Raw)
	}
	a := msg{role: "assistant"}
	for _, b := range m.Get("content").Array() {
		switch b.Get("type").Str {
		case "text":
			a.content += b.Get("text").Str
		case "tool_use":
			a.calls = append(a.calls, b.Get("id").Str)
		}
	}
	return a, nil
}

// atoms is a message in a form every protocol's stored messages can be
// compared with: one string per piece (a user's or the assistant's text,
// a tool call, a tool result), in order. Protocols split a turn into
// messages differently (a Responses answer is one item per call, an
// Anthropic tool-results message holds them all); their atoms agree.
func (m msg) atoms(dst []string) []string {
	switch m.role {
	case "tool":
		return append(dst, "result("+m.toolCallID+"):"+m.content)
	case "assistant":
		if m.content != "" {
			dst = append(dst, "assistant:"+m.content)
		}
		for _, id := range m.calls {
			dst = append(dst, "call:"+id)
		}
		return dst
	}
	return append(dst, m.role+":"+m.content)
}

// storedAtoms reads a stored message, in whatever protocol it is, into
// atoms.
func storedAtoms(dst []string, m history.Message) ([]string, error) {
	c, err := m.Codec().Decode(m.Raw)
	if err != nil {
		return dst, fmt.Errorf("decode %s message %s: %w", m.Protocol, m.Raw, err)
	}
	for _, p := range c.Parts {
		switch p.Kind {
		case wire.Text:
			if p.Text != "" {
				dst = append(dst, c.Role+":"+p.Text)
			}
		case wire.ToolCall:
			dst = append(dst, "call:"+p.CallID)
		case wire.ToolResult:
			dst = append(dst, "result("+p.CallID+"):"+p.Text)
		case wire.Opaque:
		default:
			dst = append(dst, fmt.Sprintf("%s:part(%d)", c.Role, p.Kind))
		}
	}
	return dst, nil
}

// checkAtoms checks that atoms make a conversation every provider
// accepts: it starts with a user's text; every tool call is answered by a
// result right after its assistant's calls, before anything else; no
// result answers a call not awaiting it. Calls at the very end may await
// their results.
func checkAtoms(atoms []string) error {
	if len(atoms) == 0 {
		return nil
	}
	if !strings.HasPrefix(atoms[0], "user:") {
		return fmt.Errorf("starts with %q, want a user's text", atoms[0])
	}
	pending := map[string]bool{}
	for i, a := range atoms {
		switch {
		case strings.HasPrefix(a, "call:"):
			if len(pending) > 0 && !strings.HasPrefix(atoms[i-1], "call:") {
				return fmt.Errorf("atom %d %q: calls while %d earlier calls await results", i, a, len(pending))
			}
			pending[strings.TrimPrefix(a, "call:")] = true
		case strings.HasPrefix(a, "result("):
			id, _, _ := strings.Cut(strings.TrimPrefix(a, "result("), ")")
			if !pending[id] {
				return fmt.Errorf("atom %d %q: a result for no awaiting call", i, a)
			}
			delete(pending, id)
		default:
			if len(pending) > 0 {
				return fmt.Errorf("atom %d %q: text while %d calls await results", i, a, len(pending))
			}
		}
	}
	if len(pending) > 0 && !strings.HasPrefix(atoms[len(atoms)-1], "call:") {
		return fmt.Errorf("ends with %d calls unanswered after results", len(pending))
	}
	return nil
}

// storedText is a stored message's text, in whatever protocol it is.
func storedText(m history.Message) string {
	c, err := m.Codec().Decode(m.Raw)
	if err != nil {
		return ""
	}
	var s []string
	for _, p := range c.Parts {
		if p.Kind == wire.Text {
			s = append(s, p.Text)
		}
	}
	return strings.Join(s, "\n")
}
