package tracing

import (
	"encoding/json"
	"strings"

	"github.com/recallproxy/recall/wire"
)

// ContentVariable is the environment variable by which an operator opts
// in to message content on spans, the one the OpenTelemetry GenAI
// instrumentations read: "true" (or "span_only", "span_and_event", any
// case) records the messages an exchange sent upstream and its answer as
// gen_ai.input.messages and gen_ai.output.messages; anything else, or
// nothing, records no content at all.
const ContentVariable = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

// ContentEnabled reports whether the environment opts in to message
// content (ContentVariable).
func ContentEnabled(getenv func(string) string) bool {
	switch strings.ToLower(strings.TrimSpace(getenv(ContentVariable))) {
	case "true", "span_only", "span_and_event":
		return true
	}
	return false
}

// CaptureContent reports whether t records message content on exchange
// spans (Exchange.Input and Output); false for a nil Tracer.
func (t *Tracer) CaptureContent() bool { return t != nil && t.content }

// messagePart is a part of a message in the GenAI conventions' JSON
// (gen-ai-input-messages.json, gen-ai-output-messages.json).
type messagePart struct {
	Type      string          `json:"type"`
	Content   string          `json:"content,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Response  *string         `json:"response,omitempty"`
	Modality  string          `json:"modality,omitempty"`
	URI       string          `json:"uri,omitempty"`
}

type message struct {
	Role         string        `json:"role"`
	Parts        []messagePart `json:"parts"`
	FinishReason string        `json:"finish_reason,omitempty"`
}

// Messages writes msgs as the GenAI conventions' messages JSON: roles
// (developer as system), text, tool calls (arguments as JSON when they
// are), tool results as tool_call_response, images as file_data (a data:
// URL's bytes left out), refusals; another provider's opaque pieces
// (encrypted reasoning, signed thinking) are left out. finish, if not
// "", is the last message's finish_reason (an answer's).
func Messages(msgs []wire.Message, finish string) string {
	out := make([]message, 0, len(msgs))
	for _, m := range msgs {
		role := m.Role
		if role == wire.RoleDeveloper {
			role = wire.RoleSystem
		}
		mm := message{Role: role, Parts: make([]messagePart, 0, len(m.Parts))}
		for _, p := range m.Parts {
			switch p.Kind {
			case wire.Text:
				mm.Parts = append(mm.Parts, messagePart{Type: "text", Content: p.Text})
			case wire.Refusal:
				mm.Parts = append(mm.Parts, messagePart{Type: "refusal", Content: p.Text})
			case wire.ToolCall:
				args := json.RawMessage(p.Arguments)
				if !json.Valid(args) {
					args, _ = json.Marshal(p.Arguments)
				}
				mm.Parts = append(mm.Parts, messagePart{Type: "tool_call", ID: p.CallID, Name: p.Name, Arguments: args})
			case wire.ToolResult:
				text := p.Text
				mm.Parts = append(mm.Parts, messagePart{Type: "tool_call_response", ID: p.CallID, Response: &text})
			case wire.Image:
				uri := p.URL
				if strings.HasPrefix(uri, "data:") {
					uri = ""
				}
				mm.Parts = append(mm.Parts, messagePart{Type: "file_data", Modality: "image", URI: uri})
			}
		}
		out = append(out, mm)
	}
	if finish != "" && len(out) > 0 {
		out[len(out)-1].FinishReason = finish
	}
	b, err := json.Marshal(out)
	if err != nil {
		return ""
	}
	return string(b)
}
