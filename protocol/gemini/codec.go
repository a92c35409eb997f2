package gemini

import (
	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/protocol/internal/body"
	"github.com/recallproxy/recall/wire"
)

// Codec reads and edits stored Gemini contents. The zero value is ready
// to use; it is registered for wire.Gemini.
type Codec struct{}

var _ wire.Codec = Codec{}

// Protocol returns wire.Gemini.
func (Codec) Protocol() wire.Protocol { return wire.Gemini }

// Name returns "gemini".
func (Codec) Name() string { return "gemini" }

// Role returns the canonical role: "assistant" for a model content,
// "tool" for a user content whose parts are all functionResponse (Gemini
// sends results as user contents), "user" for any other user content (the
// API reads a missing role as user), and "system" for an instruction. It
// returns "" for anything that is not an object with an array of parts.
func (Codec) Role(raw []byte) string {
	m := parse(raw)
	if !m.IsObject() {
		return ""
	}
	parts := m.Get("parts")
	if !parts.IsArray() {
		return ""
	}
	switch role := m.Get("role"); role.Str {
	case roleModel:
		return wire.RoleAssistant
	case roleSystem:
		return wire.RoleSystem
	case roleUser, "":
		if role.Exists() && role.Type != gjson.String {
			return ""
		}
		if mayHold(raw, keyFunctionResponse) && onlyResponses(parts) {
			return wire.RoleTool
		}
		return wire.RoleUser
	}
	return ""
}

// onlyResponses reports whether parts is non-empty and every part is a
// functionResponse.
func onlyResponses(parts gjson.Result) bool {
	n, all := 0, true
	parts.ForEach(func(_, p gjson.Result) bool {
		n++
		all = get(p, keyFunctionResponse).IsObject()
		return all
	})
	return n > 0 && all
}

// Calls appends the ids of a model content's functionCall parts (see the
// package doc for calls without one).
func (Codec) Calls(dst []string, raw []byte) []string {
	if !mayHold(raw, keyFunctionCall) {
		return dst // the curator asks of every content on every request
	}
	return appendIDs(dst, parse(raw), true)
}

// Results appends the ids of a user content's functionResponse parts.
func (Codec) Results(dst []string, raw []byte) []string {
	if !mayHold(raw, keyFunctionResponse) {
		return dst
	}
	return appendIDs(dst, parse(raw), false)
}

func appendIDs(dst []string, m gjson.Result, calls bool) []string {
	role, key := m.Get("role").Str, keyFunctionResponse
	if calls {
		key = keyFunctionCall
	}
	if calls != (role == roleModel) || !calls && role != roleUser && role != "" {
		return dst
	}
	var c counter
	m.Get("parts").ForEach(func(_, p gjson.Result) bool {
		if fn := get(p, key); fn.IsObject() {
			dst = append(dst, partID(fn, &c))
		}
		return true
	})
	return dst
}

// Itemized implements wire.Codec: an answer's calls are one content.
func (Codec) Itemized() bool { return false }

// KeepCalls returns the content without the functionCall and
// functionResponse parts whose ids keep rejects, raw itself when it keeps
// them all. It reports false when nothing worth sending is left: no part,
// or only thoughts.
func (Codec) KeepCalls(raw []byte, keep func(id string) bool) ([]byte, bool) {
	m := parse(raw)
	parts := m.Get("parts")
	var kept []string
	var calls, responses counter
	dropped, substance := false, false
	parts.ForEach(func(_, p gjson.Result) bool {
		if fn := get(p, keyFunctionCall); fn.IsObject() && !keep(partID(fn, &calls)) {
			dropped = true
			return true
		}
		if fn := get(p, keyFunctionResponse); fn.IsObject() && !keep(partID(fn, &responses)) {
			dropped = true
			return true
		}
		kept = append(kept, p.Raw)
		substance = substance || !get(p, keyThought).Bool() && !emptyText(p)
		return true
	})
	if !dropped {
		return raw, substance
	}
	return splice(raw, parts, body.JoinArray(kept)), substance
}

// emptyText reports whether p is a text part with no text (one that only
// carries a signature).
func emptyText(p gjson.Result) bool {
	t := p.Get(keyText)
	return t.Exists() && t.Str == "" && !get(p, keyFunctionCall).Exists() && !get(p, keyFunctionResponse).Exists() &&
		!get(p, keyInlineData).Exists() && !get(p, keyFileData).Exists()
}

// CutResults cuts each functionResponse's text (see resultText) to max
// runes, the marker on a line of its own after the kept text: a response
// whose one member is a string keeps that member, cut; any other
// response becomes {"output": its JSON, cut}. It returns raw itself and
// false when nothing was longer than max.
func (Codec) CutResults(raw []byte, max int, marker func(kept, total int) string) ([]byte, bool) {
	m := parse(raw)
	if r := m.Get("role").Str; r != roleUser && r != "" {
		return raw, false
	}
	parts := m.Get("parts")
	var out []string
	cut := false
	parts.ForEach(func(_, p gjson.Result) bool {
		fn := get(p, keyFunctionResponse)
		if !fn.IsObject() {
			out = append(out, p.Raw)
			return true
		}
		resp := fn.Get("response")
		key, text, _ := resultText(resp)
		short, ok := body.CutText(text, max, marker)
		if !ok {
			out = append(out, p.Raw)
			return true
		}
		cut = true
		if key == "" {
			key = "output"
		}
		repl := `{` + string(gjson.AppendJSONString(nil, key)) + `:` + string(gjson.AppendJSONString(nil, short)) + `}`
		if resp.Exists() {
			fnRaw := body.Replace(fn.Raw, fn.Index, resp, repl)
			out = append(out, body.Replace(p.Raw, p.Index, fn, fnRaw))
		} else {
			out = append(out, p.Raw)
		}
		return true
	})
	if !cut {
		return raw, false
	}
	return splice(raw, parts, body.JoinArray(out)), true
}

// resultText is a functionResponse's response as text: the value of its
// one member when that is a string (the SDKs write {"output": …} or
// {"result": …}, and {"error": …} for a failure), else its JSON. key is
// that member's name ("" for JSON), isError whether it is "error".
func resultText(resp gjson.Result) (key, text string, isError bool) {
	if !resp.IsObject() {
		return "", resp.Raw, false
	}
	n := 0
	var k, v gjson.Result
	resp.ForEach(func(kk, vv gjson.Result) bool {
		n++
		k, v = kk, vv
		return n < 2
	})
	if n == 1 && v.Type == gjson.String {
		return k.Str, v.Str, k.Str == "error"
	}
	return "", resp.Raw, n == 1 && k.Str == "error"
}

// WithoutCacheHints returns raw: Gemini's contents carry no cache hints
// (its caching is cachedContents, named by the request).
func (Codec) WithoutCacheHints(raw []byte) []byte { return raw }

// splice returns a copy of raw with v (a value parsed from raw) replaced
// by repl.
func splice(raw []byte, v gjson.Result, repl string) []byte {
	return []byte(body.Replace(str(raw), 0, v, repl))
}
