package messages

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/wire"
)

// Ingress is the client side of the Messages API: it reads a client's
// request and renders answers as Message objects and Anthropic's event
// stream. The zero value is ready to use.
type Ingress struct{}

var (
	_ wire.Ingress     = Ingress{}
	_ wire.ErrorShaper = Ingress{}
)

// AppendError appends Anthropic's error body,
// {"type":"error","error":{"type","message"}}, its type the one
// Anthropic answers status with (apierr.AnthropicType).
func (Ingress) AppendError(dst []byte, status int, typ, code, param, message string) []byte {
	return append(dst, apierr.Anthropic(&apierr.Error{Status: status, Type: typ, Code: code, Param: param, Message: message})...)
}

// AppendErrorEvent appends Anthropic's stream error event: "event:
// error" and the error body.
func (in Ingress) AppendErrorEvent(dst []byte, status int, typ, code, param, message string) []byte {
	dst = append(dst, "event: error\ndata: "...)
	dst = in.AppendError(dst, status, typ, code, param, message)
	return append(dst, "\n\n"...)
}

// ParseRequest decodes a Messages API request body
// (https://docs.anthropic.com/en/api/messages). It checks what the API
// requires: an object with "model", "max_tokens" (a positive integer:
// unlike chat completions there is no default) and a non-empty
// "messages" of user and assistant messages whose content is a string or
// an array of typed blocks. Errors are apierr values naming the field as
// Anthropic does.
//
// "system" becomes the Instructions (see the package doc for their JSON).
// A system-role message inside "messages" (a beta some models accept)
// stays in Messages where it stands and its index is listed in
// Request.InPlace: it is per-request context, sent in place to an
// anthropic upstream and never stored. Tools without a "type" (or of
// type "custom") are function tools, read into Tools; server tools
// (web_search_…, bash_…) are kept only in ToolsRaw. The request's other
// fields (metadata, thinking, top_k, …) stay in Body, which AppendBody
// sends on as it came.
//
// The Request's strings and Messages alias body, which must outlive it
// and not change.
func (Ingress) ParseRequest(body []byte) (*wire.Request, error) {
	if req, ok := quickParse(body); ok {
		return req, nil
	}
	return parseRequest(body)
}

// parseRequest is ParseRequest with gjson: every request quickParse does
// not decide, and the errors.
func parseRequest(body []byte) (*wire.Request, error) {
	if chat.CheckDepth(body) != nil || !gjson.ValidBytes(body) {
		return nil, apierr.BadJSON
	}
	root := parse(body)
	if !root.IsObject() {
		return nil, apierr.InvalidField("body", "Input should be a valid dictionary")
	}
	req := &wire.Request{Protocol: wire.Messages, Body: body, Choices: 1}
	var model, maxTokens, msgs gjson.Result
	var err error
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model":
			model = v
		case "max_tokens":
			maxTokens = v
		case "messages":
			msgs = v
		case "system":
			req.Instructions, err = parseSystem(v)
		case "stream":
			if v.Type != gjson.True && v.Type != gjson.False {
				err = apierr.InvalidField("stream", "Input should be a valid boolean")
			}
			req.Stream = v.Type == gjson.True
		case "tools":
			req.ToolsRaw = []byte(v.Raw)
			req.Tools, err = parseTools(v)
		case "tool_choice":
			req.ToolChoice, err = parseToolChoice(v)
		case "temperature":
			req.Temperature, err = number("temperature", v)
		case "top_p":
			req.TopP, err = number("top_p", v)
		case "stop_sequences":
			req.Stop, err = stringList("stop_sequences", v)
		case "metadata":
			if !v.IsObject() && v.Type != gjson.Null {
				err = apierr.InvalidField("metadata", "Input should be a valid dictionary")
			}
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	switch {
	case !model.Exists():
		return nil, apierr.MissingField("model")
	case model.Type != gjson.String || model.Str == "":
		return nil, apierr.InvalidField("model", "Input should be a valid string")
	}
	req.Model = strings.Clone(model.Str) // outlives the body
	switch {
	case !maxTokens.Exists():
		return nil, apierr.MissingField("max_tokens")
	case maxTokens.Type != gjson.Number || maxTokens.Num != float64(int64(maxTokens.Num)):
		return nil, apierr.InvalidField("max_tokens", "Input should be a valid integer")
	case maxTokens.Num < 1:
		return nil, apierr.InvalidField("max_tokens", "Input should be greater than or equal to 1")
	}
	req.MaxTokens = int(min(maxTokens.Num, 1<<31))
	if err := parseMessages(req, msgs); err != nil {
		return nil, err
	}
	return req, nil
}

