package gemini

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/protocol/internal/body"
	"github.com/recallproxy/recall/wire"
)

// ErrUpstream is returned (wrapped) for an answer or stream event in
// which the upstream reported an error in its own words.
var ErrUpstream = fmt.Errorf("gemini: %w", wire.ErrUpstream)

// ErrBadAnswer is returned (wrapped) for an answer that is not a
// GenerateContentResponse with a candidate.
var ErrBadAnswer = errors.New("gemini: not a generateContent answer")

// KeyHeaderName is the header the Gemini API reads its key from.
const KeyHeaderName = "x-goog-api-key"

// Upstream is the upstream side of the Gemini API: a gemini upstream,
// whose base_url is the API root with its version
// (https://generativelanguage.googleapis.com/v1beta). The zero value is
// ready to use.
type Upstream struct{}

var (
	_ wire.Upstream  = Upstream{}
	_ wire.ModelPath = Upstream{}
	_ wire.KeyHeader = Upstream{}
)

// Path returns "/models", the collection PathFor names a model of: a
// Gemini request's path names its model (PathFor).
func (Upstream) Path() string { return "/models" }

// PathFor returns /models/{model}:generateContent, or
// :streamGenerateContent with the query alt=sse (server-sent events, not
// the API's default JSON array) for a stream.
func (Upstream) PathFor(model string, stream bool) (path, query string) {
	if stream {
		return "/models/" + model + methodStream, "alt=sse"
	}
	return "/models/" + model + methodGenerate, ""
}

// KeyHeader returns KeyHeaderName.
func (Upstream) KeyHeader() string { return KeyHeaderName }

// AppendBody appends the body of a generateContent request.
//
// A request that came in as Gemini keeps its body: every member as the
// client sent it (safetySettings, generationConfig, cachedContent, tools,
// …), "contents" replaced by msgs, and systemInstruction as sent when
// instructions are the request's own (otherwise, with a summary added,
// the instructions' text parts).
//
// A request from another protocol gets a fresh body: contents,
// systemInstruction (the instructions' text, then any system message
// found among msgs, which Gemini does not take among contents), tools as
// functionDeclarations with parametersJsonSchema (the canonical JSON
// Schema as it is), toolConfig, and generationConfig with
// maxOutputTokens, temperature, topP, stopSequences and candidateCount.
// The model and stream are in the path (PathFor).
func (Upstream) AppendBody(dst []byte, req *wire.Request, instructions, msgs [][]byte) ([]byte, error) {
	system, kept := splitContents(msgs)
	if req.Protocol == wire.Gemini {
		return appendSameBody(dst, req, instructions, system, kept)
	}
	dst = append(dst, `{"contents":`...)
	dst = body.AppendArray(dst, kept)
	if sys := appendSystem(nil, append(append([][]byte(nil), instructions...), system...)); sys != nil {
		dst = append(dst, `,"systemInstruction":`...)
		dst = append(dst, sys...)
	}
	if len(req.Tools) > 0 {
		dst = append(dst, `,"tools":[`...)
		dst = appendDeclarations(dst, req.Tools)
		dst = append(dst, ']')
	}
	switch req.ToolChoice {
	case "":
	case "auto":
		dst = append(dst, `,"toolConfig":{"functionCallingConfig":{"mode":"AUTO"}}`...)
	case "none":
		dst = append(dst, `,"toolConfig":{"functionCallingConfig":{"mode":"NONE"}}`...)
	case "required":
		dst = append(dst, `,"toolConfig":{"functionCallingConfig":{"mode":"ANY"}}`...)
	default:
		dst = append(dst, `,"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":[`...)
		dst = gjson.AppendJSONString(dst, req.ToolChoice)
		dst = append(dst, "]}}"...)
	}
	var gc []byte
	member := func(k string) {
		if len(gc) > 0 {
			gc = append(gc, ',')
		}
		gc = append(append(gc, k...), ':')
	}
	if req.MaxTokens > 0 {
		member(`"maxOutputTokens"`)
		gc = strconv.AppendInt(gc, int64(req.MaxTokens), 10)
	}
	if req.Temperature != nil {
		member(`"temperature"`)
		gc = strconv.AppendFloat(gc, *req.Temperature, 'g', -1, 64)
	}
	if req.TopP != nil {
		member(`"topP"`)
		gc = strconv.AppendFloat(gc, *req.TopP, 'g', -1, 64)
	}
	if len(req.Stop) > 0 {
		member(`"stopSequences"`)
		gc = append(gc, '[')
		for i, s := range req.Stop {
			if i > 0 {
				gc = append(gc, ',')
			}
			gc = gjson.AppendJSONString(gc, s)
		}
		gc = append(gc, ']')
	}
	if req.Choices > 1 {
		member(`"candidateCount"`)
		gc = strconv.AppendInt(gc, int64(req.Choices), 10)
	}
	if len(gc) > 0 {
		dst = append(dst, `,"generationConfig":{`...)
		dst = append(dst, gc...)
		dst = append(dst, '}')
	}
	return append(dst, '}'), nil
}

