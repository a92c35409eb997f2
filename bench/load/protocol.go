package main

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"

	"github.com/recallproxy/recall/wire"
)

// protocol is an API the load speaks (-protocol): where its requests go,
// how their bodies are shaped, and what marks a streamed answer complete.
type protocol struct {
	name string
	wire wire.Protocol
	path string // appended to Recall's or the upstream's root
	// done is the bytes a complete streamed answer carries: the event a
	// client holds its turn by, or the end marker after it.
	done []byte
}

// protocols are the APIs -protocol names.
var protocols = map[string]protocol{
	"chat":      {name: "chat", wire: wire.ChatCompletions, path: "/v1/chat/completions", done: []byte("[DONE]")},
	"responses": {name: "responses", wire: wire.Responses, path: "/v1/responses", done: []byte(`"type":"response.completed"`)},
	"messages":  {name: "messages", wire: wire.Messages, path: "/v1/messages", done: []byte(`"type":"message_stop"`)},
	// Gemini names the model and whether the answer streams in the path
	// (pathFor); a stream has no end event, its last chunk a finishReason.
	"gemini": {name: "gemini", wire: wire.Gemini, path: "/v1beta/models", done: []byte(`"finishReason"`)},
}

// protocolNamed returns the protocol called name ("": chat).
func protocolNamed(name string) (protocol, error) {
	if name == "" {
		name = "chat"
	}
	p, ok := protocols[name]
	if !ok {
		return protocol{}, fmt.Errorf("-protocol %q: want chat, responses, messages or gemini", name)
	}
	return p, nil
}

// anthropicVersion is the API version a Messages request names.
const anthropicVersion = "2023-06-01"

// messagesMaxTokens is the max_tokens of a Messages request (required by
// Anthropic; the fake upstream's echo stays far below it).
const messagesMaxTokens = 1024

// setHeaders sets the credential and version headers of p's requests.
func (p protocol) setHeaders(h http.Header, key string) {
	h.Set("Content-Type", "application/json")
	if p.wire == wire.Gemini {
		h.Set("X-Goog-Api-Key", key)
		return
	}
	if p.wire == wire.Messages {
		h.Set("X-Api-Key", key)
		h.Set("Anthropic-Version", anthropicVersion)
		return
	}
	h.Set("Authorization", "Bearer "+key)
}

// appendBody appends request n's JSON in p: the earlier turns of prefix
// (each message followed by a comma; {"role","content"} messages are valid
// in every protocol) and one new user message whose text is text.
func (p protocol) appendBody(b []byte, model string, prefix []byte, text []byte, stream bool) []byte {
	if p.wire == wire.Gemini {
		// The model and the stream flag are in the path (pathFor).
		b = append(b, `{"contents":[`...)
		b = append(b, prefix...)
		b = append(b, `{"role":"user","parts":[{"text":"`...)
		b = append(b, text...)
		return append(b, `"}]}]}`...)
	}
	b = append(b, `{"model":"`...)
	b = append(b, model...)
	switch p.wire {
	case wire.Responses:
		b = append(b, `","input":[`...)
	case wire.Messages:
		b = append(b, `","max_tokens":`...)
		b = strconv.AppendInt(b, messagesMaxTokens, 10)
		b = append(b, `,"messages":[`...)
	default:
		b = append(b, `","messages":[`...)
	}
	b = append(b, prefix...)
	b = append(b, `{"role":"user","content":"`...)
	b = append(b, text...)
	b = append(b, `"}]`...)
	if stream {
		if p.wire == wire.ChatCompletions {
			b = append(b, `,"stream":true,"stream_options":{"include_usage":true}`...)
		} else {
			b = append(b, `,"stream":true`...)
		}
	}
	return append(b, '}')
}

// doneScanner reports whether a streamed answer read in pieces carried a
// marker, wherever the reads split it.
type doneScanner struct {
	mark  []byte
	carry []byte // the last len(mark)-1 bytes read
	found bool
}

func newDoneScanner(mark []byte) *doneScanner {
	return &doneScanner{mark: mark, carry: make([]byte, 0, 2*len(mark))}
}

// write reads the next piece of the answer.
func (s *doneScanner) write(p []byte) {
	if s.found || len(p) == 0 {
		return
	}
	// The marker may start in the carry and end in p.
	head := p[:min(len(p), len(s.mark)-1)]
	if bytes.Contains(append(s.carry, head...), s.mark) || bytes.Contains(p, s.mark) {
		s.found = true
		return
	}
	keep := len(s.mark) - 1
	if len(p) >= keep {
		s.carry = append(s.carry[:0], p[len(p)-keep:]...)
		return
	}
	s.carry = append(s.carry, p...)
	if len(s.carry) > keep {
		s.carry = s.carry[len(s.carry)-keep:]
	}
}

// pathFor returns what follows the URL of a request for model: Gemini's
// /{model}:generateContent or :streamGenerateContent?alt=sse (the model and
// the stream flag are the path's there), nothing for the others, whose
// URL is the whole path.
func (p protocol) pathFor(model string, stream bool) string {
	if p.wire != wire.Gemini {
		return ""
	}
	if stream {
		return "/" + model + ":streamGenerateContent?alt=sse"
	}
	return "/" + model + ":generateContent"
}
