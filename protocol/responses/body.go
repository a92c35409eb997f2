package responses

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/protocol/internal/body"
	"github.com/recallproxy/recall/wire"
)

// Upstream is the wire.Upstream of the Responses API: it calls an
// upstream's POST /responses. Its zero value is ready to use.
type Upstream struct{}

// Path returns "/responses".
func (Upstream) Path() string { return "/responses" }

// NewAssembler returns an Assembler for a streamed answer.
func (Upstream) NewAssembler() wire.Assembler { return &Assembler{} }

// encryptedReasoning is the include value that makes the upstream return
// reasoning items with encrypted_content, so that Recall can send them
// back on later turns without the upstream storing anything.
const encryptedReasoning = "reasoning.encrypted_content"

// AppendBody appends the body of a request to a Responses upstream. The
// upstream keeps no state: store is false, previous_response_id and
// conversation are never sent, and for a reasoning model include asks for
// reasoning.encrypted_content (a model without reasoning refuses it with a
// 400, so it is asked for only when the model is one, see
// reasoningModel).
//
// When req came in as Responses, its body is kept as sent (reasoning,
// include, text, metadata, parallel_tool_calls and any unknown field),
// with input replaced by instructions and msgs: the instruction item made
// from the body's own instructions string stays in "instructions" and is
// not repeated in input; other instructions (leading system and
// developer items, a summary) lead input. From another ingress the body
// is built from req's canonical fields, the instructions' text joined
// into "instructions".
func (Upstream) AppendBody(dst []byte, req *wire.Request, instructions, msgs [][]byte) ([]byte, error) {
	if req.Protocol == wire.Responses && len(req.Body) > 0 {
		return appendOwnBody(dst, req, instructions, msgs), nil
	}
	return appendFreshBody(dst, req, instructions, msgs)
}

// appendOwnBody is AppendBody for a request that came in as Responses.
func appendOwnBody(dst []byte, req *wire.Request, instructions, msgs [][]byte) []byte {
	root := parse(req.Body)
	if s := root.Get("instructions"); s.Type == gjson.String && s.Str != "" &&
		len(instructions) > 0 && bytes.Equal(instructions[0], InstructionsItem(s.Str)) {
		instructions = instructions[1:]
	}
	wantInclude := reasoningModel(req.Model) || root.Get("reasoning").IsObject()
	dst = append(dst, '{')
	first := true
	comma := func() {
		if !first {
			dst = append(dst, ',')
		}
		first = false
	}
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.String() {
		case "input", "store", "previous_response_id", "conversation", "background":
			return true
		case "include":
			if v.IsArray() {
				comma()
				dst = appendInclude(append(dst, `"include":`...), v, wantInclude)
				wantInclude = false
				return true
			}
			if v.Type == gjson.Null {
				return true
			}
		}
		comma()
		dst = append(dst, k.Raw...)
		dst = append(dst, ':')
		dst = append(dst, v.Raw...)
		return true
	})
	comma()
	dst = appendInput(append(dst, `"input":`...), instructions, msgs)
	dst = append(dst, `,"store":false`...)
	if wantInclude {
		dst = append(dst, `,"include":["`+encryptedReasoning+`"]`...)
	}
	return append(dst, '}')
}

// appendInclude appends the include array v with reasoning's encrypted
// content added when want is set and v lacks it.
func appendInclude(dst []byte, v gjson.Result, want bool) []byte {
	if !want || strings.Contains(v.Raw, `"`+encryptedReasoning+`"`) {
		return append(dst, v.Raw...)
	}
	dst = append(dst, '[')
	v.ForEach(func(_, e gjson.Result) bool {
		dst = append(dst, e.Raw...)
		dst = append(dst, ',')
		return true
	})
	return append(dst, `"`+encryptedReasoning+`"]`...)
}

// appendInput appends the input array: instructions, then msgs.
func appendInput(dst []byte, instructions, msgs [][]byte) []byte {
	dst = append(dst, '[')
	n := 0
	for _, list := range [2][][]byte{instructions, msgs} {
		for _, m := range list {
			if n > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, m...)
			n++
		}
	}
	return append(dst, ']')
}

