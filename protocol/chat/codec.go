package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/recallproxy/recall/protocol/internal/body"
	"github.com/recallproxy/recall/wire"
)

// init registers the protocol, and the kinds of upstream that speak it:
// openai (Responses requests go there as they came, the rest as chat
// completions) and chat (everything as chat completions).
func init() {
	wire.Register(Codec{})
	wire.RegisterUpstream(wire.ChatCompletions, Protocol{},
		wire.UpstreamKind{Name: wire.UpstreamOpenAI, AsCame: []wire.Protocol{wire.ChatCompletions, wire.Responses}, Sends: wire.ChatCompletions},
		wire.UpstreamKind{Name: wire.UpstreamChat, Sends: wire.ChatCompletions})
}

// Codec is the wire.Codec of stored chat-completions messages: one message
// of a request's "messages" array, or an answer's choices[0].message.
type Codec struct{}

var _ wire.Codec = Codec{}

// Protocol implements wire.Codec.
func (Codec) Protocol() wire.Protocol { return wire.ChatCompletions }

// Name implements wire.Codec.
func (Codec) Name() string { return "chat.completions" }

// Role implements wire.Codec: chat completions' roles are the canonical
// ones (the legacy "function" role answers a call like "tool").
func (Codec) Role(raw []byte) string { return roleOf(gjson.Get(bytesString(raw), "role").String()) }

// roleOf returns a role value as a role constant (nothing of the value
// kept), or "" if it is none.
func roleOf(role string) string {
	switch role {
	case RoleSystem:
		return RoleSystem
	case RoleDeveloper:
		return RoleDeveloper
	case RoleUser:
		return RoleUser
	case RoleAssistant:
		return RoleAssistant
	case RoleTool, "function":
		return RoleTool
	}
	return ""
}

// toolCallsKey is the tail of the "tool_calls" key: searching for it starts
// from '_', rare in text, where the whole key would start from '"', on
// which JSON trips the search at every string.
var toolCallsKey = []byte(`_calls"`)

// callIDKey is the tail of the "tool_call_id" key.
var callIDKey = []byte(`_call_id"`)

// Calls implements wire.Codec. The ids alias raw.
func (Codec) Calls(dst []string, raw []byte) []string {
	if !bytes.Contains(raw, toolCallsKey) { // most messages: skip the parse
		return dst
	}
	gjson.Get(bytesString(raw), "tool_calls").ForEach(func(_, v gjson.Result) bool {
		dst = append(dst, v.Get("id").String())
		return true
	})
	return dst
}

// Results implements wire.Codec: a tool message answers its tool_call_id.
// The id aliases raw.
func (Codec) Results(dst []string, raw []byte) []string {
	if !bytes.Contains(raw, callIDKey) { // most messages: skip the parse
		return dst
	}
	if id := gjson.Get(bytesString(raw), "tool_call_id"); id.Exists() {
		dst = append(dst, id.String())
	}
	return dst
}

// Itemized implements wire.Codec: an answer's calls are one message.
func (Codec) Itemized() bool { return false }

// KeepCalls implements wire.Codec. A tool message is kept or not; a
// message left with no calls loses its tool_calls key, and is nothing to
// send if it has no content either.
func (c Codec) KeepCalls(raw []byte, keep func(id string) bool) ([]byte, bool) {
	if id := gjson.Get(bytesString(raw), "tool_call_id"); id.Exists() {
		return raw, keep(id.String())
	}
	if len(c.Calls(nil, raw)) == 0 {
		return raw, true
	}
	kept := make([]byte, 0, len(raw))
	kept = append(kept, '[')
	gjson.GetBytes(raw, "tool_calls").ForEach(func(_, v gjson.Result) bool {
		if keep(v.Get("id").String()) {
			if len(kept) > 1 {
				kept = append(kept, ',')
			}
			kept = append(kept, v.Raw...)
		}
		return true
	})
	kept = append(kept, ']')
	var out []byte
	var err error
	if len(kept) == 2 {
		c := gjson.GetBytes(raw, "content")
		if empty := c.String() == "" || (c.IsArray() && len(c.Array()) == 0); empty {
			return raw, false
		}
		out, err = sjson.DeleteBytes(raw, "tool_calls")
	} else {
		out, err = sjson.SetRawBytes(raw, "tool_calls", kept)
	}
	if err != nil {
		return raw, false
	}
	return out, true
}

