package responses

import (
	"bytes"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/wire"
)

// AppendAnswer renders a non-streamed answer as a Response object (see
// AppendResponse).
func (Ingress) AppendAnswer(dst []byte, req *wire.Request, a *wire.Answer) []byte {
	return AppendResponse(dst, req, a)
}

// AppendResponse appends the Response object for answer a to request req,
// as POST /v1/responses answers it and GET /v1/responses/{id} serves it
// later: the proxy rebuilds req (ParseRequest of the stored request body,
// with Conversation, PreviousResponseID and Store as resolved) and a (the
// stored answer items with their Protocol, Stop, Usage, Model,
// ResponseID, Created and Completed) and gets the same bytes.
//
// The id is a.ResponseID (else a.ID) and item ids are derived from it and
// the item's position (msg_…, fc_…), so every rendering of one answer,
// streamed or not, names its items alike. When a.Protocol is Responses the
// output is a.Stored as the upstream sent it, with Recall's ids on
// messages and function calls (reasoning items keep the upstream's id and
// encrypted_content, which the upstream needs back); otherwise it is
// built from a.Message. The request's settings (instructions, tools,
// tool_choice, text, reasoning, metadata, ...) are echoed from its body,
// with OpenAI's defaults for those it left out, so that SDK helpers
// (output_text, finalResponse) find every field they read and the object
// carries every member the Open Responses schema requires; a Responses
// upstream's own account of the settings it ran with (a.Settings) stands
// over the request's (see settings.go).
func AppendResponse(dst []byte, req *wire.Request, a *wire.Answer) []byte {
	id := responseID(req, a)
	return appendResponse(dst, req, a, id, outputItems(a, id), false)
}

// AppendStoredResponse appends AppendResponse's Response object with an
// empty output: what a stored response's turn keeps
// (history.Message.Response) and GET /v1/responses/{id} fills with the
// stored items.
func AppendStoredResponse(dst []byte, req *wire.Request, a *wire.Answer) []byte {
	return appendResponse(dst, req, a, responseID(req, a), nil, false)
}

// responseID is the id the answer is rendered under.
func responseID(req *wire.Request, a *wire.Answer) string {
	switch {
	case a != nil && a.ResponseID != "":
		return a.ResponseID
	case req.ResponseID != "":
		return req.ResponseID
	case a != nil:
		return a.ID
	}
	return ""
}

// itemID is the id of the output item at index i of response id:
// prefix ("msg", "fc") and id's own suffix, so that ids are stable across
// renderings and unique across responses.
func itemID(prefix, id string, i int) string {
	base := id
	if _, rest, ok := strings.Cut(id, "_"); ok {
		base = rest
	}
	return prefix + "_" + base + "_" + strconv.Itoa(i)
}

// outputItems renders the answer's output items, with Recall's ids.
func outputItems(a *wire.Answer, id string) [][]byte {
	var items [][]byte
	if a.Protocol == wire.Responses && len(a.Stored) > 0 {
		items = make([][]byte, 0, len(a.Stored))
		for i, raw := range a.Stored {
			items = append(items, withRecallID(raw, id, i))
		}
		return items
	}
	var content []byte // the open message's parts
	flush := func() {
		if content != nil {
			items = append(items, appendOutputMessage(nil, itemID("msg", id, len(items)), "completed", append(content, ']')))
			content = nil
		}
	}
	for _, p := range a.Message.Parts {
		switch p.Kind {
		case wire.Text, wire.Refusal:
			if content == nil {
				content = []byte{'['}
			} else {
				content = append(content, ',')
			}
			content = appendOutputPart(content, p.Kind, p.Text)
		case wire.ToolCall:
			flush()
			items = append(items, appendCallItem(nil, itemID("fc", id, len(items)), "completed", p.CallID, p.Name, p.Arguments))
		case wire.Opaque:
			if p.Origin == wire.Responses && role(parse(p.Raw)) != "" {
				flush()
				items = append(items, clone(p.Raw))
			}
		}
	}
	flush()
	if len(items) == 0 {
		items = append(items, appendOutputMessage(nil, itemID("msg", id, 0), "completed",
			append(appendOutputPart([]byte{'['}, wire.Text, ""), ']')))
	}
	return items
}

