package responses

import (
	"errors"
	"strconv"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/recallproxy/recall/internal/jsonscan"
	"github.com/recallproxy/recall/protocol/internal/body"
	"github.com/recallproxy/recall/wire"
)

// Codec is the wire.Codec of the Responses API: it reads and edits one
// stored item. Its zero value is ready to use.
//
// Canonical roles: a message keeps its role (user, system, developer,
// assistant); function_call, reasoning and every other item the model
// produces (web_search_call, custom_tool_call, ...) are assistant; an item
// that answers a call (type ending in "_output": function_call_output,
// custom_tool_call_output, ...) is tool.
//
// Tool calls are read by call_id: an item whose type ends in "_call" and
// that carries a call_id asks for a result (local_shell_call aside, whose
// output answers it by id and is kept as it is); an item whose type ends
// in "_call_output" answers the call_id it names.
type Codec struct{}

// Protocol returns wire.Responses.
func (Codec) Protocol() wire.Protocol { return wire.Responses }

// Name returns "responses".
func (Codec) Name() string { return "responses" }

// Role returns the item's canonical role, "" if raw is not an item.
func (Codec) Role(raw []byte) string { return role(parse(raw)) }

// Calls appends the call_id the item asks a result for, if any.
func (Codec) Calls(dst []string, raw []byte) []string {
	return appendCallID(dst, raw, isCall)
}

// Results appends the call_id the item answers, if any.
func (Codec) Results(dst []string, raw []byte) []string {
	return appendCallID(dst, raw, isOutput)
}

// appendCallID appends the call_id of the item raw, if any, when is
// takes its type.
func appendCallID(dst []string, raw []byte, is func(typ string) bool) []string {
	if jsonscan.Lacks(raw, callIDTail) { // most items: skip the parse
		return dst
	}
	item := parse(raw)
	if is(itemType(item)) {
		if id := item.Get("call_id"); id.Type == gjson.String && id.Str != "" {
			dst = append(dst, strings.Clone(id.Str))
		}
	}
	return dst
}

// callIDTail ends the key every call and call output names its call by,
// as an item spells it unescaped (see jsonscan.Lacks).
var callIDTail = []byte(`_id"`)

// KeepCalls returns raw when it is neither a call nor a call's output, or
// keep accepts its call_id; one keep refuses leaves nothing to send (an
// item holds one call or one output).
func (Codec) KeepCalls(raw []byte, keep func(id string) bool) ([]byte, bool) {
	item := parse(raw)
	if t := itemType(item); !isCall(t) && !isOutput(t) {
		return raw, true
	}
	id := item.Get("call_id")
	if id.Type != gjson.String || id.Str == "" || keep(id.Str) {
		return raw, true
	}
	return nil, false
}

// Itemized implements wire.Codec: each call of an answer is an item of its
// own.
func (Codec) Itemized() bool { return true }

// CutResults cuts the output of an item that answers a call: a string
// output, or the text of each input_text part of an output given as parts.
func (Codec) CutResults(raw []byte, max int, marker func(kept, total int) string) ([]byte, bool) {
	item := parse(raw)
	if !isOutput(itemType(item)) {
		return raw, false
	}
	out := item.Get("output")
	if out.Type == gjson.String {
		s, cut := body.CutText(out.Str, max, marker)
		if !cut {
			return raw, false
		}
		b, err := sjson.SetBytes(clone(raw), "output", s)
		return b, err == nil
	}
	if !out.IsArray() {
		return raw, false
	}
	b, cutAny := raw, false
	for i, p := range out.Array() {
		if p.Get("type").Str != partInputText {
			continue
		}
		s, cut := body.CutText(p.Get("text").Str, max, marker)
		if !cut {
			continue
		}
		nb, err := sjson.SetBytes(clone(b), "output."+itoa(i)+".text", s)
		if err != nil {
			return raw, false
		}
		b, cutAny = nb, true
	}
	return b, cutAny
}

// WithoutCacheHints returns raw: Responses items carry no cache hints
// (prompt caching is keyed per request, by prompt_cache_key).
func (Codec) WithoutCacheHints(raw []byte) []byte { return raw }

// errNotItem is the error of Decode for JSON that is not an item.
var errNotItem = errors.New("responses: not an input or output item")

// Decode reads an item into the canonical model: a message's text, images
// and refusals; a function_call as a ToolCall; a function_call_output as
// a ToolResult; an input_file part as a File; anything else (reasoning,
// hosted tool calls) as one Opaque part holding the item, which only a
// Responses upstream reads.
func (Codec) Decode(raw []byte) (wire.Message, error) {
	var stack [8]body.Member
	if ms, ok := body.StringMembers(stack[:0], raw); ok {
		if m, ok := decodeStrings(ms); ok {
			return m, nil
		}
	}
	if m, ok := decodeParts(raw); ok {
		return m, nil
	}
	return decodeTree(raw)
}