// CutResults implements wire.Codec: a tool message's string content is cut.
func (Codec) CutResults(raw []byte, max int, marker func(kept, total int) string) ([]byte, bool) {
	return CutContent(raw, max, marker)
}

// CutContent cuts a message's string content to max characters (runes)
// and appends, on a line of its own, the marker made from the kept and
// total character counts. It reports false if the content is not a string
// longer than max.
func CutContent(raw []byte, max int, marker func(kept, total int) string) ([]byte, bool) {
	c := gjson.Get(bytesString(raw), "content") // Str aliases raw: only copied from below
	if c.Type != gjson.String {
		return raw, false
	}
	text, cut := body.CutText(c.Str, max, marker)
	if !cut {
		return raw, false
	}
	out, err := sjson.SetBytes(raw, "content", text)
	if err != nil {
		return raw, false
	}
	return out, true
}

// Hash implements wire.Codec (see Hash).
func (Codec) Hash(raw []byte) uint64 { return Hash(raw) }

// WithoutCacheHints implements wire.Codec (see WithoutCacheHints).
func (Codec) WithoutCacheHints(raw []byte) []byte { return WithoutCacheHints(raw) }

// errNotMessage is Decode's answer to JSON that is not a chat message.
var errNotMessage = errors.New("chat: not a chat message")

// Decode implements wire.Codec. A file part is a File; content parts other
// than text, image, file and refusal (audio) are carried as Opaque parts
// of chat completions. The message's members are read in one pass (the
// first of a repeated key counts, as for gjson.Get): a search for each,
// two of them usually absent, read a long message four times.
// members are the members of a message object that Decode and Text
// read, each as Get finds it (the first of a repeated key), from one
// pass over the object: a long message is read once, not once a member
// (refusal and tool_calls are usually absent, so Get read to the end).
type members struct{ role, content, callID, refusal, calls gjson.Result }

func readMembers(m gjson.Result) members {
	var mm members
	m.ForEach(func(k, v gjson.Result) bool {
		var into *gjson.Result
		switch k.Str {
		case "role":
			into = &mm.role
		case "content":
			into = &mm.content
		case "tool_call_id":
			into = &mm.callID
		case "refusal":
			into = &mm.refusal
		case "tool_calls":
			into = &mm.calls
		default:
			return true
		}
		if !into.Exists() {
			*into = v
		}
		return true
	})
	return mm
}

func (c Codec) Decode(raw []byte) (wire.Message, error) {
	var stack [4]body.Member
	if ms, ok := body.StringMembers(stack[:0], raw); ok {
		if out, ok := decodeStrings(ms); ok {
			return out, nil
		}
	}
	return decodeTree(raw)
}

// decodeTree is Decode of any message, through gjson.
func decodeTree(raw []byte) (wire.Message, error) {
	m := gjson.ParseBytes(raw)
	if !m.IsObject() {
		return wire.Message{}, errNotMessage
	}
	mm := readMembers(m)
	role, content, callID, refusal, calls := mm.role, mm.content, mm.callID, mm.refusal, mm.calls
	out := wire.Message{Role: roleOf(role.String())}
	if out.Role == "" {
		return wire.Message{}, errNotMessage
	}
	if out.Role == RoleTool {
		out.Parts = append(out.Parts, wire.Part{Kind: wire.ToolResult,
			CallID: callID.String(), Text: contentString(content)})
		return out, nil
	}
	switch {
	case content.Type == gjson.String:
		if content.Str != "" {
			out.Parts = append(out.Parts, wire.Part{Kind: wire.Text, Text: content.Str})
		}
	case content.IsArray():
		content.ForEach(func(_, p gjson.Result) bool {
			switch p.Get("type").String() {
			case "text":
				out.Parts = append(out.Parts, wire.Part{Kind: wire.Text, Text: p.Get("text").String()})
			case "image_url":
				out.Parts = append(out.Parts, wire.Part{Kind: wire.Image, URL: p.Get("image_url.url").String()})
			case "refusal":
				out.Parts = append(out.Parts, wire.Part{Kind: wire.Refusal, Text: p.Get("refusal").String()})
			case "file":
				f := p.Get("file")
				part := wire.Part{Kind: wire.File, Name: f.Get("filename").Str, FileID: f.Get("file_id").Str, Origin: wire.ChatCompletions}
				if part.FileID == "" {
					part.URL = f.Get("file_data").Str
					if !strings.HasPrefix(part.URL, "data:") {
						part.URL = wire.DataURL(wire.MediaTypeOf(part.Name), part.URL)
					}
				}
				out.Parts = append(out.Parts, part)
			default:
				out.Parts = append(out.Parts, wire.Part{Kind: wire.Opaque, Origin: wire.ChatCompletions, Raw: []byte(p.Raw)})
			}
			return true
		})
	}
	if r := refusal; r.Type == gjson.String && r.Str != "" {
		out.Parts = append(out.Parts, wire.Part{Kind: wire.Refusal, Text: r.Str})
	}
	calls.ForEach(func(_, tc gjson.Result) bool {
		out.Parts = append(out.Parts, wire.Part{Kind: wire.ToolCall, CallID: tc.Get("id").String(),
			Name: tc.Get("function.name").String(), Arguments: tc.Get("function.arguments").String()})
		return true
	})
	return out, nil
}

