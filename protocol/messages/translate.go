package messages

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/protocol/internal/body"
	"github.com/recallproxy/recall/wire"
)

// ErrNotMessage is returned (wrapped) by Decode for JSON that is not a
// Messages API message.
var ErrNotMessage = errors.New("messages: not a message")

// Decode reads a stored message into the canonical model: text, image
// (a base64 source as a data: URL), tool_use as a ToolCall (its input as
// the Arguments text), tool_result as a ToolResult (its text blocks joined
// by newlines; images in a result have no canonical form and are left
// out). Thinking, redacted thinking, documents and server-tool blocks are
// Opaque parts of origin wire.Messages: only an anthropic upstream reads
// them.
func (c Codec) Decode(raw []byte) (wire.Message, error) {
	var stack [4]body.Member
	if ms, ok := body.StringMembers(stack[:0], raw); ok {
		return decodeText(ms)
	}
	if m, ok := decodeBlocks(raw); ok {
		return m, nil
	}
	return decodeTree(raw)
}

// decodeText is Decode of a message whose members are all strings (see
// body.StringMembers): its role and its text, read in one pass.
func decodeText(ms []body.Member) (wire.Message, error) {
	r, _ := body.Lookup(ms, "role")
	role := canonicalRole(r, gjson.Result{Type: gjson.String}) // a string content holds no tool result
	if role == "" {
		return wire.Message{}, fmt.Errorf("messages: decode: %w", ErrNotMessage)
	}
	msg := wire.Message{Role: role}
	if text, _ := body.Lookup(ms, "content"); text != "" {
		msg.Parts = append(msg.Parts, wire.Part{Kind: wire.Text, Text: text})
	}
	return msg, nil
}

// decodeTree is Decode of any message, read with gjson.
func decodeTree(raw []byte) (wire.Message, error) {
	m := parse(raw)
	var role string
	var content gjson.Result
	if m.IsObject() { // Role's answer, the content read once
		content = m.Get("content")
		role = canonicalRole(m.Get("role").Str, content)
	}
	if role == "" {
		return wire.Message{}, fmt.Errorf("messages: decode: %w", ErrNotMessage)
	}
	msg := wire.Message{Role: role}
	switch {
	case content.Type == gjson.String:
		if content.Str != "" {
			msg.Parts = append(msg.Parts, wire.Part{Kind: wire.Text, Text: content.Str})
		}
	case content.IsArray():
		content.ForEach(func(_, b gjson.Result) bool {
			msg.Parts = appendPart(msg.Parts, b)
			return true
		})
	case content.Exists() && content.Type != gjson.Null:
		return wire.Message{}, fmt.Errorf("messages: decode: content is neither a string nor blocks: %w", ErrNotMessage)
	}
	return msg, nil
}

// appendPart appends the canonical part of block b.
func appendPart(parts []wire.Part, b gjson.Result) []wire.Part {
	switch b.Get("type").Str {
	case typeText:
		return append(parts, wire.Part{Kind: wire.Text, Text: b.Get("text").Str})
	case typeImage:
		src := b.Get("source")
		switch src.Get("type").Str {
		case "base64":
			url := "data:" + src.Get("media_type").Str + ";base64," + src.Get("data").Str
			return append(parts, wire.Part{Kind: wire.Image, URL: url})
		case "url":
			return append(parts, wire.Part{Kind: wire.Image, URL: src.Get("url").Str})
		}
	case typeDocument:
		if f, ok := decodeDocument(b); ok {
			return append(parts, f)
		}
	case typeToolUse:
		args := b.Get("input").Raw
		if args == "" {
			args = "{}"
		}
		return append(parts, wire.Part{Kind: wire.ToolCall, CallID: b.Get("id").Str, Name: b.Get("name").Str, Arguments: args})
	case typeToolResult:
		return append(parts, wire.Part{Kind: wire.ToolResult, CallID: b.Get("tool_use_id").Str,
			Text: resultText(b.Get("content")), IsError: b.Get("is_error").Bool()})
	}
	return append(parts, wire.Part{Kind: wire.Opaque, Origin: wire.Messages, Raw: []byte(b.Raw)})
}

// resultText is the text of a tool_result's content: the string, or its
// text blocks joined by newlines.
func resultText(c gjson.Result) string {
	if c.Type == gjson.String {
		return c.Str
	}
	var texts []string
	c.ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").Str == typeText {
			texts = append(texts, b.Get("text").Str)
		}
		return true
	})
	return strings.Join(texts, "\n")
}

