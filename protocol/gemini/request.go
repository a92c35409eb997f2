package gemini

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/wire"
)

// Ingress is the client side of the Gemini API: it reads a client's
// generateContent request and renders answers as GenerateContentResponse
// objects and their server-sent events. The zero value is ready to use.
type Ingress struct{}

var (
	_ wire.Ingress     = Ingress{}
	_ wire.PathIngress = Ingress{}
	_ wire.ErrorShaper = Ingress{}
)

// The routes the Ingress serves: POST {prefix}{model}:{method}, under
// v1beta (the REST documentation's) or v1 (the Gen AI SDKs' default).
const (
	methodGenerate = ":generateContent"
	methodStream   = ":streamGenerateContent"
)

var routePrefixes = [][]byte{[]byte("/v1beta/models/"), []byte("/v1/models/")}

// Serves reports whether path is /v1beta/models/{model}:generateContent
// or :streamGenerateContent, or the same under /v1 (model one segment,
// not empty). No other API has a POST there.
func (Ingress) Serves(path []byte) bool {
	_, _, ok := route(path)
	return ok
}

// route reads a request path into its model and whether it streams.
func route(path []byte) (model []byte, stream, ok bool) {
	var rest []byte
	for _, p := range routePrefixes {
		if rest, ok = bytes.CutPrefix(path, p); ok {
			break
		}
	}
	if !ok {
		return nil, false, false
	}
	if model, ok = bytes.CutSuffix(rest, []byte(methodStream)); ok {
		stream = true
	} else if model, ok = bytes.CutSuffix(rest, []byte(methodGenerate)); !ok {
		return nil, false, false
	}
	if len(model) == 0 || bytes.IndexByte(model, '/') >= 0 || bytes.IndexByte(model, ':') >= 0 {
		return nil, false, false
	}
	return model, stream, true
}

// ParseRequest decodes a request body with no path to name its model: it
// is refused. Gemini requests name their model and method in the path
// (ParseRequestAt).
func (Ingress) ParseRequest(body []byte) (*wire.Request, error) {
	return nil, invalid("model", "a Gemini request names its model in the path: POST /v1beta/models/{model}:generateContent")
}