// decodeStrings is Decode of a message whose members are all strings
// (body.StringMembers: {"role":"user","content":"…"}, how most stored
// messages read), from its one pass: the summariser's transcript decodes
// every message it covers, and the tree's walk read each long text
// member by member. ok is false for a message that names tool calls
// (gjson reads a string of them as one call) or has no known role,
// which the tree reads. Its strings may share raw's bytes, as the
// other codecs' one-pass reads' do.
func decodeStrings(ms []body.Member) (out wire.Message, ok bool) {
	r, _ := body.Lookup(ms, "role")
	if out.Role = roleOf(r); out.Role == "" {
		return wire.Message{}, false
	}
	if _, calls := body.Lookup(ms, "tool_calls"); calls {
		return wire.Message{}, false
	}
	content, _ := body.Lookup(ms, "content")
	if out.Role == RoleTool {
		id, _ := body.Lookup(ms, "tool_call_id")
		out.Parts = []wire.Part{{Kind: wire.ToolResult, CallID: id, Text: content}}
		return out, true
	}
	refusal, _ := body.Lookup(ms, "refusal")
	if content != "" || refusal != "" {
		out.Parts = make([]wire.Part, 0, 2)
	}
	if content != "" {
		out.Parts = append(out.Parts, wire.Part{Kind: wire.Text, Text: content})
	}
	if refusal != "" {
		out.Parts = append(out.Parts, wire.Part{Kind: wire.Refusal, Text: refusal})
	}
	return out, true
}

// appendFile appends a file content part: {"type":"file","file":{...}}
// with the file_id, or the filename and file_data (a data: URL). Chat
// completions takes no file by URL: such a file is a *wire.FileError.
func appendFile(b []byte, p wire.Part) ([]byte, error) {
	b = append(b, `{"type":"file","file":{`...)
	switch {
	case p.FileID != "" && !wire.OpenAIFile(p):
		return nil, &wire.FileError{Target: wire.ChatCompletions,
			Reason: "The upstream speaks chat completions, which cannot read file " + strconv.Quote(p.FileID) + ": it names a file another provider holds. Send the file's data instead."}
	case p.FileID != "":
		b = append(b, `"file_id":`...)
		b = gjson.AppendJSONString(b, p.FileID)
	case strings.HasPrefix(p.URL, "data:"):
		name := p.Name
		if name == "" {
			name = "file"
		}
		b = append(b, `"filename":`...)
		b = gjson.AppendJSONString(b, name)
		b = append(b, `,"file_data":`...)
		b = gjson.AppendJSONString(b, p.URL)
	default:
		return nil, &wire.FileError{Target: wire.ChatCompletions,
			Reason: "The upstream speaks chat completions, which takes a file as data or by file id, not by URL: send the file's data instead."}
	}
	return append(b, "}}"...), nil
}

// contentString is the text of a content value: the string, or its text
// parts joined by newlines.
func contentString(c gjson.Result) string {
	if c.Type == gjson.String {
		return c.Str
	}
	var b strings.Builder
	c.ForEach(func(_, p gjson.Result) bool {
		if t := p.Get("text"); t.Exists() {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(t.String())
		}
		return true
	})
	return b.String()
}

// Joins is wire.Separable's: Encode writes each message apart but for a run
// of assistant messages, which goes as one.
func (Codec) Joins(prev, next string) bool {
	return prev == wire.RoleAssistant && next == wire.RoleAssistant
}

