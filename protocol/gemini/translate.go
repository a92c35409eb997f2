package gemini

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/jsonscan"
	"github.com/recallproxy/recall/protocol/internal/body"
	"github.com/recallproxy/recall/wire"
)

// ErrNotContent is returned (wrapped) by Decode for JSON that is not a
// Gemini content.
var ErrNotContent = errors.New("gemini: not a content")

// Decode reads a stored content into the canonical model: text, an image
// (inlineData as a data: URL, fileData by its URI) as Image, functionCall
// as a ToolCall (its args as the Arguments text), functionResponse as a
// ToolResult (see resultText), with ids as the package doc says. A
// thoughtSignature becomes an Opaque part of origin wire.Gemini,
// {"thoughtSignature":…}, right before the part that carried it; thought
// parts, other media and code execution parts are Opaque as they are.
// Only a gemini upstream reads them.
func (c Codec) Decode(raw []byte) (wire.Message, error) {
	if msg, ok := decodeTexts(raw); ok {
		return msg, nil
	}
	return c.decodeTree(raw)
}

// decodeTexts is Decode of the shape most stored contents have, a role
// and text parts alone ({"role":"model","parts":[{"text":"…"}]}), read
// in one strict pass (see scanTexts) where the tree's lookups walk each
// part's text once per member looked for (about five times slower). ok
// is false for anything else, which decodeTree reads. The texts alias
// raw unless escaped.
func decodeTexts(raw []byte) (msg wire.Message, ok bool) {
	msg.Role, ok = scanTexts(raw, func(text string) {
		if text != "" {
			msg.Parts = append(msg.Parts, wire.Part{Kind: wire.Text, Text: text})
		}
	})
	if !ok {
		return wire.Message{}, false
	}
	return msg, true
}

// scanTexts reads a content of a role and text parts alone in one strict
// pass (jsonscan), calling text with each part's text in order, and
// returns the content's canonical role. ok is false for anything else
// (another member, a part that is not {"text": string}, a role Decode
// refuses, invalid JSON); text may have been called by then. The texts
// alias raw unless escaped.
func scanTexts(raw []byte, text func(string)) (role string, ok bool) {
	s := jsonscan.Scanner{B: raw}
	var name []byte
	sawRole, sawParts := false, false
	ok = s.Object(func(member []byte) bool {
		switch {
		case string(member) == "role" && !sawRole:
			sawRole = true
			var ok bool
			name, ok = s.Plain()
			return ok
		case string(member) == "parts" && !sawParts:
			sawParts = true
			_, ok := s.Array(func(int) bool {
				members := 0
				return s.Object(func(member []byte) bool {
					if members++; members > 1 || string(member) != keyText {
						return false
					}
					t, ok := body.ScanString(&s)
					if ok {
						text(t)
					}
					return ok
				}) && members == 1 // {} is an opaque part
			})
			return ok
		}
		return false
	})
	s.Space()
	if !ok || !sawParts || s.I != len(raw) {
		return "", false
	}
	switch string(name) {
	case roleModel:
		return wire.RoleAssistant, true
	case roleSystem:
		return wire.RoleSystem, true
	case roleUser, "": // text parts alone: never a tool's results
		return wire.RoleUser, true
	}
	return "", false
}

// decodeTree is Decode of any content, read with gjson.
func (c Codec) decodeTree(raw []byte) (wire.Message, error) {
	role := c.Role(raw)
	if role == "" {
		return wire.Message{}, fmt.Errorf("gemini: decode: %w", ErrNotContent)
	}
	msg := wire.Message{Role: role}
	var calls, responses counter
	parse(raw).Get("parts").ForEach(func(_, p gjson.Result) bool {
		msg.Parts = appendPart(msg.Parts, p, &calls, &responses)
		return true
	})
	return msg, nil
}