// Joins is wire.Separable's: Encode joins consecutive messages of one API
// role (the assistant's, or the user's, which tool messages share) and
// writes an instruction apart.
func (Codec) Joins(prev, next string) bool {
	a, b := turnRole(prev), turnRole(next)
	return a != "" && a == b
}

// turnRole is the API role a message of canonical role r is sent in, as
// Encode's turns take it, or "" for an instruction or a role it refuses.
func turnRole(r string) string {
	switch r {
	case wire.RoleAssistant:
		return roleAssistant
	case wire.RoleUser, wire.RoleTool:
		return "user"
	}
	return ""
}

// Encode writes canonical messages as Messages API messages, shaped as
// the API requires turns: consecutive messages of one API role are one
// message (so a run of canonical tool messages becomes one user message
// of tool_result blocks, right after the assistant's tool_use message),
// tool_result blocks come first in a user message, and a message left
// with no block is not written. A system or developer message is written
// as an instruction, {"role":"system","content":"…"}: the caller passes it
// to AppendBody as an instruction, which sends it as "system". Refusals
// are sent as text; empty texts, images in assistant messages and Opaque
// parts of other protocols are left out (Anthropic refuses the first two,
// and cannot read the last).
func (Codec) Encode(dst [][]byte, msgs []wire.Message) ([][]byte, error) {
	return body.Turns{
		Package:     "messages",
		Assistant:   roleAssistant,
		Instruction: appendInstruction,
		Member:      "content",
		Part: func(r string, p wire.Part) ([]byte, bool, error) {
			if p.Kind == wire.File {
				b, err := appendDocument(nil, r, p)
				return b, false, err
			}
			return appendBlock(nil, r, p), p.Kind == wire.ToolResult, nil
		},
	}.Encode(dst, msgs)
}

// appendBlock appends part p as a block of a message of API role r, or
// returns nil when it has none.
func appendBlock(b []byte, r string, p wire.Part) []byte {
	switch p.Kind {
	case wire.Text, wire.Refusal:
		if p.Text == "" {
			return nil
		}
		b = append(b, `{"type":"text","text":`...)
		b = gjson.AppendJSONString(b, p.Text)
		return append(b, '}')
	case wire.Image:
		if r != roleUser || p.URL == "" {
			return nil
		}
		return appendImage(b, p.URL)
	case wire.ToolCall:
		if r != roleAssistant {
			return nil
		}
		b = append(b, `{"type":"tool_use","id":`...)
		b = gjson.AppendJSONString(b, p.CallID)
		b = append(b, `,"name":`...)
		b = gjson.AppendJSONString(b, p.Name)
		b = append(b, `,"input":`...)
		b = append(b, body.ObjectArgs(p.Arguments)...)
		return append(b, '}')
	case wire.ToolResult:
		if r != roleUser {
			return nil
		}
		b = append(b, `{"type":"tool_result","tool_use_id":`...)
		b = gjson.AppendJSONString(b, p.CallID)
		b = append(b, `,"content":`...)
		b = gjson.AppendJSONString(b, p.Text)
		if p.IsError {
			b = append(b, `,"is_error":true`...)
		}
		return append(b, '}')
	case wire.Opaque:
		if p.Origin != wire.Messages || !gjson.ValidBytes(p.Raw) {
			return nil
		}
		return append(b, p.Raw...)
	}
	return nil
}

// decodeDocument reads a document block whose source is base64 data,
// plain text (carried as a text/plain data: URL), a URL or a file id; its
// title is the File's name. ok is false for any other source (content
// blocks), which stays Opaque.
func decodeDocument(b gjson.Result) (wire.Part, bool) {
	f := wire.Part{Kind: wire.File, Name: b.Get("title").Str, Origin: wire.Messages}
	src := b.Get("source")
	switch src.Get("type").Str {
	case "base64":
		f.URL = wire.DataURL(src.Get("media_type").Str, src.Get("data").Str)
	case "text":
		mt := src.Get("media_type").Str
		if mt == "" {
			mt = mediaText
		}
		f.URL = wire.DataURL(mt, base64.StdEncoding.EncodeToString([]byte(src.Get("data").Str)))
	case "url":
		f.URL, f.MediaType = src.Get("url").Str, mediaPDF
	case "file":
		f.FileID = src.Get("file_id").Str
	default:
		return wire.Part{}, false
	}
	return f, true
}