// withRecallID returns a copy of stored output item raw, at index i of
// response id, with Recall's id on a message or a function call and
// "status":"completed" where it has none (a reasoning item aside): the
// item's other bytes as stored, the id's value replaced where it stands,
// a missing member added last (as sjson would set them).
func withRecallID(raw []byte, id string, i int) []byte {
	item := parse(raw)
	var idv, status, typ, role gjson.Result // each key's first value, as Get reads it
	item.ForEach(func(k, v gjson.Result) bool {
		switch {
		case k.Str == "id" && !idv.Exists():
			idv = v
		case k.Str == "status" && !status.Exists():
			status = v
		case k.Str == "type" && !typ.Exists():
			typ = v
		case k.Str == "role" && !role.Exists():
			role = v
		}
		return true
	})
	t := "" // itemType's answer
	switch {
	case typ.Type == gjson.String:
		t = typ.Str
	case !typ.Exists() && role.Type == gjson.String:
		t = typeMessage // an easy input message
	}
	var newID string
	switch t {
	case typeMessage:
		newID = itemID("msg", id, i)
	case typeFunctionCall:
		newID = itemID("fc", id, i)
	}
	addStatus := !status.Exists() && t != typeReasoning
	if !item.IsObject() || newID == "" && !addStatus {
		return clone(raw)
	}
	b := make([]byte, 0, len(raw)+len(newID)+32)
	rest := raw
	if newID != "" && idv.Exists() && idv.Index > 0 {
		b = append(b, raw[:idv.Index]...)
		b = gjson.AppendJSONString(b, newID)
		rest = raw[idv.Index+len(idv.Raw):]
		newID = ""
	}
	end := bytes.LastIndexByte(rest, '}')
	b = append(b, rest[:end]...)
	empty := len(bytes.TrimSpace(b)) == 1 // "{": no member before
	if newID != "" {
		if !empty {
			b = append(b, ',')
		}
		b = gjson.AppendJSONString(append(b, `"id":`...), newID)
		empty = false
	}
	if addStatus {
		if !empty {
			b = append(b, ',')
		}
		b = append(b, `"status":"completed"`...)
	}
	return append(b, rest[end:]...)
}

// appendOutputMessage appends an assistant output message with the given
// content array.
func appendOutputMessage(b []byte, id, status string, content []byte) []byte {
	b = append(b, `{"id":`...)
	b = gjson.AppendJSONString(b, id)
	b = append(b, `,"type":"message","status":`...)
	b = gjson.AppendJSONString(b, status)
	b = append(b, `,"content":`...)
	b = append(b, content...)
	return append(b, `,"role":"assistant"}`...)
}

// appendOutputPart appends an output_text or refusal part.
func appendOutputPart(b []byte, kind wire.Kind, text string) []byte {
	if kind == wire.Refusal {
		b = append(b, `{"type":"refusal","refusal":`...)
		return append(gjson.AppendJSONString(b, text), '}')
	}
	b = append(b, `{"type":"output_text","annotations":[],"logprobs":[],"text":`...)
	return append(gjson.AppendJSONString(b, text), '}')
}

// appendCallItem appends a function_call output item.
func appendCallItem(b []byte, id, status, callID, name, args string) []byte {
	b = append(b, `{"id":`...)
	b = gjson.AppendJSONString(b, id)
	b = append(b, `,"type":"function_call","status":`...)
	b = gjson.AppendJSONString(b, status)
	b = gjson.AppendJSONString(append(b, `,"arguments":`...), args)
	b = gjson.AppendJSONString(append(b, `,"call_id":`...), callID)
	b = gjson.AppendJSONString(append(b, `,"name":`...), name)
	return append(b, '}')
}

// appendResponse appends the Response object: in progress (no output, no
// usage) or finished with items. Every member the Open Responses schema
// requires is rendered, settings echoed as settings.go describes.
// completed_at is a completed answer's a.Completed (created_at when
// earlier or unknown), null while in progress or when incomplete.
func appendResponse(dst []byte, req *wire.Request, a *wire.Answer, id string, items [][]byte, inProgress bool) []byte {
	dst, _ = appendResponseAt(dst, req, a, id, items, inProgress)
	return dst
}