// appendPart appends the canonical parts of part p.
func appendPart(parts []wire.Part, p gjson.Result, calls, responses *counter) []wire.Part {
	if sig := get(p, keySignature); sig.Type == gjson.String && sig.Str != "" && !get(p, keyThought).Bool() {
		raw := append([]byte(`{"thoughtSignature":`), sig.Raw...)
		parts = append(parts, wire.Part{Kind: wire.Opaque, Origin: wire.Gemini, Raw: append(raw, '}')})
	}
	if get(p, keyThought).Bool() {
		return append(parts, wire.Part{Kind: wire.Opaque, Origin: wire.Gemini, Raw: []byte(p.Raw)})
	}
	if t := p.Get(keyText); t.Type == gjson.String {
		if t.Str == "" {
			return parts
		}
		return append(parts, wire.Part{Kind: wire.Text, Text: t.Str})
	}
	if fn := get(p, keyFunctionCall); fn.IsObject() {
		args := strings.TrimSpace(fn.Get("args").Raw)
		if args == "" || args == "null" {
			args = "{}"
		}
		return append(parts, wire.Part{Kind: wire.ToolCall, CallID: partID(fn, calls), Name: fn.Get("name").Str, Arguments: args})
	}
	if fn := get(p, keyFunctionResponse); fn.IsObject() {
		_, text, isError := resultText(fn.Get("response"))
		return append(parts, wire.Part{Kind: wire.ToolResult, CallID: partID(fn, responses), Name: fn.Get("name").Str,
			Text: text, IsError: isError})
	}
	if d := get(p, keyInlineData); d.IsObject() {
		mt := get(d, "mimeType").Str
		if strings.HasPrefix(mt, "image/") {
			return append(parts, wire.Part{Kind: wire.Image, URL: "data:" + mt + ";base64," + d.Get("data").Str})
		}
		if mt != "" && !strings.HasPrefix(mt, "audio/") && !strings.HasPrefix(mt, "video/") {
			return append(parts, wire.Part{Kind: wire.File, URL: wire.DataURL(mt, d.Get("data").Str), Origin: wire.Gemini})
		}
	}
	if d := get(p, keyFileData); d.IsObject() {
		mt := get(d, "mimeType").Str
		if strings.HasPrefix(mt, "image/") {
			return append(parts, wire.Part{Kind: wire.Image, URL: get(d, "fileUri").Str})
		}
		if mt != "" && !strings.HasPrefix(mt, "audio/") && !strings.HasPrefix(mt, "video/") {
			return append(parts, wire.Part{Kind: wire.File, URL: get(d, "fileUri").Str, MediaType: mt, Origin: wire.Gemini})
		}
	}
	return append(parts, wire.Part{Kind: wire.Opaque, Origin: wire.Gemini, Raw: []byte(p.Raw)})
}

// Encode writes canonical messages as Gemini contents, shaped as the API
// requires turns: consecutive messages of one API role are one content
// (so a run of canonical tool messages becomes one user content of
// functionResponse parts, right after the model's calls), functionResponse
// parts come first in a user content, and a content left with no part is
// not written. A system or developer message is written as an
// instruction, {"role":"system","parts":[{"text":…}]}, which AppendBody
// moves into systemInstruction.
//
// A ToolResult's functionResponse is named after the call with its id
// among msgs (Gemini requires a name), and carries {"output": text}, or
// {"error": text} for a failed tool. Ids are written unless they are the
// synthetic id of their place. Refusals are sent as text; empty texts and
// Opaque parts of other protocols are left out; a thoughtSignature part
// is set on the part that follows it.
func (Codec) Encode(dst [][]byte, msgs []wire.Message) ([][]byte, error) {
	names := map[string]string{} // call id: function name
	var (
		calls, results counter // of the content being built
		sig            []byte  // a signature for the next part
	)
	return body.Turns{
		Package:     "gemini",
		Assistant:   roleModel,
		Instruction: appendInstruction,
		Member:      "parts",
		End:         func() { calls, results, sig = counter{}, counter{}, nil },
		Part: func(r string, p wire.Part) ([]byte, bool, error) {
			if p.Kind == wire.Opaque && p.Origin == wire.Gemini {
				if s, ok := signature(p.Raw); ok {
					sig = s
					return nil, false, nil
				}
			}
			if p.Kind == wire.ToolCall {
				names[p.CallID] = p.Name
			}
			var b []byte
			if p.Kind == wire.File {
				var err error
				if b, err = appendFile(nil, p); err != nil {
					return nil, false, err
				}
			} else {
				b = encodePart(nil, r, p, names, &calls, &results)
			}
			if b != nil && sig != nil {
				b = append(b[:len(b)-1], `,"thoughtSignature":`...)
				b = append(append(b, sig...), '}')
				sig = nil
			}
			return b, p.Kind == wire.ToolResult, nil
		},
	}.Encode(dst, msgs)
}

// signature returns the signature of an Opaque part that is only a
// thoughtSignature (as Decode writes one).
func signature(raw []byte) ([]byte, bool) {
	v := parse(raw)
	s := v.Get(keySignature)
	if s.Type != gjson.String {
		return nil, false
	}
	n := 0
	v.ForEach(func(_, _ gjson.Result) bool { n++; return true })
	return []byte(s.Raw), n == 1
}

