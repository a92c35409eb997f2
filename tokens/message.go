package tokens

import (
	"github.com/tidwall/gjson"
	"github.com/tidwall/pretty"
)

// Per-message constants of OpenAI's counting recipe ("How to count tokens
// with tiktoken"), and the estimates this package adds where the recipe is
// silent.
const (
	// ReplyPriming is added once per request: every reply is primed with
	// <|start|>assistant<|message|>.
	ReplyPriming = 3

	// MessageOverhead frames every message (<|start|>{role}<|message|>…<|end|>).
	MessageOverhead = 3
	perMessage      = MessageOverhead
	// perName is added when a message carries a name.
	perName = 1
	// perToolCall is the estimated framing of one assistant tool call,
	// beside its name and arguments.
	perToolCall = 3
	// perTool is the estimated framing of one tool definition, beside its
	// name, description and parameters.
	perTool = 8
	// audioPartTokens estimates an input_audio part without decoding it:
	// about 50 seconds of speech at OpenAI's ten audio tokens a second.
	audioPartTokens = 500
	// FilePart estimates a file part (a PDF, say) without reading it:
	// about two pages of text and page images.
	FilePart = 2000
)

// Message returns the tokens of one chat message given as raw JSON, per
// OpenAI's recipe: 3 per message, plus the tokens of the string values of
// role, content (a string, or its text and refusal parts), name (plus 1),
// tool_call_id and refusal. Beyond the recipe, as estimates: each assistant
// tool call counts its function name and arguments plus 3 (a legacy
// function_call likewise), image parts count per Image, and input_audio and
// file parts count a fixed 500 and 2000 tokens. Unknown fields count
// nothing. raw is not retained; malformed JSON counts what can be read.
func (c *Counter) Message(enc Encoding, raw []byte) int {
	m := gjson.Parse(bytesString(raw))
	n := perMessage
	m.ForEach(func(key, v gjson.Result) bool {
		switch key.Str {
		case "role":
			n += c.role(enc, v.Str)
		case "content":
			n += c.content(enc, v)
		case "name":
			n += c.str(enc, v) + perName
		case "tool_call_id", "refusal":
			n += c.str(enc, v)
		case "tool_calls":
			v.ForEach(func(_, call gjson.Result) bool {
				n += c.call(enc, call)
				return true
			})
		case "function_call":
			n += c.call(enc, v)
		}
		return true
	})
	return n
}

// role counts a role value; the five roles of the API are one token each in
// both encodings (checked by the tests), which saves a count.
func (c *Counter) role(enc Encoding, role string) int {
	switch role {
	case "user", "assistant", "system", "tool", "developer":
		return 1
	}
	return c.Text(enc, role)
}

// str counts v if it is a JSON string, else nothing.
func (c *Counter) str(enc Encoding, v gjson.Result) int {
	if v.Type != gjson.String {
		return 0
	}
	return c.Text(enc, v.Str)
}

// content counts a message's content: a string or an array of parts.
func (c *Counter) content(enc Encoding, v gjson.Result) int {
	if v.Type == gjson.String {
		return c.Text(enc, v.Str)
	}
	if !v.IsArray() {
		return 0
	}
	n := 0
	v.ForEach(func(_, part gjson.Result) bool {
		n += c.part(enc, part)
		return true
	})
	return n
}

// part counts one content part.
func (c *Counter) part(enc Encoding, p gjson.Result) int {
	switch p.Get("type").Str {
	case "text":
		return c.str(enc, p.Get("text"))
	case "refusal":
		return c.str(enc, p.Get("refusal"))
	case "image_url":
		return imagePart(p.Get("image_url"))
	case "input_audio":
		return audioPartTokens
	case "file":
		return FilePart
	}
	return c.str(enc, p.Get("text"))
}

// call counts one tool call (or a legacy function_call): the name and
// arguments of its function (or the name and input of a custom tool call),
// plus perToolCall.
func (c *Counter) call(enc Encoding, call gjson.Result) int {
	if !call.IsObject() {
		return 0
	}
	f := call.Get("function")
	if !f.Exists() {
		if t := call.Get("type").Str; t != "" {
			f = call.Get(gjson.Escape(t))
		}
		if !f.Exists() {
			f = call // a legacy function_call holds name and arguments itself
		}
	}
	n := perToolCall + c.str(enc, f.Get("name"))
	if args := f.Get("arguments"); args.Exists() {
		n += c.str(enc, args)
	} else {
		n += c.str(enc, f.Get("input"))
	}
	return n
}

// Call returns the tokens of one tool call of the given function name and
// arguments (JSON text), as Message counts a call in tool_calls: for a
// codec that counts its own messages without writing them as chat.
func (c *Counter) Call(enc Encoding, name, arguments string) int {
	return perToolCall + c.Text(enc, name) + c.Text(enc, arguments)
}

// Tools returns an estimate of the tokens of a request's tools array given
// as raw JSON, in any protocol's shape: for each function, the tokens of
// its name, description and compact schema JSON, plus a small per-tool
// overhead of 8. OpenAI
// renders tools into the prompt in an undocumented form, so this is an
// estimate. It returns 0 for nil, empty or non-array input.
func (c *Counter) Tools(enc Encoding, raw []byte) int {
	tools := gjson.Parse(bytesString(raw))
	if !tools.IsArray() {
		return 0
	}
	n := 0
	tools.ForEach(func(_, t gjson.Result) bool {
		if !t.IsObject() {
			return true
		}
		if decls := t.Get("functionDeclarations"); decls.IsArray() {
			// Gemini: one tool holds many functions.
			decls.ForEach(func(_, d gjson.Result) bool {
				if d.IsObject() {
					n += c.tool(enc, d)
				}
				return true
			})
			return true
		}
		def := t.Get("function")
		if !def.Exists() {
			if typ := t.Get("type").Str; typ != "" {
				def = t.Get(gjson.Escape(typ)) // e.g. {"type":"custom","custom":{...}}
			}
		}
		if !def.IsObject() {
			def = t
		}
		n += c.tool(enc, def)
		return true
	})
	return n
}

// tool counts one function's definition: its name, its description and
// its compact schema, in any protocol's key (chat's and the Responses
// API's parameters, Anthropic's input_schema, Gemini's
// parametersJsonSchema) or a custom tool's format.
func (c *Counter) tool(enc Encoding, def gjson.Result) int {
	n := perTool + c.str(enc, def.Get("name")) + c.str(enc, def.Get("description"))
	for _, key := range [...]string{"parameters", "input_schema", "parametersJsonSchema", "format"} {
		if p := def.Get(key); p.IsObject() {
			n += c.Bytes(enc, pretty.Ugly([]byte(p.Raw)))
		}
	}
	return n
}