// splitContents returns the system messages among msgs, which Gemini
// does not take among contents, and the others, a model content's first
// call signed (signCalls). Only a content whose bytes may hold a call or
// the system role is parsed: Google writes a content's role after its
// parts, so reading the role of every content read all their text.
func splitContents(msgs [][]byte) (system, kept [][]byte) {
	kept = make([][]byte, 0, len(msgs))
	for _, m := range msgs {
		call := mayCall(m)
		if !call && !maySystem(m) {
			kept = append(kept, m)
			continue
		}
		switch parse(m).Get("role").Str {
		case roleSystem:
			system = append(system, m)
		case roleModel:
			if call {
				m = signParsed(m)
			}
			kept = append(kept, m)
		default: // a user's content carries no call to sign
			kept = append(kept, m)
		}
	}
	return system, kept
}

// SkipSignature is the thoughtSignature Google documents for a function
// call whose own signature is not known (a call made by another model, or
// stored in another protocol): Gemini 3 refuses a model content whose
// first call carries no signature.
const SkipSignature = "skip_thought_signature_validator"

var _ wire.Signer = Codec{}

// Signed is signCalls (wire.Signer): AppendBody sends every content so,
// and the inspector's render shows it so.
func (Codec) Signed(raw []byte) []byte { return signCalls(raw) }

// signCalls returns a model content whose first functionCall carries no
// thoughtSignature with SkipSignature on it, and any other content as it
// is. Gemini signs the first call of a step; only it is checked.
func signCalls(m []byte) []byte {
	if !mayCall(m) {
		return m
	}
	return signParsed(m)
}

// mayCall reports whether content m may hold a functionCall member: the
// name's end in either spelling (Call", _call") or a \u escape that could
// spell it, as get finds it. The searches start from a capital, an
// underscore and a backslash, which prose has few of (a search for the
// name from its first letters stopped at every f or u of the text).
func mayCall(m []byte) bool {
	return bytes.Contains(m, []byte(`Call"`)) || bytes.Contains(m, []byte(`_call"`)) || bytes.Contains(m, []byte(`\u`))
}

// maySystem reports whether content m's role may be "system": the value
// spelled out, or a \u escape that could spell it.
func maySystem(m []byte) bool {
	return bytes.Contains(m, []byte(`"system"`)) || bytes.Contains(m, []byte(`\u`))
}

// signParsed is signCalls past mayCall's filter.
func signParsed(m []byte) []byte {
	c := parse(m)
	if c.Get("role").Str != roleModel {
		return m
	}
	var first gjson.Result
	c.Get("parts").ForEach(func(_, p gjson.Result) bool {
		if get(p, keyFunctionCall).IsObject() {
			first = p
			return false
		}
		return true
	})
	if !first.Exists() || get(first, keySignature).Exists() {
		return m
	}
	raw := strings.TrimRight(first.Raw, " \t\r\n")
	out := make([]byte, 0, len(m)+len(SkipSignature)+24)
	out = append(out, m[:first.Index]...)
	out = append(out, raw[:len(raw)-1]...)
	out = append(out, `,"thoughtSignature":"`+SkipSignature+`"}`...)
	return append(out, m[first.Index+len(first.Raw):]...)
}