// The media types of the documents Anthropic reads.
const (
	mediaPDF  = "application/pdf"
	mediaText = "text/plain"
)

// appendDocument appends a File as a document block of a user message: a
// PDF as a base64 source, plain text as a text source, a URL as a url
// source (Anthropic fetches PDFs by URL), a file id Anthropic holds as a
// file source. What Anthropic cannot take (another provider's file id,
// another media type, a file in an assistant message) is a
// *wire.FileError.
func appendDocument(b []byte, r string, p wire.Part) ([]byte, error) {
	refuse := func(reason string) ([]byte, error) {
		return nil, &wire.FileError{Target: wire.Messages, Reason: reason}
	}
	if r != roleUser {
		return refuse("The upstream speaks Anthropic's Messages API, which takes files only in user messages.")
	}
	title := func(b []byte) []byte {
		if p.Name == "" {
			return b
		}
		b = append(b, `,"title":`...)
		return gjson.AppendJSONString(b, p.Name)
	}
	if p.FileID != "" {
		if p.Origin != wire.Messages {
			return refuse("The upstream speaks Anthropic's Messages API, which cannot read file " + strconv.Quote(p.FileID) + ": it names a file another provider holds. Send the file's data instead.")
		}
		b = append(b, `{"type":"document","source":{"type":"file","file_id":`...)
		b = gjson.AppendJSONString(b, p.FileID)
		return append(title(append(b, '}')), '}'), nil
	}
	mt, data, ok := p.FileData()
	if !ok {
		b = append(b, `{"type":"document","source":{"type":"url","url":`...)
		b = gjson.AppendJSONString(b, p.URL)
		return append(title(append(b, '}')), '}'), nil
	}
	switch mt {
	case mediaPDF:
		b = append(b, `{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":`...)
		b = gjson.AppendJSONString(b, data)
	case mediaText:
		text, err := base64.StdEncoding.DecodeString(data)
		if err != nil || !utf8.Valid(text) {
			return refuse("The file " + strconv.Quote(p.Name) + " is not valid base64 of UTF-8 text.")
		}
		b = append(b, `{"type":"document","source":{"type":"text","media_type":"text/plain","data":`...)
		b = gjson.AppendJSONString(b, string(text))
	default:
		if mt == "" {
			mt = "an unknown media type"
		}
		return refuse("The upstream speaks Anthropic's Messages API, whose documents are PDF or plain text; the file " + strconv.Quote(p.Name) + " is " + mt + ".")
	}
	return append(title(append(b, '}')), '}'), nil
}

// appendImage appends an image block: a data: URL as a base64 source,
// any other URL as a url source.
func appendImage(b []byte, url string) []byte {
	if rest, ok := strings.CutPrefix(url, "data:"); ok {
		if mediaType, data, ok := strings.Cut(rest, ";base64,"); ok {
			b = append(b, `{"type":"image","source":{"type":"base64","media_type":`...)
			b = gjson.AppendJSONString(b, mediaType)
			b = append(b, `,"data":`...)
			b = gjson.AppendJSONString(b, data)
			return append(b, "}}"...)
		}
	}
	b = append(b, `{"type":"image","source":{"type":"url","url":`...)
	b = gjson.AppendJSONString(b, url)
	return append(b, "}}"...)
}

// appendInstruction appends m as an instruction: its text parts joined by
// newlines.
func appendInstruction(b []byte, m wire.Message) []byte {
	b = append(b, `{"role":"system","content":`...)
	b = gjson.AppendJSONString(b, body.Texts(m))
	return append(b, '}')
}

// Text implements wire.Codec: the message's text as Decode reads it (text
// blocks, each tool_use's name and input, each tool_result's text), one
// piece a line. Thinking, redacted thinking and other opaque blocks add
// nothing.
func (c Codec) Text(dst, raw []byte) []byte {
	dst, ok := body.AppendTexts(scanTextBlocks, dst, raw)
	if ok {
		return dst // as Decode's text parts read
	}
	m, err := c.Decode(raw)
	if err != nil {
		return dst
	}
	return wire.AppendText(dst, m)
}