// Encode implements wire.Codec. A canonical message with several tool
// results becomes one tool message per result, as chat completions
// requires; text alone is a string content; another protocol's opaque
// parts are left out.
//
// Consecutive assistant messages (the Responses API's items: a message, then
// each call) are one chat message: chat completions wants every call of an
// answer in one message, its results right after it.
func (Codec) Encode(dst [][]byte, msgs []wire.Message) ([][]byte, error) {
	msgs = joinAssistant(msgs)
	for _, m := range msgs {
		// One pass to size the message and see its shape, one to write it.
		dst = appendToolResults(dst, &m)
		sh := shapeOf(&m)
		if sh.parts == 0 && sh.calls == 0 && sh.refusal == "" {
			continue
		}
		out, err := encodeMessage(&m, &sh)
		if err != nil {
			return nil, err
		}
		dst = append(dst, out)
	}
	return dst, nil
}

// appendToolResults appends one tool message per tool result of m.
func appendToolResults(dst [][]byte, m *wire.Message) [][]byte {
	for _, p := range m.Parts {
		if p.Kind == wire.ToolResult {
			dst = append(dst, appendObj(make([]byte, 0, 48+len(p.CallID)+len(p.Text)), "role", RoleTool, "tool_call_id", p.CallID, "content", p.Text))
		}
	}
	return dst
}

// shape is what Encode needs to know of a message before writing it.
type shape struct {
	size     int    // an estimate of its encoded size
	parts    int    // its content parts
	calls    int    // its tool calls
	onlyText bool   // no content part but text
	text     string // its last text part
	refusal  string // its refusals, joined
}

// shapeOf measures m.
func shapeOf(m *wire.Message) shape {
	sh := shape{size: 32, onlyText: true}
	for _, p := range m.Parts {
		switch p.Kind {
		case wire.Text:
			sh.parts++
			sh.text = p.Text
			sh.size += 32 + len(p.Text)
		case wire.Image:
			sh.parts++
			sh.onlyText = false
			sh.size += 48 + len(p.URL)
		case wire.Refusal:
			sh.refusal += p.Text
			sh.size += 16 + len(p.Text)
		case wire.File:
			sh.parts++
			sh.onlyText = false
			sh.size += 48 + len(p.Name) + len(p.URL) + len(p.FileID)
		case wire.ToolCall:
			sh.calls++
			sh.size += 80 + len(p.CallID) + len(p.Name) + len(p.Arguments)
		case wire.Opaque:
			if p.Origin == wire.ChatCompletions {
				sh.parts++
				sh.onlyText = false
				sh.size += len(p.Raw) + 1
			}
		}
	}
	return sh
}

// encodeMessage writes m, of shape sh, as one chat message: its role
// (a tool message's text is the user's), content, refusal and tool
// calls.
//
// The members in the order, and with the escapes, that the sjson edits
// this replaces wrote them: a string member as sjson writes it
// (appendStringified), the function of a call as encoding/json
// marshals a map (appendMarshaled).
func encodeMessage(m *wire.Message, sh *shape) ([]byte, error) {
	role := m.Role
	if role == RoleTool { // results already written; any text is the user's
		role = RoleUser
	}
	out := make([]byte, 0, sh.size+len(role))
	out = append(out, `{"role":`...)
	out = appendQuoted(out, role)
	out = append(out, `,"content":`...)
	switch {
	case sh.parts == 0 && role == RoleAssistant:
		out = append(out, "null"...)
	case sh.parts == 0:
		out = append(out, `""`...)
	case sh.onlyText && sh.parts == 1:
		out = appendStringified(out, sh.text)
	default:
		var err error
		if out, err = appendContentParts(out, m); err != nil {
			return nil, err
		}
	}
	if sh.refusal != "" {
		out = append(out, `,"refusal":`...)
		out = appendStringified(out, sh.refusal)
	}
	if sh.calls > 0 {
		out = appendCallsMember(out, m)
	}
	return append(out, '}'), nil
}

// appendContentParts appends m's content as an array of parts: text,
// image, file, and chat's own opaque parts.
func appendContentParts(out []byte, m *wire.Message) ([]byte, error) {
	out = append(out, '[')
	n := 0
	for _, p := range m.Parts {
		switch {
		case p.Kind == wire.Text, p.Kind == wire.Image, p.Kind == wire.File,
			p.Kind == wire.Opaque && p.Origin == wire.ChatCompletions:
		default:
			continue
		}
		if n > 0 {
			out = append(out, ',')
		}
		n++
		switch p.Kind {
		case wire.Text:
			out = appendObj(out, "type", "text", "text", p.Text)
		case wire.Image:
			out = append(out, `{"type":"image_url","image_url":{"url":`...)
			out = append(appendStringified(out, p.URL), "}}"...)
		case wire.File:
			var err error
			if out, err = appendFile(out, p); err != nil {
				return nil, err
			}
		default:
			out = append(out, p.Raw...)
		}
	}
	return append(out, ']'), nil
}