// encodePart appends part p as a part of a content of API role r, or
// returns nil when it has none. names maps call ids to function names;
// calls and results count the parts of each name in the content.
func encodePart(b []byte, r string, p wire.Part, names map[string]string, calls, results *counter) []byte {
	switch p.Kind {
	case wire.Text, wire.Refusal:
		if p.Text == "" {
			return nil
		}
		b = append(b, `{"text":`...)
		b = gjson.AppendJSONString(b, p.Text)
		return append(b, '}')
	case wire.Image:
		if p.URL == "" {
			return nil
		}
		return appendImage(b, p.URL)
	case wire.ToolCall:
		if r != roleModel {
			return nil
		}
		b = append(b, `{"functionCall":{"name":`...)
		b = gjson.AppendJSONString(b, p.Name)
		b = append(b, `,"args":`...)
		b = append(b, body.ObjectArgs(p.Arguments)...)
		b = appendID(b, p.CallID, p.Name, calls.next(p.Name))
		return append(b, "}}"...)
	case wire.ToolResult:
		if r != roleUser {
			return nil
		}
		name := p.Name
		if n, ok := names[p.CallID]; ok && n != "" {
			name = n
		}
		b = append(b, `{"functionResponse":{"name":`...)
		b = gjson.AppendJSONString(b, name)
		if p.IsError {
			b = append(b, `,"response":{"error":`...)
		} else {
			b = append(b, `,"response":{"output":`...)
		}
		b = gjson.AppendJSONString(b, p.Text)
		b = append(b, '}')
		b = appendID(b, p.CallID, name, results.next(name))
		return append(b, "}}"...)
	case wire.Opaque:
		if p.Origin != wire.Gemini || !gjson.ValidBytes(p.Raw) || !parse(p.Raw).IsObject() {
			return nil
		}
		return append(b, p.Raw...)
	}
	return nil
}

// appendID appends the "id" member of the k-th call or response named
// name, unless id is empty or the synthetic id of its place.
func appendID(b []byte, id, name string, k int) []byte {
	if id == "" || id == SyntheticID(name, k) {
		return b
	}
	b = append(b, `,"id":`...)
	return gjson.AppendJSONString(b, id)
}

// appendFile appends a File as a part: its data as inlineData, a URL of
// known media type as fileData. Gemini reads no other provider's file id,
// nor a file of unknown media type: those are a *wire.FileError.
func appendFile(b []byte, p wire.Part) ([]byte, error) {
	refuse := func(reason string) ([]byte, error) {
		return nil, &wire.FileError{Target: wire.Gemini, Reason: reason}
	}
	if p.FileID != "" {
		return refuse("The upstream speaks Gemini, which cannot read file " + strconv.Quote(p.FileID) + ": it names a file another provider holds. Send the file's data instead.")
	}
	mt, data, ok := p.FileData()
	if ok {
		if mt == "" {
			return refuse("The file " + strconv.Quote(p.Name) + " has no media type Gemini reads: name it (data:<type>;base64,...).")
		}
		b = append(b, `{"inlineData":{"mimeType":`...)
		b = gjson.AppendJSONString(b, mt)
		b = append(b, `,"data":`...)
		b = gjson.AppendJSONString(b, data)
		return append(b, "}}"...), nil
	}
	mt = p.MediaType
	if mt == "" {
		mt = wire.MediaTypeOf(p.Name)
	}
	if mt == "" {
		return refuse("The file at " + strconv.Quote(p.URL) + " has no media type Gemini reads: send its data instead.")
	}
	b = append(b, `{"fileData":{"mimeType":`...)
	b = gjson.AppendJSONString(b, mt)
	b = append(b, `,"fileUri":`...)
	b = gjson.AppendJSONString(b, p.URL)
	return append(b, "}}"...), nil
}

// appendImage appends an image part: a data: URL as inlineData, any
// other URL as fileData.
func appendImage(b []byte, url string) []byte {
	if rest, ok := strings.CutPrefix(url, "data:"); ok {
		if mediaType, data, ok := strings.Cut(rest, ";base64,"); ok {
			b = append(b, `{"inlineData":{"mimeType":`...)
			b = gjson.AppendJSONString(b, mediaType)
			b = append(b, `,"data":`...)
			b = gjson.AppendJSONString(b, data)
			return append(b, "}}"...)
		}
	}
	mt := "image/jpeg"
	switch {
	case strings.HasSuffix(url, ".png"):
		mt = "image/png"
	case strings.HasSuffix(url, ".webp"):
		mt = "image/webp"
	case strings.HasSuffix(url, ".gif"):
		mt = "image/gif"
	}
	b = append(b, `{"fileData":{"mimeType":"`+mt+`","fileUri":`...)
	b = gjson.AppendJSONString(b, url)
	return append(b, "}}"...)
}

// appendInstruction appends m as an instruction: its text parts joined by
// newlines, as one text part.
func appendInstruction(b []byte, m wire.Message) []byte {
	b = append(b, `{"role":"system","parts":[{"text":`...)
	b = gjson.AppendJSONString(b, body.Texts(m))
	return append(b, "}]}"...)
}

// Text implements wire.Codec: the content's words as readers of stored
// messages see them (each text part, each function call's name and
// arguments, each function response's result), one piece a line. Thought
// parts and signatures add nothing.
func (c Codec) Text(dst, raw []byte) []byte {
	m, err := c.Decode(raw)
	if err != nil {
		return dst
	}
	return wire.AppendText(dst, m)
}
