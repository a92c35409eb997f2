package responses

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/jsonscan"
	"github.com/recallproxy/recall/wire"
)

// ErrFailed wraps the error of a response the upstream reports as failed.
var ErrFailed = fmt.Errorf("responses: the upstream response failed: %w", wire.ErrUpstream)

// ParseAnswer reads a non-streamed Response object: in one pass that
// validates it as it reads its members (scanResponse), or, for an object
// that pass cannot read, validated and then read by gjson.
func (Upstream) ParseAnswer(body []byte) (wire.Answer, error) {
	if m, ok := scanResponse(body); ok {
		return m.answer(nil)
	}
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
	var m responseMembers
	r.ForEach(func(k, v gjson.Result) bool {
		if p := m.slot(k.Str); p != nil {
			if !p.Exists() {
				*p = v
			}
		} else if v.Type != gjson.Null {
			m.settings = appendSetting(m.settings, k.Str, v.Raw)
		}
		return true
	})
	return m.answer(done)
}

// responseMembers are the members of a Response object an Answer is read
// from, each the first of duplicates, as gjson's lookup finds it, and
// the object's settings (appendSetting).
type responseMembers struct {
	status, errv, out, id, model, details, usage gjson.Result
	settings                                     []byte
	// counted is the usage as the pass read it (scanned), when it
	// could: then answer reads it from here, not from usage.
	counted wire.Usage
	scanned bool
}

// slot is where member name goes, nil for a setting.
func (m *responseMembers) slot(name string) *gjson.Result {
	switch name {
	case "status":
		return &m.status
	case "error":
		return &m.errv
	case "output":
		return &m.out
	case "id":
		return &m.id
	case "model":
		return &m.model
	case "incomplete_details":
		return &m.details
	case "usage":
		return &m.usage
	}
	return nil
}

// scanResponse reads body's members in one pass (jsonscan) that
// validates the object as it goes, the members it keeps parsed from
// their bytes alone, where gjson validated it whole and then walked it
// again, parsing every number and string on the way (two thirds of a
// non-streamed answer's read). ok is false for a body the pass cannot
// read so (invalid JSON, not an object, a member name with an escape, a
// value nested past maxEventDepth): parseResponse reads it.
func scanResponse(body []byte) (m responseMembers, ok bool) {
	s := jsonscan.Scanner{B: body}
	if m, ok = scanResponseAt(&s); ok {
		s.Space()
		ok = s.I == len(s.B)
	}
	return m, ok
}

// scanResponseAt is scanResponse for the object at s.I, which it
// consumes.
func scanResponseAt(s *jsonscan.Scanner) (m responseMembers, ok bool) {
	ok = s.Object(func(name []byte) bool {
		at := s.I
		if string(name) == "usage" && !m.scanned && !m.usage.Exists() {
			if m.counted, m.scanned = scanUsage(s); m.scanned {
				return true
			}
			s.I = at // gjson's read, as any other member
		}
		kind, ok := s.Value(maxEventDepth)
		if !ok {
			return false
		}
		raw := bytesString(s.B[at:s.I])
		if p := m.slot(bytesString(name)); p != nil {
			if !p.Exists() {
				*p = gjson.Parse(raw)
			}
		} else if kind != jsonscan.KindNull {
			m.settings = appendSetting(m.settings, bytesString(name), raw)
		}
		return true
	})
	return m, ok
}

// answer is the Answer of the Response object whose members are m (see
// parseResponse).
func (m *responseMembers) answer(done []gjson.Result) (wire.Answer, error) {
	status, errv, out, id, model, details, usage, settings := m.status, m.errv, m.out, m.id, m.model, m.details, m.usage, m.settings
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
		a.Hashed = append(a.Hashed, wire.Hashed{Raw: raw, Hash: Codec{}.decodedHash(raw, m)})
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
	if m.scanned {
		a.Usage = m.counted
	} else {
		a.Usage = readUsage(usage)
	}
	return a, nil
}

// usageNames are the usage members scanUsage reads; cachedName and
// reasonsName the one it reads of each details object.
var (
	usageNames  = []string{"input_tokens", "output_tokens", "input_tokens_details", "output_tokens_details"}
	cachedName  = []string{"cached_tokens"}
	reasonsName = []string{"reasoning_tokens"}
)

// scanUsage reads the usage object at s.I as readUsage reads it, in the
// pass that reads the Response (a gjson walk and a lookup a details
// object were a fifth of a non-streamed answer's read). ok is false, s.I
// anywhere, for a usage it leaves to readUsage: not an object, a count
// that is not a small whole number (a string, null, a fraction), a name
// twice.
func scanUsage(s *jsonscan.Scanner) (u wire.Usage, ok bool) {
	detail := func(names []string, n *int) bool {
		_, ok := s.Known(names, maxEventDepth, func(int) bool {
			var ok bool
			*n, ok = s.SmallUint()
			return ok
		})
		return ok
	}
	_, ok = s.Known(usageNames, maxEventDepth, func(i int) bool {
		var ok bool
		switch i {
		case 0:
			u.InputTokens, ok = s.SmallUint()
		case 1:
			u.OutputTokens, ok = s.SmallUint()
		case 2:
			ok = detail(cachedName, &u.CachedTokens)
		case 3:
			ok = detail(reasonsName, &u.ReasoningTokens)
		}
		return ok
	})
	return u, ok
}

// readUsage reads a Response's usage in one walk, each member as gjson's
// lookup of its path finds it: the first of duplicates, or of duplicate
// details objects the first that has it (four lookups were a fifth of an
// answer's read).
func readUsage(u gjson.Result) wire.Usage {
	var in, out, cached, reasoning gjson.Result
	u.ForEach(func(k, v gjson.Result) bool {
		var p *gjson.Result
		switch k.Str {
		case "input_tokens":
			p = &in
		case "output_tokens":
			p = &out
		case "input_tokens_details": // the first that has it, as a path's lookup
			if !cached.Exists() {
				cached = v.Get("cached_tokens")
			}
		case "output_tokens_details":
			if !reasoning.Exists() {
				reasoning = v.Get("reasoning_tokens")
			}
		}
		if p != nil && !p.Exists() {
			*p = v
		}
		return true
	})
	return wire.Usage{
		InputTokens:     int(in.Int()),
		OutputTokens:    int(out.Int()),
		CachedTokens:    int(cached.Int()),
		ReasoningTokens: int(reasoning.Int()),
	}
}
