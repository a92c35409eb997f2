package responses

import (
	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/protocol/internal/body"
)

// The settings a Response object echoes. The Open Responses schema
// requires every one of them on every Response (null where it allows
// null), so each is rendered: the upstream's value when a Responses
// upstream reported one (the settings it ran with: "auto" asked, the
// service tier used), else the request's, else the default OpenAI
// renders for a request that left it out.

// Indexes into echoed.
const (
	eFrequencyPenalty = iota
	eInstructions
	eMaxOutputTokens
	eMaxToolCalls
	eMetadata
	eParallelToolCalls
	ePresencePenalty
	ePromptCacheKey
	eReasoning
	eSafetyIdentifier
	eServiceTier
	eTemperature
	eText
	eToolChoice
	eTools
	eTopLogprobs
	eTopP
	eTruncation
	eUser
	nEchoed
)

// echoed are the members that echo a setting: key, the JSON rendered
// when no one set it (def), and whether a Responses upstream's value
// stands (upstream): the sampling and service settings it ran with, and
// the members it echoes as the client sent them (max_tool_calls,
// safety_identifier, prompt_cache_key). Instructions, tools, tool_choice
// and the like are the client's: what the upstream got also holds
// Recall's own. echoIndex maps a key back to its index.
var echoed = [nEchoed]struct {
	key, def string
	upstream bool
}{
	eFrequencyPenalty:  {"frequency_penalty", "0", true},
	eInstructions:      {"instructions", "null", false},
	eMaxOutputTokens:   {"max_output_tokens", "null", false},
	eMaxToolCalls:      {"max_tool_calls", "null", true},
	eMetadata:          {"metadata", "{}", false},
	eParallelToolCalls: {"parallel_tool_calls", "true", false},
	ePresencePenalty:   {"presence_penalty", "0", true},
	ePromptCacheKey:    {"prompt_cache_key", "null", true},
	eReasoning:         {"reasoning", `{"effort":null,"summary":null}`, false},
	eSafetyIdentifier:  {"safety_identifier", "null", true},
	eServiceTier:       {"service_tier", `"default"`, true},
	eTemperature:       {"temperature", "1", true},
	eText:              {"text", `{"format":{"type":"text"}}`, false},
	eToolChoice:        {"tool_choice", `"auto"`, false},
	eTools:             {"tools", "[]", false},
	eTopLogprobs:       {"top_logprobs", "0", true},
	eTopP:              {"top_p", "1", true},
	eTruncation:        {"truncation", `"disabled"`, false},
	eUser:              {"user", "null", false},
}

// echoIndex is key's index in echoed, -1 when it is not an echoed member.
func echoIndex(key string) int {
	switch key {
	case "frequency_penalty":
		return eFrequencyPenalty
	case "instructions":
		return eInstructions
	case "max_output_tokens":
		return eMaxOutputTokens
	case "max_tool_calls":
		return eMaxToolCalls
	case "metadata":
		return eMetadata
	case "parallel_tool_calls":
		return eParallelToolCalls
	case "presence_penalty":
		return ePresencePenalty
	case "prompt_cache_key":
		return ePromptCacheKey
	case "reasoning":
		return eReasoning
	case "safety_identifier":
		return eSafetyIdentifier
	case "service_tier":
		return eServiceTier
	case "temperature":
		return eTemperature
	case "text":
		return eText
	case "tool_choice":
		return eToolChoice
	case "tools":
		return eTools
	case "top_logprobs":
		return eTopLogprobs
	case "top_p":
		return eTopP
	case "truncation":
		return eTruncation
	case "user":
		return eUser
	}
	return -1
}

// settings are the values of the echoed members, by index; a zero Result
// where neither the upstream nor the request set one.
type settings [nEchoed]gjson.Result

// read reads the echoed members in one pass over each object: the
// upstream's (wire.Answer.Settings, those marked upstream) first, then
// the request body's. A null is not a value: the next source or the
// default stands.
func (s *settings) read(upstream, body gjson.Result) {
	upstream.ForEach(func(k, v gjson.Result) bool {
		if i := echoIndex(k.Str); i >= 0 && echoed[i].upstream && v.Type != gjson.Null {
			s[i] = v
		}
		return true
	})
	body.ForEach(func(k, v gjson.Result) bool {
		if i := echoIndex(k.Str); i >= 0 && !s[i].Exists() && v.Type != gjson.Null {
			s[i] = v
		}
		return true
	})
}

// append appends member i: ,"key":value.
func (s *settings) append(dst []byte, i int) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, echoed[i].key...)
	dst = append(dst, '"', ':')
	v := s[i]
	switch {
	case i == eTools && v.IsArray():
		return appendTools(dst, v)
	case v.Exists():
		return append(dst, v.Raw...)
	}
	return append(dst, echoed[i].def...)
}

// appendSetting appends member name of a Responses upstream's Response
// object, its value raw (not null), to settings, the JSON object
// (without its closing brace; nil until it has a member) of the echoed
// members that stand for the upstream's own (see echoed): the Answer's
// Settings. The names it keeps are plain: written as they are.
func appendSetting(settings []byte, name, raw string) []byte {
	i := echoIndex(name)
	if i < 0 || !echoed[i].upstream {
		return settings
	}
	if settings == nil {
		settings = append(make([]byte, 0, 256), '{')
	} else {
		settings = append(settings, ',')
	}
	settings = append(append(append(settings, '"'), name...), '"', ':')
	return append(settings, raw...)
}

// appendTools appends the request's tools as a Response echoes them:
// each function tool with the members the schema requires of it,
// description and parameters (null when the request left them out) and
// strict (true, the Responses API's default, when it left it out or sent
// null); other tools as sent.
func appendTools(dst []byte, tools gjson.Result) []byte {
	return body.AppendEach(dst, tools, appendTool)
}

// appendTool appends one tool of appendTools, as sent when it has what
// it needs.
func appendTool(dst []byte, t gjson.Result) []byte {
	var function, description, parameters, strict bool
	t.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "type":
			function = v.Str == "function"
		case "description":
			description = true
		case "parameters":
			parameters = true
		case "strict":
			strict = v.Type != gjson.Null
		}
		return true
	})
	if !function || description && parameters && strict {
		return append(dst, t.Raw...)
	}
	dst = append(dst, '{')
	n := 0
	t.ForEach(func(k, v gjson.Result) bool {
		if k.Str == "strict" && !strict {
			return true // null: rendered below
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = append(append(append(dst, k.Raw...), ':'), v.Raw...)
		return true
	})
	if !description {
		dst = append(dst, `,"description":null`...)
	}
	if !parameters {
		dst = append(dst, `,"parameters":null`...)
	}
	if !strict {
		dst = append(dst, `,"strict":true`...)
	}
	return append(dst, '}')
}
