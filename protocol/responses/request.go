package responses

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/internal/jsonscan"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/wire"
)

// Ingress is the wire.Ingress of the Responses API: it serves clients
// that POST /v1/responses. Its zero value is ready to use.
type Ingress struct{}

// ParseRequest decodes a Responses request body. Every error is an
// *apierr.Error naming the offending parameter.
//
// input is a string (one user message) or an array of items; instructions
// (a string) become the first instruction, a system message item, and the
// leading system and developer messages of input follow it as
// instructions: sent first, never stored. The other items are Messages.
// store defaults to true; conversation (an id or {"id"}) is read into
// Conversation, previous_response_id into PreviousResponseID, for the
// proxy to resolve. background: true is refused.
//
// Body, Messages and Instructions alias body, except the items Recall
// makes (from a string input, and from instructions).
func (Ingress) ParseRequest(body []byte) (*wire.Request, error) {
	return parseRequest(body, false)
}

// parseRequest is ParseRequest; compact reads a compaction's body (see
// ParseCompact): model required, input optional.
func parseRequest(body []byte, compact bool) (*wire.Request, error) {
	root, err := checkBody(body)
	if err != nil {
		return nil, err
	}
	req := &wire.Request{Protocol: wire.Responses, Body: body, Choices: 1, Store: true}
	var (
		input, instructions gjson.Result
		seen                = map[string]int{}
	)
	root.ForEach(func(k, v gjson.Result) bool {
		key := k.String()
		seen[key]++
		if seen[key] > 1 {
			err = apierr.Invalid("invalid_json", key, "The JSON body names '"+key+"' more than once.")
			return false
		}
		switch key {
		case "input":
			input = v
		case "instructions":
			instructions = v
		default:
			err = readField(req, key, v)
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	switch instructions.Type {
	case gjson.Null:
	case gjson.String:
		if instructions.Str != "" {
			req.Instructions = append(req.Instructions, InstructionsItem(instructions.Str))
		}
	default:
		return nil, invalidType("instructions", "a string", instructions)
	}
	if compact {
		if req.Model == "" {
			return nil, missing("model")
		}
		if !input.Exists() || input.Type == gjson.Null {
			return req, nil
		}
	}
	if err := parseInput(req, input); err != nil {
		return nil, err
	}
	return req, nil
}

// checkBody checks that body is a JSON object, nested at most
// chat.MaxDepth levels, in valid UTF-8, and returns it parsed.
func checkBody(body []byte) (gjson.Result, error) {
	if chat.CheckDepth(body) != nil {
		return gjson.Result{}, apierr.Invalid("invalid_json", "", "The JSON body is nested too deeply (more than "+strconv.Itoa(chat.MaxDepth)+" levels).")
	}
	if !gjson.ValidBytes(body) {
		return gjson.Result{}, apierr.BadJSON
	}
	if !utf8.Valid(body) {
		return gjson.Result{}, apierr.Invalid("invalid_json", "", "The JSON body is not valid UTF-8.")
	}
	root := parse(body)
	if !root.IsObject() {
		return gjson.Result{}, invalidType("", "an object", root)
	}
	return root, nil
}

// readField reads the top-level field key, of value v, into req: every
// field Recall reads but input and instructions, which the request's
// other fields decide how to read. Other fields are left to the
// upstream.
func readField(req *wire.Request, key string, v gjson.Result) error {
	var err error
	switch key {
	case "model":
		req.Model, err = optString(key, v)
	case "stream":
		req.Stream, err = optBool(key, v, false)
	case "store":
		req.Store, err = optBool(key, v, true)
	case "background":
		var bg bool
		if bg, err = optBool(key, v, false); err == nil && bg {
			err = apierr.Background
		}
	case "max_output_tokens":
		switch v.Type {
		case gjson.Null:
		case gjson.Number:
			if v.Int() < 1 || strings.ContainsAny(v.Raw, ".eE") {
				err = apierr.InvalidValue(key, "Invalid 'max_output_tokens': expected a positive integer, but got "+v.Raw+" instead.")
			}
			req.MaxTokens = int(v.Int())
		default:
			err = invalidType(key, "an integer", v)
		}
	case "temperature", "top_p":
		switch v.Type {
		case gjson.Null:
		case gjson.Number:
			f := v.Num
			if key == "temperature" {
				req.Temperature = &f
			} else {
				req.TopP = &f
			}
		default:
			err = invalidType(key, "a number", v)
		}
	case "tools":
		if v.Type != gjson.Null {
			req.Tools, err = parseTools(v)
			req.ToolsRaw = sub(req.Body, v)
		}
	case "tool_choice":
		req.ToolChoice, err = parseToolChoice(v)
	case "previous_response_id":
		req.PreviousResponseID, err = optString(key, v)
	case "conversation":
		req.Conversation, err = parseConversation(v)
	}
	return err
}

// InstructionsItem is the item the request's instructions string stands
// for: a system message holding it.
func InstructionsItem(text string) []byte {
	b := gjson.AppendJSONString([]byte(`{"type":"message","role":"system","content":`), text)
	return append(b, '}')
}

// parseInput reads input into req's Instructions and Messages.
func parseInput(req *wire.Request, input gjson.Result) error {
	switch {
	case !input.Exists() || input.Type == gjson.Null:
		return missing("input")
	case input.Type == gjson.String:
		b := gjson.AppendJSONString([]byte(`{"type":"message","role":"user","content":`), input.Str)
		req.Messages = append(req.Messages, append(b, '}'))
		return nil
	case !input.IsArray():
		return invalidType("input", "a string or an array of input items", input)
	}
	leading := true
	var err error
	i := 0
	input.ForEach(func(_, item gjson.Result) bool {
		param := "input[" + strconv.Itoa(i) + "]"
		i++
		if err = checkItem(param, item); err != nil {
			return false
		}
		raw := sub(req.Body, item)
		if r := role(item); leading && (r == wire.RoleSystem || r == wire.RoleDeveloper) {
			req.Instructions = append(req.Instructions, raw)
			return true
		}
		leading = false
		req.Messages = append(req.Messages, raw)
		return true
	})
	if err != nil {
		return err
	}
	if i == 0 {
		return apierr.InvalidValue("input", "Invalid 'input': empty array. Expected an array with minimum length 1, but got an empty array instead.")
	}
	return nil
}

// sub returns v's bytes inside body, without copying when gjson knows
// where they are.
func sub(body []byte, v gjson.Result) []byte {
	if v.Index > 0 && v.Index+len(v.Raw) <= len(body) && bytesString(body[v.Index:v.Index+len(v.Raw)]) == v.Raw {
		return body[v.Index : v.Index+len(v.Raw) : v.Index+len(v.Raw)]
	}
	return []byte(v.Raw)
}

// checkItem checks the shape of one input item.
func checkItem(param string, item gjson.Result) error {
	if !item.IsObject() {
		return invalidType(param, "an object", item)
	}
	t := item.Get("type")
	if t.Exists() && t.Type != gjson.String {
		return invalidType(param+".type", "a string", t)
	}
	switch typ := itemType(item); typ {
	case "":
		return missing(param + ".type")
	case typeItemReference:
		return apierr.ItemReference(param)
	case typeMessage:
		return checkMessage(param, item)
	case typeFunctionCall:
		for _, k := range []string{"call_id", "name", "arguments"} {
			if err := requireString(param+"."+k, item.Get(k)); err != nil {
				return err
			}
		}
	case typeFunctionCallOutput:
		if err := requireString(param+".call_id", item.Get("call_id")); err != nil {
			return err
		}
		out := item.Get("output")
		switch {
		case !out.Exists() || out.Type == gjson.Null:
			return missing(param + ".output")
		case out.Type != gjson.String && !out.IsArray():
			return invalidType(param+".output", "a string or an array of content parts", out)
		}
	case typeReasoning:
		if s := item.Get("summary"); s.Exists() && s.Type != gjson.Null && !s.IsArray() {
			return invalidType(param+".summary", "an array", s)
		}
	}
	return nil
}

// checkMessage checks a message item's role and content.
func checkMessage(param string, item gjson.Result) error {
	r := item.Get("role")
	if err := requireString(param+".role", r); err != nil {
		return err
	}
	switch r.Str {
	case wire.RoleUser, wire.RoleSystem, wire.RoleDeveloper, wire.RoleAssistant:
	default:
		return apierr.InvalidValue(param+".role", "Invalid value: '"+r.Str+"'. Supported values are: 'user', 'assistant', 'system', and 'developer'.")
	}
	c := item.Get("content")
	switch {
	case !c.Exists() || c.Type == gjson.Null:
		return missing(param + ".content")
	case c.Type == gjson.String:
		return nil
	case !c.IsArray():
		return invalidType(param+".content", "a string or an array of content parts", c)
	}
	var err error
	j := 0
	c.ForEach(func(_, p gjson.Result) bool {
		pp := param + ".content[" + strconv.Itoa(j) + "]"
		j++
		if !p.IsObject() {
			err = invalidType(pp, "an object", p)
			return false
		}
		pt := p.Get("type")
		if err = requireString(pp+".type", pt); err != nil {
			return false
		}
		switch pt.Str {
		case partInputText, partOutputText:
			err = requireString(pp+".text", p.Get("text"))
		case partRefusal:
			err = requireString(pp+".refusal", p.Get("refusal"))
		}
		return err == nil
	})
	return err
}

// parseTools reads the function tools; the others (web_search, file_search,
// mcp, ...) are left to ToolsRaw.
func parseTools(v gjson.Result) ([]wire.Tool, error) {
	if !v.IsArray() {
		return nil, invalidType("tools", "an array", v)
	}
	var tools []wire.Tool
	var err error
	i := 0
	v.ForEach(func(_, t gjson.Result) bool {
		param := "tools[" + strconv.Itoa(i) + "]"
		i++
		if !t.IsObject() {
			err = invalidType(param, "an object", t)
			return false
		}
		typ := t.Get("type")
		if err = requireString(param+".type", typ); err != nil {
			return false
		}
		if typ.Str != "function" {
			return true
		}
		name := t.Get("name")
		if err = requireString(param+".name", name); err != nil {
			return false
		}
		tool := wire.Tool{Name: name.Str}
		if d := t.Get("description"); d.Type == gjson.String {
			tool.Description = d.Str
		}
		switch p := t.Get("parameters"); {
		case p.IsObject():
			tool.Parameters = []byte(p.Raw)
		case p.Exists() && p.Type != gjson.Null:
			err = invalidType(param+".parameters", "an object", p)
			return false
		}
		tools = append(tools, tool)
		return true
	})
	return tools, err
}

// parseToolChoice reads tool_choice: "auto", "none", "required", or a
// function's name; other objects (a hosted tool, allowed_tools) read as
// "" and stay in the body as sent.
func parseToolChoice(v gjson.Result) (string, error) {
	switch {
	case v.Type == gjson.Null:
		return "", nil
	case v.Type == gjson.String:
		switch v.Str {
		case "auto", "none", "required":
			return v.Str, nil
		}
		return "", apierr.InvalidValue("tool_choice", "Invalid value: '"+v.Str+"'. Supported values are: 'none', 'auto', and 'required'.")
	case v.IsObject():
		if v.Get("type").Str == "function" {
			if err := requireString("tool_choice.name", v.Get("name")); err != nil {
				return "", err
			}
			return v.Get("name").Str, nil
		}
		return "", nil
	}
	return "", invalidType("tool_choice", "a string or an object", v)
}

// parseConversation reads conversation: an id, or {"id"}.
func parseConversation(v gjson.Result) (string, error) {
	switch {
	case v.Type == gjson.Null:
		return "", nil
	case v.Type == gjson.String:
		return v.Str, nil
	case v.IsObject():
		id := v.Get("id")
		if err := requireString("conversation.id", id); err != nil {
			return "", err
		}
		return id.Str, nil
	}
	return "", invalidType("conversation", "a string or an object", v)
}

func optString(param string, v gjson.Result) (string, error) {
	switch v.Type {
	case gjson.Null:
		return "", nil
	case gjson.String:
		return strings.Clone(v.Str), nil
	}
	return "", invalidType(param, "a string", v)
}

func optBool(param string, v gjson.Result, def bool) (bool, error) {
	switch v.Type {
	case gjson.Null:
		return def, nil
	case gjson.True:
		return true, nil
	case gjson.False:
		return false, nil
	}
	return def, invalidType(param, "a boolean", v)
}

func requireString(param string, v gjson.Result) error {
	switch {
	case !v.Exists() || v.Type == gjson.Null:
		return missing(param)
	case v.Type != gjson.String:
		return invalidType(param, "a string", v)
	}
	return nil
}

func missing(param string) error {
	return apierr.Invalid("missing_required_parameter", param, "Missing required parameter: '"+param+"'.")
}

func invalidType(param, want string, got gjson.Result) error {
	what := "request body"
	if param != "" {
		what = "'" + param + "'"
	}
	return apierr.Invalid("invalid_type", param, "Invalid type for "+what+": expected "+want+", but got "+jsonscan.TypeName(got.Raw)+" instead.")
}