// decodeStrings is Decode of an item whose members are all strings (see
// body.StringMembers), read in one pass: a message of text, a
// function_call, a function_call_output. ok is false for any other item,
// left to decodeTree.
func decodeStrings(ms []body.Member) (m wire.Message, ok bool) {
	get := func(name string) string { v, _ := body.Lookup(ms, name); return v }
	t, typed := body.Lookup(ms, "type")
	if !typed {
		if _, ok := body.Lookup(ms, "role"); !ok {
			return m, false
		}
		t = typeMessage // an easy input message
	}
	switch t {
	case typeMessage:
		if m.Role = messageRole(get("role")); m.Role == "" {
			return m, false
		}
		if text, ok := body.Lookup(ms, "content"); ok {
			m.Parts = append(m.Parts, wire.Part{Kind: wire.Text, Text: text})
		}
	case typeFunctionCall:
		m.Role = wire.RoleAssistant
		m.Parts = append(m.Parts, wire.Part{Kind: wire.ToolCall, CallID: get("call_id"), Name: get("name"), Arguments: get("arguments")})
	case typeFunctionCallOutput:
		m.Role = wire.RoleTool
		m.Parts = append(m.Parts, wire.Part{Kind: wire.ToolResult, CallID: get("call_id"), Text: get("output")})
	default:
		return m, false
	}
	return m, true
}

// decodeTree is Decode of any item, read with gjson.
func decodeTree(raw []byte) (wire.Message, error) {
	item := parse(raw)
	t := itemType(item)
	r := roleOf(item, t)
	if r == "" {
		return wire.Message{}, errNotItem
	}
	m := wire.Message{Role: r}
	switch t {
	case typeMessage:
		c := item.Get("content")
		if c.Type == gjson.String {
			m.Parts = append(m.Parts, wire.Part{Kind: wire.Text, Text: c.Str})
			break
		}
		for _, p := range c.Array() {
			switch p.Get("type").Str {
			case partInputText, partOutputText:
				m.Parts = append(m.Parts, wire.Part{Kind: wire.Text, Text: p.Get("text").Str})
			case partRefusal:
				m.Parts = append(m.Parts, wire.Part{Kind: wire.Refusal, Text: p.Get("refusal").Str})
			case partInputImage:
				if u := p.Get("image_url"); u.Type == gjson.String {
					m.Parts = append(m.Parts, wire.Part{Kind: wire.Image, URL: u.Str})
					break
				}
				m.Parts = append(m.Parts, wire.Part{Kind: wire.Opaque, Origin: wire.Responses, Raw: clone([]byte(p.Raw))})
			case partInputFile:
				m.Parts = append(m.Parts, decodeFile(p))
			default:
				m.Parts = append(m.Parts, wire.Part{Kind: wire.Opaque, Origin: wire.Responses, Raw: clone([]byte(p.Raw))})
			}
		}
	case typeFunctionCall:
		m.Parts = append(m.Parts, wire.Part{Kind: wire.ToolCall, CallID: item.Get("call_id").Str,
			Name: item.Get("name").Str, Arguments: item.Get("arguments").Str})
	case typeFunctionCallOutput:
		m.Parts = append(m.Parts, wire.Part{Kind: wire.ToolResult, CallID: item.Get("call_id").Str,
			Text: outputText(item.Get("output"))})
	default:
		m.Parts = append(m.Parts, wire.Part{Kind: wire.Opaque, Origin: wire.Responses, Raw: clone(raw)})
	}
	return m, nil
}

// decodeFile reads an input_file part: file_data (a data: URL, or bare
// base64 whose media type the filename gives), file_url or file_id.
func decodeFile(p gjson.Result) wire.Part {
	f := wire.Part{Kind: wire.File, Name: p.Get("filename").Str, Origin: wire.Responses}
	switch {
	case p.Get("file_data").Str != "":
		f.URL = p.Get("file_data").Str
		if !strings.HasPrefix(f.URL, "data:") {
			f.URL = wire.DataURL(wire.MediaTypeOf(f.Name), f.URL)
		}
	case p.Get("file_url").Str != "":
		f.URL = p.Get("file_url").Str
		f.MediaType = wire.MediaTypeOf(f.Name)
	default:
		f.FileID = p.Get("file_id").Str
	}
	return f
}

// outputText is a function_call_output's output as text: the string, or
// its text parts joined with newlines.
func outputText(out gjson.Result) string {
	if out.Type == gjson.String {
		return out.Str
	}
	var b strings.Builder
	for _, p := range out.Array() {
		if p.Get("type").Str == partInputText {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(p.Get("text").Str)
		}
	}
	return b.String()
}