// parseMessages reads "messages" into req.Messages and req.InPlace.
func parseMessages(req *wire.Request, msgs gjson.Result) error {
	switch {
	case !msgs.Exists():
		return apierr.MissingField("messages")
	case !msgs.IsArray():
		return apierr.InvalidField("messages", "Input should be a valid list")
	}
	var err error
	i := 0
	msgs.ForEach(func(_, m gjson.Result) bool {
		var role string
		if role, err = checkMessage(i, m); err != nil {
			return false
		}
		if role == roleSystem {
			req.InPlace = append(req.InPlace, i)
		}
		req.Messages = append(req.Messages, req.Body[m.Index:m.Index+len(m.Raw):m.Index+len(m.Raw)])
		i++
		return true
	})
	if err != nil {
		return err
	}
	if i == 0 {
		return apierr.InvalidField("messages", "at least one message is required")
	}
	return nil
}

// messageParam names messages[i], and a member path under it, as
// Anthropic's errors do ("messages.3.content.0.type"). Built only for an
// error: the success path does not allocate a name per message or block.
func messageParam(i int, path ...string) string {
	p := "messages." + strconv.Itoa(i)
	for _, s := range path {
		p += "." + s
	}
	return p
}

// checkMessage checks messages[i] and returns its role.
func checkMessage(i int, m gjson.Result) (string, error) {
	if !m.IsObject() {
		return "", apierr.InvalidField(messageParam(i), "Input should be a valid dictionary")
	}
	role, content := m.Get("role"), m.Get("content")
	switch {
	case !role.Exists():
		return "", apierr.MissingField(messageParam(i, "role"))
	case role.Str != roleUser && role.Str != roleAssistant && role.Str != roleSystem || role.Type != gjson.String:
		return "", apierr.InvalidField(messageParam(i, "role"), "Input should be 'user' or 'assistant'")
	case !content.Exists():
		return "", apierr.MissingField(messageParam(i, "content"))
	}
	return role.Str, checkContent(i, content)
}

// checkContent checks messages[i]'s content: a string, or an array of
// objects with a string "type".
func checkContent(i int, c gjson.Result) error {
	if c.Type == gjson.String {
		return nil
	}
	if !c.IsArray() {
		return apierr.InvalidField(messageParam(i, "content"), "Input should be a valid string or a valid list")
	}
	var err error
	j := 0
	c.ForEach(func(_, b gjson.Result) bool {
		p := func(path ...string) string {
			return messageParam(i, append([]string{"content", strconv.Itoa(j)}, path...)...)
		}
		switch t := b.Get("type"); {
		case !b.IsObject():
			err = apierr.InvalidField(p(), "Input should be a valid dictionary")
		case !t.Exists():
			err = apierr.MissingField(p("type"))
		case t.Type != gjson.String:
			err = apierr.InvalidField(p("type"), "Input should be a valid string")
		case t.Str == typeToolResult && b.Get("tool_use_id").Type != gjson.String:
			err = apierr.MissingField(p("tool_use_id"))
		case t.Str == typeToolUse && (b.Get("id").Type != gjson.String || b.Get("name").Type != gjson.String):
			err = apierr.MissingField(p("id"))
		}
		j++
		return err == nil
	})
	return err
}

