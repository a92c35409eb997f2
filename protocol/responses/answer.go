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
// settings it reports running with in Settings (see appendSetting).
// When its output is missing or empty, done (the items of the stream's
// response.output_item.done events, in output order) stands in for it.
// Everything returned is a copy.
func parseResponse(r gjson.Result, done []gjson.Result) (wire.Answer, error) {
	if !r.IsObject() {
		return wire.Answer{}, errors.New("responses: parse answer: not an object")
	}
	// One pass over the object: each member as Get finds it (the first of
	// duplicates), and the settings (appendSetting).
	var status, errv, out, id, model, details, usage gjson.Result
	var settings []byte
	r.ForEach(func(k, v gjson.Result) bool {
		var m *gjson.Result
		switch k.Str {
		case "status":
			m = &status
		case "error":
			m = &errv
		case "output":
			m = &out
		case "id":
			m = &id
		case "model":
			m = &model
		case "incomplete_details":
			m = &details
		case "usage":
			m = &usage
		default:
			settings = appendSetting(settings, k, v)
		}
		if m != nil && !m.Exists() {
			*m = v
		}
		return true
	})
	if status.Str == "failed" {
		msg := errv.Get("message").Str
		if msg == "" {
			msg = "no error given"
		}
		return wire.Answer{}, fmt.Errorf("%w: %s", ErrFailed, msg)
	}
	if !out.IsArray() && out.Exists() && out.Type != gjson.Null {
		return wire.Answer{}, errors.New("responses: parse answer: output is not an array")
	}
	items := out.Array()
	if len(items) == 0 {
		items = done
	}
	if settings != nil {
		settings = append(settings, '}')
	}
	a := wire.Answer{
		ID:       strings.Clone(id.Str),
		Model:    strings.Clone(model.Str),
		Message:  wire.Message{Role: wire.RoleAssistant},
		Protocol: wire.Responses,
		Stop:     wire.StopEnd,
		Settings: settings,
	}
	calls := false
	for _, item := range items {
		// Decoded once: its role is role(item)'s.
		raw := []byte(item.Raw)
		m, err := Codec{}.Decode(raw)
		switch {
		case err != nil:
			return wire.Answer{}, fmt.Errorf("responses: parse answer: output item of type %q is not an item", itemType(item))
		case m.Role != wire.RoleAssistant:
			// An answer's items are the model's: a system, developer or
			// user message (or a tool's output) from a hostile upstream
			// would be stored and replayed as such on every later turn.
			return wire.Answer{}, fmt.Errorf("responses: parse answer: output item of type %q with role %q is not the model's", itemType(item), m.Role)
		}
		a.Stored = append(a.Stored, raw)
		for _, p := range m.Parts {
			calls = calls || p.Kind == wire.ToolCall
		}
		a.Message.Parts = append(a.Message.Parts, m.Parts...)
	}
	switch {
	case status.Str == "incomplete":
		switch details.Get("reason").Str {
		case "content_filter":
			a.Stop = wire.StopFilter
		default:
			a.Stop = wire.StopLength
		}
	case calls:
		a.Stop = wire.StopToolCalls
	}
	u := usage
	a.Usage = wire.Usage{
		InputTokens:     int(u.Get("input_tokens").Int()),
		OutputTokens:    int(u.Get("output_tokens").Int()),
		CachedTokens:    int(u.Get("input_tokens_details.cached_tokens").Int()),
		ReasoningTokens: int(u.Get("output_tokens_details.reasoning_tokens").Int()),
	}
	return a, nil
}