// Joins is wire.Separable's: Encode writes each message's items apart from
// its neighbours'.
func (Codec) Joins(prev, next string) bool { return false }

// Encode writes canonical messages as items: a message item per run of
// text, image and refusal parts (output_text and refusal parts for the
// assistant, input_text and input_image for the others), a function_call
// per ToolCall, a function_call_output per ToolResult, and the Raw item of
// each Opaque part that came from this protocol; other protocols' opaque
// parts are left out.
func (Codec) Encode(dst [][]byte, msgs []wire.Message) ([][]byte, error) {
	for _, m := range msgs {
		r := m.Role
		if r == wire.RoleTool {
			r = wire.RoleUser // text beside tool results reads as the user's
		}
		var content []byte // the open message item's parts
		flush := func() {
			if content != nil {
				dst = append(dst, appendMessageItem(nil, r, content))
				content = nil
			}
		}
		for _, p := range m.Parts {
			switch p.Kind {
			case wire.Text, wire.Image, wire.Refusal, wire.File:
				if p.Kind == wire.File && p.FileID != "" && !wire.OpenAIFile(p) {
					return nil, &wire.FileError{Target: wire.Responses,
						Reason: "The upstream speaks the Responses API, which cannot read file " + strconv.Quote(p.FileID) + ": it names a file another provider holds. Send the file's data instead."}
				}
				if content == nil {
					content = []byte{'['}
				} else {
					content = append(content, ',')
				}
				content = appendPart(content, r, p)
			case wire.ToolCall:
				flush()
				dst = append(dst, appendFunctionCall(nil, "", p.CallID, p.Name, p.Arguments))
			case wire.ToolResult:
				flush()
				b := gjson.AppendJSONString([]byte(`{"type":"function_call_output","call_id":`), p.CallID)
				b = gjson.AppendJSONString(append(b, `,"output":`...), p.Text)
				dst = append(dst, append(b, '}'))
			case wire.Opaque:
				if p.Origin == wire.Responses && gjson.ValidBytes(p.Raw) {
					if role(parse(p.Raw)) != "" {
						flush()
						dst = append(dst, clone(p.Raw))
					} else if parse(p.Raw).IsObject() { // a content part of a message
						if content == nil {
							content = []byte{'['}
						} else {
							content = append(content, ',')
						}
						content = append(content, p.Raw...)
					}
				}
			}
		}
		flush()
	}
	return dst, nil
}

// appendMessageItem appends a message item with the given parts array
// (without its closing bracket).
func appendMessageItem(b []byte, role string, parts []byte) []byte {
	b = append(b, `{"type":"message","role":`...)
	b = gjson.AppendJSONString(b, role)
	b = append(b, `,"content":`...)
	b = append(b, parts...)
	return append(b, "]}"...)
}

// appendPart appends a text, image or refusal part for role.
func appendPart(b []byte, role string, p wire.Part) []byte {
	switch {
	case p.Kind == wire.File:
		return appendFile(b, p)
	case p.Kind == wire.Image:
		b = append(b, `{"type":"input_image","image_url":`...)
		b = gjson.AppendJSONString(b, p.URL)
		return append(b, `,"detail":"auto"}`...)
	case p.Kind == wire.Refusal && role == wire.RoleAssistant:
		b = append(b, `{"type":"refusal","refusal":`...)
		return append(gjson.AppendJSONString(b, p.Text), '}')
	case role == wire.RoleAssistant:
		b = append(b, `{"type":"output_text","text":`...)
		return append(gjson.AppendJSONString(b, p.Text), `,"annotations":[]}`...)
	}
	b = append(b, `{"type":"input_text","text":`...)
	return append(gjson.AppendJSONString(b, p.Text), '}')
}

// appendFile appends an input_file part: file_id, file_data (a data:
// URL, with the filename the API asks for beside it) or file_url.
func appendFile(b []byte, p wire.Part) []byte {
	b = append(b, `{"type":"input_file"`...)
	switch {
	case p.FileID != "":
		b = gjson.AppendJSONString(append(b, `,"file_id":`...), p.FileID)
	case strings.HasPrefix(p.URL, "data:"):
		name := p.Name
		if name == "" {
			name = "file"
		}
		b = gjson.AppendJSONString(append(b, `,"filename":`...), name)
		b = gjson.AppendJSONString(append(b, `,"file_data":`...), p.URL)
		return append(b, '}')
	default:
		b = gjson.AppendJSONString(append(b, `,"file_url":`...), p.URL)
	}
	if p.Name != "" {
		b = gjson.AppendJSONString(append(b, `,"filename":`...), p.Name)
	}
	return append(b, '}')
}