// appendDeclarations appends one tool object of tools' functionDeclarations.
func appendDeclarations(dst []byte, tools []wire.Tool) []byte {
	dst = append(dst, `{"functionDeclarations":[`...)
	for i, t := range tools {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"name":`...)
		dst = gjson.AppendJSONString(dst, t.Name)
		if t.Description != "" {
			dst = append(dst, `,"description":`...)
			dst = gjson.AppendJSONString(dst, t.Description)
		}
		if len(t.Parameters) > 0 && parse(t.Parameters).IsObject() {
			dst = append(dst, `,"parametersJsonSchema":`...)
			dst = append(dst, t.Parameters...)
		}
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

// appendSameBody is AppendBody for a request that came in as Gemini:
// every member as it came but contents, and systemInstruction unless
// instructions are the request's own and no system message came among
// msgs.
func appendSameBody(dst []byte, req *wire.Request, instructions, system, msgs [][]byte) ([]byte, error) {
	root := parse(req.Body)
	if !root.IsObject() {
		return dst, fmt.Errorf("gemini: append body: request body is not an object")
	}
	own := len(system) == 0 && slices.EqualFunc(instructions, req.Instructions, bytes.Equal)
	var sys []byte
	if !own {
		sys = appendSystem(nil, append(append([][]byte(nil), instructions...), system...))
	}
	return sameBody.Append(dst, root, msgs, sys, own), nil
}

var sameBody = body.Splice{Messages: "contents", System: "systemInstruction", Name: camel}

// appendSystem appends systemInstruction, {"parts":[…]}, the text parts
// of instructions (seam instruction messages of this protocol), or
// returns nil when they hold no text.
func appendSystem(dst []byte, instructions [][]byte) []byte {
	var parts []string
	for _, in := range instructions {
		parse(in).Get("parts").ForEach(func(_, p gjson.Result) bool {
			if t := p.Get(keyText); t.Type == gjson.String && t.Str != "" {
				parts = append(parts, `{"text":`+t.Raw+`}`)
			}
			return true
		})
	}
	if len(parts) == 0 {
		return nil
	}
	dst = append(dst, `{"parts":`...)
	dst = append(dst, body.JoinArray(parts)...)
	return append(dst, '}')
}

// WithTools implements wire.Upstream: tools are one more tools element of
// functionDeclarations. stream is the path's (PathFor), not the body's.
func (Upstream) WithTools(body []byte, tools []wire.Tool, _ bool) ([]byte, error) {
	if len(tools) == 0 {
		return body, nil
	}
	return sjson.SetRawBytes(body, "tools.-1", appendDeclarations(nil, tools))
}

// ParseAnswer reads a non-streamed answer, a GenerateContentResponse
// (https://ai.google.dev/api/generate-content#generatecontentresponse):
// Stored is the first candidate's content as it came, its role "model"
// (thought parts and signatures included), Message its canonical form,
// Stop and Usage mapped. An error object wraps ErrUpstream; an answer
// without a candidate (a blocked prompt) or anything else wraps
// ErrBadAnswer. The Answer shares no memory with body.
func (Upstream) ParseAnswer(body []byte) (wire.Answer, error) {
	if chat.CheckDepth(body) != nil || !gjson.ValidBytes(body) {
		return wire.Answer{}, fmt.Errorf("gemini: parse answer: %w", ErrBadAnswer)
	}
	root := parse(body)
	if e := root.Get("error"); e.Exists() {
		return wire.Answer{}, fmt.Errorf("gemini: parse answer: %w: %s", ErrUpstream, e.Get("message").Str)
	}
	cand := root.Get("candidates.0")
	if !cand.IsObject() {
		reason := get(root, "promptFeedback.blockReason").Str
		return wire.Answer{}, fmt.Errorf("gemini: parse answer: no candidate (%s): %w", reason, ErrBadAnswer)
	}
	stored := storedContent(cand.Get("content"))
	a := wire.Answer{
		ID:       strings.Clone(get(root, "responseId").Str),
		Model:    strings.Clone(get(root, "modelVersion").Str),
		Stored:   [][]byte{stored},
		Protocol: wire.Gemini,
	}
	var u usage
	u.read(get(root, "usageMetadata"))
	a.Usage = u.canonical()
	var err error
	if a.Message, err = (Codec{}).Decode(stored); err != nil {
		return wire.Answer{}, fmt.Errorf("gemini: parse answer: %w", err)
	}
	a.Stop = canonicalStop(get(cand, "finishReason").Str, a.Message)
	return a, nil
}

// storedContent is a candidate's content as stored: its parts as they
// came under role "model" (a content with no parts, as a candidate cut
// for safety has, stores an empty text part).
func storedContent(c gjson.Result) []byte {
	parts := c.Get("parts")
	raw := "[]"
	if parts.IsArray() {
		raw = parts.Raw
	}
	if len(parts.Array()) == 0 {
		raw = `[{"text":""}]`
	}
	return body.AppendMessageRaw(make([]byte, 0, len(raw)+32), roleModel, "parts", raw)
}

// usage is the counts of a usageMetadata object.
type usage struct{ prompt, candidates, thoughts, cached int64 }

// read updates u with the counts v holds (each chunk of a stream repeats
// the totals so far).
func (u *usage) read(v gjson.Result) {
	v.ForEach(func(k, n gjson.Result) bool {
		switch camel(k.Str) {
		case "promptTokenCount":
			u.prompt = n.Int()
		case "candidatesTokenCount":
			u.candidates = n.Int()
		case "thoughtsTokenCount":
			u.thoughts = n.Int()
		case "cachedContentTokenCount":
			u.cached = n.Int()
		}
		return true
	})
}

// canonical returns u in the canonical model: thoughts count as output,
// and as reasoning.
func (u usage) canonical() wire.Usage {
	return wire.Usage{InputTokens: int(u.prompt), OutputTokens: int(u.candidates + u.thoughts),
		CachedTokens: int(u.cached), ReasoningTokens: int(u.thoughts)}
}

// canonicalStop maps a finishReason to the canonical stop reason: a STOP
// with function calls is StopToolCalls (Gemini says STOP either way).
func canonicalStop(reason string, m wire.Message) string {
	switch reason {
	case "":
		return ""
	case "MAX_TOKENS":
		return wire.StopLength
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "LANGUAGE":
		return wire.StopFilter
	}
	for _, p := range m.Parts {
		if p.Kind == wire.ToolCall {
			return wire.StopToolCalls
		}
	}
	return wire.StopEnd
}

// finishReason maps a canonical stop reason to a finishReason.
func finishReason(stop string) string {
	switch stop {
	case wire.StopLength:
		return "MAX_TOKENS"
	case wire.StopFilter:
		return "SAFETY"
	}
	return "STOP"
}