// appendResponseAt is appendResponse, and where its output array (its
// "[" to its "]") stands in the returned slice: output[0] to output[1].
func appendResponseAt(dst []byte, req *wire.Request, a *wire.Answer, id string, items [][]byte, inProgress bool) (out []byte, output [2]int) {
	var body, upstream gjson.Result
	if req.Protocol == wire.Responses && len(req.Body) > 0 {
		body = parse(req.Body)
	}
	if a != nil && len(a.Settings) > 0 {
		upstream = parse(a.Settings)
	}
	var s settings
	s.read(upstream, body)
	created := req.Created
	if a != nil && a.Created != 0 {
		created = a.Created
	}
	status, reason := responseStatus(a, inProgress)
	model := req.Model
	if a != nil && a.Model != "" {
		model = a.Model
	}
	// Grown once: the members' names and defaults, then what varies.
	need := responseSize + len(id) + len(model) + len(req.PreviousResponseID) + len(req.Conversation)
	for _, it := range items {
		need += len(it) + 1
	}
	for _, v := range s {
		need += len(v.Raw)
	}
	dst = slices.Grow(dst, need)
	dst = append(dst, `{"id":`...)
	dst = gjson.AppendJSONString(dst, id)
	dst = append(dst, `,"object":"response","created_at":`...)
	dst = strconv.AppendInt(dst, created, 10)
	dst = gjson.AppendJSONString(append(dst, `,"status":`...), status)
	dst = append(dst, `,"background":false,"completed_at":`...)
	if status == "completed" {
		dst = strconv.AppendInt(dst, max(a.Completed, created), 10)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"error":null,"incomplete_details":`...)
	if reason != "" {
		dst = append(gjson.AppendJSONString(append(dst, `{"reason":`...), reason), '}')
	} else {
		dst = append(dst, "null"...)
	}
	dst = s.append(dst, eInstructions)
	dst = s.append(dst, eMaxOutputTokens)
	dst = s.append(dst, eMaxToolCalls)
	dst = gjson.AppendJSONString(append(dst, `,"model":`...), model)
	output[0] = len(dst) + len(`,"output":`)
	dst = appendOutput(dst, items)
	output[1] = len(dst)
	dst = s.append(dst, eParallelToolCalls)
	dst = s.append(dst, ePresencePenalty)
	dst = s.append(dst, eFrequencyPenalty)
	dst = append(dst, `,"previous_response_id":`...)
	dst = appendNullable(dst, req.PreviousResponseID)
	dst = s.append(dst, ePromptCacheKey)
	dst = s.append(dst, eReasoning)
	dst = s.append(dst, eSafetyIdentifier)
	dst = s.append(dst, eServiceTier)
	dst = strconv.AppendBool(append(dst, `,"store":`...), req.Store)
	dst = s.append(dst, eTemperature)
	dst = s.append(dst, eText)
	dst = s.append(dst, eToolChoice)
	dst = s.append(dst, eTools)
	dst = s.append(dst, eTopLogprobs)
	dst = s.append(dst, eTopP)
	dst = s.append(dst, eTruncation)
	dst = append(dst, `,"usage":`...)
	if inProgress {
		dst = append(dst, "null"...)
	} else {
		dst = appendUsage(dst, a.Usage)
	}
	dst = s.append(dst, eUser)
	dst = s.append(dst, eMetadata)
	dst = append(dst, `,"conversation":`...)
	if req.Conversation != "" {
		dst = append(gjson.AppendJSONString(append(dst, `{"id":`...), req.Conversation), '}')
	} else {
		dst = append(dst, "null"...)
	}
	return append(dst, '}'), output
}

// responseStatus is a response's status, and the reason when it is
// incomplete (a's stop: the output limit or the content filter).
func responseStatus(a *wire.Answer, inProgress bool) (status, reason string) {
	if inProgress {
		return "in_progress", ""
	}
	switch a.Stop {
	case wire.StopLength:
		return "incomplete", "max_output_tokens"
	case wire.StopFilter:
		return "incomplete", "content_filter"
	}
	return "completed", ""
}

// appendOutput appends the "output" member: the items, in order.
func appendOutput(dst []byte, items [][]byte) []byte {
	return appendItemArray(append(dst, `,"output":`...), items)
}

// appendItemArray appends the array of items.
func appendItemArray(dst []byte, items [][]byte) []byte {
	dst = append(dst, '[')
	for i, it := range items {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, it...)
	}
	return append(dst, ']')
}

// appendUsage appends u as a Response's usage object.
func appendUsage(dst []byte, u wire.Usage) []byte {
	dst = strconv.AppendInt(append(dst, `{"input_tokens":`...), int64(u.InputTokens), 10)
	dst = strconv.AppendInt(append(dst, `,"input_tokens_details":{"cached_tokens":`...), int64(u.CachedTokens), 10)
	dst = strconv.AppendInt(append(dst, `},"output_tokens":`...), int64(u.OutputTokens), 10)
	dst = strconv.AppendInt(append(dst, `,"output_tokens_details":{"reasoning_tokens":`...), int64(u.ReasoningTokens), 10)
	dst = strconv.AppendInt(append(dst, `},"total_tokens":`...), int64(u.InputTokens+u.OutputTokens), 10)
	return append(dst, '}')
}

// responseSize is about what appendResponse writes besides the id, the
// model, the items and the settings' values.
const responseSize = 1024

func appendNullable(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return gjson.AppendJSONString(b, s)
}