// minOutputTokens is the least max_output_tokens the Responses API takes;
// a smaller cap from another protocol is raised to it rather than refused.
const minOutputTokens = 16

// appendFreshBody is AppendBody for a request that came in another
// protocol.
func appendFreshBody(dst []byte, req *wire.Request, instructions, msgs [][]byte) ([]byte, error) {
	dst = append(dst, `{"model":`...)
	dst = gjson.AppendJSONString(dst, req.Model)
	var text strings.Builder
	for _, raw := range instructions {
		m, err := Codec{}.Decode(raw)
		if err != nil {
			return dst, err
		}
		for _, p := range m.Parts {
			if p.Kind == wire.Text && p.Text != "" {
				if text.Len() > 0 {
					text.WriteString("\n\n")
				}
				text.WriteString(p.Text)
			}
		}
	}
	if text.Len() > 0 {
		dst = gjson.AppendJSONString(append(dst, `,"instructions":`...), text.String())
	}
	dst = appendInput(append(dst, `,"input":`...), nil, msgs)
	if len(req.Tools) > 0 {
		dst = append(dst, `,"tools":[`...)
		for i, t := range req.Tools {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"type":"function","name":`...)
			dst = gjson.AppendJSONString(dst, t.Name)
			if t.Description != "" {
				dst = gjson.AppendJSONString(append(dst, `,"description":`...), t.Description)
			}
			params := t.Parameters
			if len(params) == 0 {
				params = []byte(`{"type":"object","properties":{}}`)
			}
			// The Responses API makes function tools strict unless told
			// otherwise; chat completions and Messages clients wrote
			// schemas that strict mode may refuse.
			dst = append(append(dst, `,"parameters":`...), params...)
			dst = append(dst, `,"strict":false}`...)
		}
		dst = append(dst, ']')
	}
	switch req.ToolChoice {
	case "":
	case "auto", "none", "required":
		dst = gjson.AppendJSONString(append(dst, `,"tool_choice":`...), req.ToolChoice)
	default:
		dst = append(dst, `,"tool_choice":{"type":"function","name":`...)
		dst = append(gjson.AppendJSONString(dst, req.ToolChoice), '}')
	}
	dst = body.AppendSampling(dst, req, "", nil)
	if req.MaxTokens > 0 {
		dst = strconv.AppendInt(append(dst, `,"max_output_tokens":`...), int64(max(req.MaxTokens, minOutputTokens)), 10)
	}
	if req.Stream {
		dst = append(dst, `,"stream":true`...)
	}
	dst = append(dst, `,"store":false`...)
	if reasoningModel(req.Model) {
		dst = append(dst, `,"include":["`+encryptedReasoning+`"]`...)
	}
	return append(dst, '}'), nil
}

// reasoningModel reports whether model is one of OpenAI's reasoning models
// (o1, o3, o4-mini, gpt-5 and its variants other than gpt-5-chat), which
// return encrypted reasoning; the others refuse include's
// reasoning.encrypted_content with "Encrypted content is not supported
// with this model".
func reasoningModel(model string) bool {
	if len(model) >= 2 && model[0] == 'o' && model[1] >= '0' && model[1] <= '9' {
		return true
	}
	return strings.HasPrefix(model, "gpt-5") && !strings.Contains(model, "-chat")
}

// WithTools implements wire.Upstream.
func (Upstream) WithTools(raw []byte, tools []wire.Tool, stream bool) ([]byte, error) {
	return body.WithTools(raw, tools, stream, func(item []byte, t wire.Tool) []byte {
		item = append(item, `{"type":"function","name":`...)
		item = gjson.AppendJSONString(item, t.Name)
		item = append(item, `,"description":`...)
		item = gjson.AppendJSONString(item, t.Description)
		item = append(item, `,"parameters":`...)
		item = append(item, t.Parameters...)
		return append(item, '}')
	})
}