// appendFunctionCall appends a function_call item (id left out when "").
func appendFunctionCall(b []byte, id, callID, name, args string) []byte {
	b = append(b, `{"type":"function_call"`...)
	if id != "" {
		b = gjson.AppendJSONString(append(b, `,"id":`...), id)
	}
	b = gjson.AppendJSONString(append(b, `,"call_id":`...), callID)
	b = gjson.AppendJSONString(append(b, `,"name":`...), name)
	b = gjson.AppendJSONString(append(b, `,"arguments":`...), args)
	return append(b, '}')
}

// itemType returns an item's type: its "type", or "message" for an easy
// input message (a "role" and no "type"); "" when item is neither.
func itemType(item gjson.Result) string {
	if !item.IsObject() {
		return ""
	}
	t := item.Get("type")
	if t.Type == gjson.String {
		return t.Str
	}
	if !t.Exists() && item.Get("role").Type == gjson.String {
		return typeMessage
	}
	return ""
}

// isCall reports whether an item of type t asks the client for a result
// by its call_id.
func isCall(t string) bool { return strings.HasSuffix(t, "_call") && t != "local_shell_call" }

// isOutput reports whether an item of type t answers a call by call_id.
func isOutput(t string) bool { return strings.HasSuffix(t, "_call_output") }

// role is the canonical role of item ("" if it is not an item).
func role(item gjson.Result) string { return roleOf(item, itemType(item)) }

// roleOf is role for an item of type t (itemType's answer).
func roleOf(item gjson.Result, t string) string {
	switch {
	case t == "" || t == typeItemReference:
		return ""
	case t == typeMessage:
		return messageRole(item.Get("role").Str)
	case strings.HasSuffix(t, "_output"):
		return wire.RoleTool
	}
	return wire.RoleAssistant
}

// parse parses raw without copying it: the results alias raw.
func parse(raw []byte) gjson.Result { return gjson.Parse(bytesString(raw)) }

// bytesString returns a string sharing b's memory; b must not change
// while it is in use.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

// quote returns s as a JSON string literal.
func quote(s string) []byte { return gjson.AppendJSONString(nil, s) }

// Text implements wire.Codec: the item's text as Decode reads it (a
// message's input_text, output_text and refusal parts, a function call's
// name and arguments, a function call output's text), one piece a line.
// Reasoning and other items only the Responses API reads add nothing.
//
// A message item of text (see decodeParts) is read in one pass; any
// other item as textTree reads it.
func (c Codec) Text(dst, raw []byte) []byte {
	dst, ok := body.AppendTexts(scanTextMessage, dst, raw)
	if ok {
		return dst
	}
	return c.textTree(dst, raw)
}

// textTree is Text through gjson's reads of the item, or its decoding.
func (c Codec) textTree(dst, raw []byte) []byte {
	if item := parse(raw); itemType(item) == typeMessage {
		return appendMessageText(dst, item)
	}
	m, err := c.Decode(raw)
	if err != nil {
		return dst
	}
	return wire.AppendText(dst, m)
}

// appendMessageText is Text of a message item, read as Decode reads it
// without building its parts: the text of a string content, of each
// input_text and output_text part, and of each refusal.
func appendMessageText(dst []byte, item gjson.Result) []byte {
	if roleOf(item, typeMessage) == "" {
		return dst // not an item: Decode refuses it
	}
	c := item.Get("content")
	if c.Type == gjson.String {
		return wire.AppendLine(dst, c.Str)
	}
	for _, p := range c.Array() {
		switch p.Get("type").Str {
		case partInputText, partOutputText:
			dst = wire.AppendLine(dst, p.Get("text").Str)
		case partRefusal:
			dst = wire.AppendLine(dst, p.Get("refusal").Str)
		}
	}
	return dst
}

var _ wire.Thinking = Codec{}

// WithoutThinking implements wire.Thinking: a reasoning item is what a
// client may leave out of the items it resends (one that keeps no state
// may drop them); every other item is resent as it is.
func (Codec) WithoutThinking(raw []byte) (hash uint64, empty, ok bool) {
	if itemType(parse(raw)) != typeReasoning {
		return 0, false, false
	}
	return 0, true, true
}

// messageRole is the canonical role of a message item whose "role" is r,
// "" for a role a message item cannot have. It answers wire's constants,
// never r: a role kept from an item's bytes would keep them alive, and
// every comparison with it would read them (a role compared with the
// constant of its own length is compared byte by byte unless both are
// the same string), a memory load for each message of a window that
// curation and repair scan on every request.
func messageRole(r string) string {
	switch r {
	case wire.RoleUser:
		return wire.RoleUser
	case wire.RoleSystem:
		return wire.RoleSystem
	case wire.RoleDeveloper:
		return wire.RoleDeveloper
	case wire.RoleAssistant:
		return wire.RoleAssistant
	}
	return ""
}