// ParseRequestAt decodes a generateContent request to path
// (https://ai.google.dev/api/generate-content#request-body): the model and
// Stream come from the path (:streamGenerateContent streams, as server-sent
// events whatever "alt" asks), the rest from the body. It checks what the
// API requires: an object whose "contents" is a non-empty array of
// contents with role "user", "model" or none, each with a non-empty array
// of parts that hold data, a functionCall and functionResponse with a
// name. Errors are apierr values with the API's words, rendered in its
// shape by ErrorBody.
//
// systemInstruction becomes the one Instructions message (see the package
// doc); tools' functionDeclarations are read into Tools (parameters or
// parametersJsonSchema as the schema), toolConfig's functionCallingConfig
// into ToolChoice, generationConfig's maxOutputTokens, temperature, topP,
// stopSequences and candidateCount into their fields. Every other member
// stays in Body, which AppendBody sends on as it came.
//
// The Request's strings and Messages alias body, which must outlive it
// and not change.
func (Ingress) ParseRequestAt(path, body []byte) (*wire.Request, error) {
	model, stream, ok := route(path)
	if !ok {
		return nil, &apierr.Error{Status: 404, Type: "invalid_request_error", Code: "unknown_url", Message: "Unknown request URL."}
	}
	if chat.CheckDepth(body) != nil || !gjson.ValidBytes(body) {
		return nil, invalid("", "Invalid JSON payload received.")
	}
	root := parse(body)
	if !root.IsObject() {
		return nil, invalid("", "Invalid JSON payload received. Expected an object.")
	}
	req := &wire.Request{Protocol: wire.Gemini, Body: body, Model: string(model), Stream: stream, Choices: 1}
	var contents gjson.Result
	var err error
	root.ForEach(func(k, v gjson.Result) bool {
		switch camel(k.Str) {
		case "contents":
			contents = v
		case "systemInstruction":
			req.Instructions, err = parseInstruction(v)
		case "tools":
			req.ToolsRaw = []byte(v.Raw)
			req.Tools, err = parseTools(v)
		case "toolConfig":
			req.ToolChoice, err = parseToolConfig(v)
		case "generationConfig":
			err = parseGenerationConfig(req, v)
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	switch {
	case !contents.Exists() || contents.Type == gjson.Null:
		return nil, invalid("contents", "contents is not specified")
	case !contents.IsArray():
		return nil, invalid("contents", "Invalid value (Starting an object on a scalar field)")
	}
	i := 0
	contents.ForEach(func(_, c gjson.Result) bool {
		raw := body[c.Index : c.Index+len(c.Raw) : c.Index+len(c.Raw)]
		if err = checkContent(i, c, raw); err != nil {
			return false
		}
		req.Messages = append(req.Messages, raw)
		i++
		return true
	})
	if err != nil {
		return nil, err
	}
	if i == 0 {
		return nil, invalid("contents", "contents is not specified")
	}
	return req, nil
}

// invalid is the API's INVALID_ARGUMENT answer about field param of the
// GenerateContentRequest.
func invalid(param, message string) *apierr.Error {
	msg := message
	if param != "" {
		msg = "* GenerateContentRequest." + param + ": " + message
	}
	return &apierr.Error{Status: 400, Type: "invalid_request_error", Code: "invalid_value", Param: param, Message: msg}
}

// checkContent checks contents[i], c parsed from raw.
func checkContent(i int, c gjson.Result, raw []byte) error {
	if textsOnly(raw) {
		return nil
	}
	return checkTree(i, c)
}

// checkTree checks contents[i], of any shape, through its parsed tree.
func checkTree(i int, c gjson.Result) error {
	p := "contents[" + strconv.Itoa(i) + "]"
	if !c.IsObject() {
		return invalid(p, "Invalid value (a content is an object)")
	}
	if r := c.Get("role"); r.Exists() && (r.Type != gjson.String || r.Str != roleUser && r.Str != roleModel && r.Str != "") {
		return invalid(p+".role", "Please use a valid role: user, model.")
	}
	parts := c.Get("parts")
	if !parts.IsArray() {
		return invalid(p+".parts", "contents.parts must not be empty.")
	}
	var err error
	j := 0
	parts.ForEach(func(_, part gjson.Result) bool {
		err = checkPart(p+".parts["+strconv.Itoa(j)+"]", part)
		j++
		return err == nil
	})
	if err == nil && j == 0 {
		err = invalid(p+".parts", "contents.parts must not be empty.")
	}
	return err
}

// textsOnly reports whether raw is a valid content of the shape most
// have, a role of the API's and text parts alone, read in one pass (the
// checks below look each part up once per member it may hold).
func textsOnly(raw []byte) bool {
	parts := 0
	role, ok := scanTexts(raw, func(string) { parts++ })
	return ok && parts > 0 && role != wire.RoleSystem
}

// dataKeys are the members one of which a part must hold.
var dataKeys = []string{keyText, keyInlineData, keyFileData, keyFunctionCall, keyFunctionResponse, "executableCode", "codeExecutionResult"}

// checkPart checks one part: an object with exactly one data member, a
// function call or response with a name.
func checkPart(p string, part gjson.Result) error {
	if !part.IsObject() {
		return invalid(p, "Invalid value (a part is an object)")
	}
	n := 0
	for _, k := range dataKeys {
		if get(part, k).Exists() {
			n++
		}
	}
	if n != 1 {
		return invalid(p+".data", "required oneof field 'data' must have one initialized field")
	}
	if t := part.Get(keyText); t.Exists() && t.Type != gjson.String {
		return invalid(p+".text", "Invalid value (text is a string)")
	}
	for _, k := range []string{keyFunctionCall, keyFunctionResponse} {
		if fn := get(part, k); fn.Exists() {
			if !fn.IsObject() {
				return invalid(p+"."+k, "Invalid value (an object)")
			}
			if fn.Get("name").Type != gjson.String || fn.Get("name").Str == "" {
				return invalid(p+"."+k+".name", "Name cannot be empty.")
			}
		}
	}
	return nil
}

// parseInstruction reads systemInstruction, a content of text parts, into
// one instruction message {"role":"system","parts":[…]}.
func parseInstruction(v gjson.Result) ([][]byte, error) {
	if v.Type == gjson.Null {
		return nil, nil
	}
	if !v.IsObject() {
		return nil, invalid("system_instruction", "Invalid value (a content is an object)")
	}
	parts := v.Get("parts")
	if !parts.IsArray() {
		return nil, invalid("system_instruction.parts", "Invalid value (a list of parts)")
	}
	var err error
	n := 0
	parts.ForEach(func(_, p gjson.Result) bool {
		if p.Get(keyText).Type != gjson.String {
			err = invalid("system_instruction.parts["+strconv.Itoa(n)+"]", "a system instruction holds text parts only")
		}
		n++
		return err == nil
	})
	if err != nil || n == 0 {
		return nil, err
	}
	b := make([]byte, 0, len(parts.Raw)+32)
	b = append(b, `{"role":"system","parts":`...)
	b = append(b, parts.Raw...)
	return [][]byte{append(b, '}')}, nil
}

// parseTools reads the functionDeclarations of "tools" (other tools,
// googleSearch, codeExecution, …, are the API's own and stay in
// ToolsRaw).
func parseTools(v gjson.Result) ([]wire.Tool, error) {
	if v.Type == gjson.Null {
		return nil, nil
	}
	if !v.IsArray() {
		return nil, invalid("tools", "Invalid value (a list of tools)")
	}
	var tools []wire.Tool
	var err error
	i := 0
	v.ForEach(func(_, t gjson.Result) bool {
		j := 0
		get(t, "functionDeclarations").ForEach(func(_, d gjson.Result) bool {
			p := "tools[" + strconv.Itoa(i) + "].function_declarations[" + strconv.Itoa(j) + "]"
			j++
			name := d.Get("name")
			if name.Type != gjson.String || name.Str == "" {
				err = invalid(p+".name", "Name cannot be empty.")
				return false
			}
			schema := d.Get("parameters")
			if !schema.Exists() {
				schema = get(d, "parametersJsonSchema")
			}
			var params []byte
			if schema.IsObject() {
				params = []byte(schema.Raw)
			}
			tools = append(tools, wire.Tool{Name: name.Str, Description: d.Get("description").Str, Parameters: params})
			return true
		})
		i++
		return err == nil
	})
	return tools, err
}

// parseToolConfig maps functionCallingConfig to the canonical choice:
// AUTO auto, NONE none, ANY "required", or the one function ANY allows.
func parseToolConfig(v gjson.Result) (string, error) {
	fc := get(v, "functionCallingConfig")
	if !fc.Exists() {
		return "", nil
	}
	switch mode := strings.ToUpper(fc.Get("mode").Str); mode {
	case "", "MODE_UNSPECIFIED", "AUTO", "VALIDATED":
		return "auto", nil
	case "NONE":
		return "none", nil
	case "ANY":
		if names := get(fc, "allowedFunctionNames"); names.IsArray() && len(names.Array()) == 1 {
			return names.Array()[0].Str, nil
		}
		return "required", nil
	}
	return "", invalid("tool_config.function_calling_config.mode", "Invalid value: should be AUTO, ANY, NONE or VALIDATED")
}

// parseGenerationConfig reads the generationConfig members Recall uses.
func parseGenerationConfig(req *wire.Request, v gjson.Result) error {
	if v.Type == gjson.Null {
		return nil
	}
	if !v.IsObject() {
		return invalid("generation_config", "Invalid value (an object)")
	}
	var err error
	v.ForEach(func(k, f gjson.Result) bool {
		name := camel(k.Str)
		p := "generation_config." + snake(name)
		switch name {
		case "maxOutputTokens":
			if f.Type != gjson.Number || f.Num != float64(int64(f.Num)) || f.Num < 1 {
				err = invalid(p, "Invalid value (a positive integer)")
			}
			req.MaxTokens = int(min(f.Num, 1<<31))
		case "candidateCount":
			if f.Type != gjson.Number || f.Num < 1 {
				err = invalid(p, "Invalid value (a positive integer)")
			}
			req.Choices = int(min(f.Num, 8))
		case "temperature", "topP":
			if f.Type != gjson.Number {
				err = invalid(p, "Invalid value (a number)")
				return false
			}
			n := f.Num
			if name == "temperature" {
				req.Temperature = &n
			} else {
				req.TopP = &n
			}
		case "stopSequences":
			if !f.IsArray() {
				err = invalid(p, "Invalid value (a list of strings)")
				return false
			}
			f.ForEach(func(_, s gjson.Result) bool {
				req.Stop = append(req.Stop, s.Str)
				return true
			})
		}
		return err == nil
	})
	return err
}