// parseSystem reads "system" into instructions: a string is one
// {"role":"system","content":"…"}, blocks are one such message each.
func parseSystem(v gjson.Result) ([][]byte, error) {
	switch {
	case v.Type == gjson.Null:
		return nil, nil
	case v.Type == gjson.String:
		if v.Str == "" {
			return nil, nil
		}
		return [][]byte{instruction(v.Raw)}, nil
	case !v.IsArray():
		return nil, apierr.InvalidField("system", "Input should be a valid string or a valid list")
	}
	var out [][]byte
	var err error
	i := 0
	v.ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").Str != typeText || b.Get("text").Type != gjson.String {
			err = apierr.InvalidField("system."+strconv.Itoa(i), "Input should be a text block")
			return false
		}
		out = append(out, instruction("["+b.Raw+"]"))
		i++
		return true
	})
	return out, err
}

// instruction writes {"role":"system","content":content}.
func instruction(content string) []byte {
	b := make([]byte, 0, len(content)+32)
	b = append(b, `{"role":"system","content":`...)
	b = append(b, content...)
	return append(b, '}')
}

// parseTools reads the function tools of "tools".
func parseTools(v gjson.Result) ([]wire.Tool, error) {
	if !v.IsArray() {
		return nil, apierr.InvalidField("tools", "Input should be a valid list")
	}
	var tools []wire.Tool
	var err error
	i := 0
	v.ForEach(func(_, t gjson.Result) bool {
		p := "tools." + strconv.Itoa(i)
		i++
		if !t.IsObject() {
			err = apierr.InvalidField(p, "Input should be a valid dictionary")
			return false
		}
		if typ := t.Get("type"); typ.Exists() && typ.Str != "custom" {
			return true // a server tool: Anthropic runs it
		}
		name, schema := t.Get("name"), t.Get("input_schema")
		switch {
		case name.Type != gjson.String || name.Str == "":
			err = apierr.MissingField(p + ".name")
		case !schema.IsObject():
			err = apierr.MissingField(p + ".input_schema")
		default:
			tools = append(tools, wire.Tool{Name: name.Str, Description: t.Get("description").Str, Parameters: []byte(schema.Raw)})
		}
		return err == nil
	})
	return tools, err
}

// parseToolChoice maps tool_choice to the canonical choice: auto, none,
// "required" for any, or the tool's name.
func parseToolChoice(v gjson.Result) (string, error) {
	if !v.IsObject() {
		return "", apierr.InvalidField("tool_choice", "Input should be a valid dictionary")
	}
	switch typ := v.Get("type").Str; typ {
	case "auto", "none":
		return typ, nil
	case "any":
		return "required", nil
	case "tool":
		if name := v.Get("name"); name.Type == gjson.String && name.Str != "" {
			return name.Str, nil
		}
		return "", apierr.MissingField("tool_choice.name")
	}
	return "", apierr.InvalidField("tool_choice.type", "Input should be 'auto', 'any', 'tool' or 'none'")
}

func number(param string, v gjson.Result) (*float64, error) {
	if v.Type == gjson.Null {
		return nil, nil
	}
	if v.Type != gjson.Number {
		return nil, apierr.InvalidField(param, "Input should be a valid number")
	}
	f := v.Num
	return &f, nil
}

// stringList reads an array of strings.
func stringList(param string, v gjson.Result) ([]string, error) {
	if v.Type == gjson.Null {
		return nil, nil
	}
	if !v.IsArray() {
		return nil, apierr.InvalidField(param, "Input should be a valid list")
	}
	var out []string
	var err error
	v.ForEach(func(_, s gjson.Result) bool {
		if s.Type != gjson.String {
			err = apierr.InvalidField(param+"."+strconv.Itoa(len(out)), "Input should be a valid string")
			return false
		}
		out = append(out, s.Str)
		return true
	})
	return out, err
}
