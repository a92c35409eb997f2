package responses

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/wire"
)

// ErrFailed wraps the error of a response the upstream reports as failed.
var ErrFailed = fmt.Errorf("responses: the upstream response failed: %w", wire.ErrUpstream)

// ParseAnswer reads a non-streamed Response object.
func (Upstream) ParseAnswer(body []byte) (wire.Answer, error) {
	if !gjson.ValidBytes(body) {
		return wire.Answer{}, errors.New("responses: parse answer: invalid JSON")
	}
	return parseResponse(parse(body), nil)
}

// parseResponse reads a Response object into an Answer, with the
// settings it reports running with in Settings (see upstreamSettings).
// When its output is missing or empty, done (the items of the stream's
// response.output_item.done events, in output order) stands in for it.
// Everything returned is a copy.
func parseResponse(r gjson.Result, done []gjson.Result) (wire.Answer, error) {
	if !r.IsObject() {
		return wire.Answer{}, errors.New("responses: parse answer: not an object")
	}
	if r.Get("status").Str == "failed" {
		msg := r.Get("error.message").Str
		if msg == "" {
			msg = "no error given"
		}
		return wire.Answer{}, fmt.Errorf("%w: %s", ErrFailed, msg)
	}
	out := r.Get("output")
	if !out.IsArray() && out.Exists() && out.Type != gjson.Null {
		return wire.Answer{}, errors.New("responses: parse answer: output is not an array")
	}
	items := out.Array()
	if len(items) == 0 {
		items = done
	}
	a := wire.Answer{
		ID:       strings.Clone(r.Get("id").Str),
		Model:    strings.Clone(r.Get("model").Str),
		Message:  wire.Message{Role: wire.RoleAssistant},
		Protocol: wire.Responses,
		Stop:     wire.StopEnd,
		Settings: upstreamSettings(r),
	}
	calls := false
	for _, item := range items {
		switch role(item) {
		case "":
			return wire.Answer{}, fmt.Errorf("responses: parse answer: output item of type %q is not an item", itemType(item))
		case wire.RoleAssistant:
		default:
			// An answer's items are the model's: a system, developer or
			// user message (or a tool's output) from a hostile upstream
			// would be stored and replayed as such on every later turn.
			return wire.Answer{}, fmt.Errorf("responses: parse answer: output item of type %q with role %q is not the model's", itemType(item), role(item))
		}
		raw := []byte(item.Raw)
		a.Stored = append(a.Stored, raw)
		m, _ := Codec{}.Decode(raw)
		for _, p := range m.Parts {
			calls = calls || p.Kind == wire.ToolCall
		}
		a.Message.Parts = append(a.Message.Parts, m.Parts...)
	}
	switch {
	case r.Get("status").Str == "incomplete":
		switch r.Get("incomplete_details.reason").Str {
		case "content_filter":
			a.Stop = wire.StopFilter
		default:
			a.Stop = wire.StopLength
		}
	case calls:
		a.Stop = wire.StopToolCalls
	}
	u := r.Get("usage")
	a.Usage = wire.Usage{
		InputTokens:     int(u.Get("input_tokens").Int()),
		OutputTokens:    int(u.Get("output_tokens").Int()),
		CachedTokens:    int(u.Get("input_tokens_details.cached_tokens").Int()),
		ReasoningTokens: int(u.Get("output_tokens_details.reasoning_tokens").Int()),
	}
	return a, nil
}