// appendCallsMember appends m's tool calls as a "tool_calls" member.
func appendCallsMember(out []byte, m *wire.Message) []byte {
	out = append(out, `,"tool_calls":[`...)
	n := 0
	for _, c := range m.Parts {
		if c.Kind != wire.ToolCall {
			continue
		}
		if n > 0 {
			out = append(out, ',')
		}
		n++
		args := c.Arguments
		if args == "" {
			args = "{}"
		}
		out = append(out, `{"id":`...)
		out = appendQuoted(out, c.CallID)
		out = append(out, `,"type":"function","function":{"arguments":`...)
		out = appendMarshaled(out, args)
		out = append(out, `,"name":`...)
		out = appendMarshaled(out, c.Name)
		out = append(out, "}}"...)
	}
	return append(out, ']')
}

// appendObj appends a JSON object of string fields, given as key, value
// pairs in order.
func appendObj(dst []byte, kv ...string) []byte {
	dst = append(dst, '{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendQuoted(dst, kv[i])
		dst = append(dst, ':')
		dst = appendQuoted(dst, kv[i+1])
	}
	return append(dst, '}')
}

// CanonicalHash is the hash other protocols give a message that means the
// same as one chat message: the chat-completions hash of m encoded as chat
// completions, so that a conversation continued through another protocol
// (a client that resends its history in its own protocol) is recognised
// by the merge. It reports false when m has no single chat rendering (an
// answer split into items, several tool results, a provider's opaque
// piece): the protocol's own hash then stands.
//
// Tool call arguments are compared as JSON values (key order and string
// escapes aside); a tool result marked as an error has no chat rendering.
func CanonicalHash(m wire.Message) (uint64, bool) {
	if len(m.Parts) == 1 && m.Parts[0].Kind == wire.Text && m.Role != RoleTool && utf8.ValidString(m.Parts[0].Text) {
		return textHash(m.Role, m.Parts[0].Text), true // the shape most messages have
	}
	return encodedHash(m)
}

// encodedHash is CanonicalHash of any message: the hash of its encoding.
func encodedHash(m wire.Message) (uint64, bool) {
	for i, p := range m.Parts {
		switch {
		case p.Kind == wire.Opaque, p.Kind == wire.ToolResult && p.IsError,
			p.Kind == wire.File: // files were Opaque when hashes were fixed: stored hashes stay
			return 0, false
		case p.Kind == wire.ToolCall:
			if i == 0 || m.Parts[i-1].Kind != wire.ToolCall { // copy once, never the caller's parts
				m.Parts = append([]wire.Part(nil), m.Parts...)
			}
			m.Parts[i].Arguments = normalJSON(p.Arguments)
		}
	}
	out, err := Codec{}.Encode(nil, []wire.Message{m})
	if err != nil || len(out) != 1 {
		return 0, false
	}
	return Hash(out[0]), true
}

// normalJSON is a JSON text with its object keys sorted and its strings
// escaped one way (itself if it is not JSON).
func normalJSON(text string) string {
	d := json.NewDecoder(strings.NewReader(text))
	var v any
	if err := d.Decode(&v); err != nil || d.More() {
		return text
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return text
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// joinAssistant merges each run of consecutive assistant messages into one
// (msgs itself when there is none).
func joinAssistant(msgs []wire.Message) []wire.Message {
	run := false
	for i := 1; i < len(msgs) && !run; i++ {
		run = msgs[i].Role == RoleAssistant && msgs[i-1].Role == RoleAssistant
	}
	if !run {
		return msgs
	}
	out := make([]wire.Message, 0, len(msgs))
	for _, m := range msgs {
		if n := len(out); n > 0 && m.Role == RoleAssistant && out[n-1].Role == RoleAssistant {
			parts := make([]wire.Part, 0, len(out[n-1].Parts)+len(m.Parts))
			out[n-1].Parts = append(append(parts, out[n-1].Parts...), m.Parts...)
			continue
		}
		out = append(out, m)
	}
	return out
}
