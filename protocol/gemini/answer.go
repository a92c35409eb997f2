package gemini

import (
	"encoding/json"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/protocol/internal/body"
	"github.com/recallproxy/recall/wire"
)

// AppendAnswer renders a non-streamed answer as a GenerateContentResponse
// with one candidate: its content the stored content when the answer is
// stored in Gemini's shape (what a later request resends), else the
// canonical message encoded; finishReason, usageMetadata, modelVersion and
// responseId.
func (Ingress) AppendAnswer(dst []byte, req *wire.Request, a *wire.Answer) []byte {
	content := answerContent(a)
	dst = append(dst, `{"candidates":[{"content":`...)
	dst = append(dst, content...)
	dst = append(dst, `,"finishReason":"`...)
	dst = append(dst, finishReason(a.Stop)...)
	dst = append(dst, `","index":0}],"usageMetadata":`...)
	dst = appendUsage(dst, a.Usage)
	dst = appendTrailer(dst, modelOf(req, a), responseID(a))
	return append(dst, '}')
}

// answerContent is the content an answer is rendered with.
func answerContent(a *wire.Answer) []byte {
	if a.Protocol == wire.Gemini && len(a.Stored) == 1 && parse(a.Stored[0]).Get("role").Str == roleModel {
		return a.Stored[0]
	}
	out, err := Codec{}.Encode(nil, []wire.Message{a.Message})
	if err != nil || len(out) != 1 {
		return []byte(`{"role":"model","parts":[{"text":""}]}`)
	}
	return out[0]
}

func modelOf(req *wire.Request, a *wire.Answer) string {
	if a != nil && a.Model != "" {
		return a.Model
	}
	return req.Model
}

func responseID(a *wire.Answer) string {
	switch {
	case a.ResponseID != "":
		return a.ResponseID
	case a.ID != "":
		return a.ID
	}
	return NewResponseID()
}

// NewResponseID returns a new responseId, 22 random letters and digits.
func NewResponseID() string { return body.ID("", 22) }

// appendTrailer appends ,"modelVersion":…,"responseId":….
func appendTrailer(dst []byte, model, id string) []byte {
	dst = append(dst, `,"modelVersion":`...)
	dst = gjson.AppendJSONString(dst, model)
	dst = append(dst, `,"responseId":`...)
	return gjson.AppendJSONString(dst, id)
}

// appendUsage appends usageMetadata for u.
func appendUsage(dst []byte, u wire.Usage) []byte {
	cand := u.OutputTokens - u.ReasoningTokens
	dst = append(dst, `{"promptTokenCount":`...)
	dst = strconv.AppendInt(dst, int64(u.InputTokens), 10)
	dst = append(dst, `,"candidatesTokenCount":`...)
	dst = strconv.AppendInt(dst, int64(cand), 10)
	if u.ReasoningTokens > 0 {
		dst = append(dst, `,"thoughtsTokenCount":`...)
		dst = strconv.AppendInt(dst, int64(u.ReasoningTokens), 10)
	}
	if u.CachedTokens > 0 {
		dst = append(dst, `,"cachedContentTokenCount":`...)
		dst = strconv.AppendInt(dst, int64(u.CachedTokens), 10)
	}
	dst = append(dst, `,"totalTokenCount":`...)
	dst = strconv.AppendInt(dst, int64(u.InputTokens+u.OutputTokens), 10)
	return append(dst, '}')
}

// NewRenderer returns the renderer of a streamed answer to req.
func (Ingress) NewRenderer(req *wire.Request) wire.Renderer {
	id := req.ResponseID
	if id == "" {
		id = NewResponseID()
	}
	return &Renderer{id: id, model: req.Model}
}

// Renderer renders a stream as :streamGenerateContent?alt=sse events, each
// a GenerateContentResponse: one per text or thought delta as it comes.
// Function calls, which Gemini streams whole, are held and sent with the
// closing event (End), which carries the finishReason and usageMetadata:
// the event a client acknowledges the turn by.
type Renderer struct {
	id, model string
	calls     []call
	rendered  bool
	usage     wire.Usage
	stop      string
}

// call is a function call being streamed.
type call struct {
	id, name string
	args     []byte
}

var _ wire.Renderer = (*Renderer)(nil)

// Delta appends the event of d: text and thoughts at once, calls and the
// finish held for End.
func (r *Renderer) Delta(dst []byte, d wire.Delta) []byte {
	switch d.Kind {
	case wire.TextDelta, wire.RefusalDelta, wire.ReasoningDelta:
		if d.Text == "" {
			return dst
		}
		r.rendered = true
		part := append([]byte(`{"text":`), gjson.AppendJSONString(nil, d.Text)...)
		if d.Kind == wire.ReasoningDelta {
			part = append(part, `,"thought":true`...)
		}
		return r.chunk(dst, append(part, '}'), "", nil)
	case wire.ToolCallStart:
		r.rendered = true
		for len(r.calls) <= d.Index {
			r.calls = append(r.calls, call{})
		}
		r.calls[d.Index].id, r.calls[d.Index].name = d.CallID, d.Name
	case wire.ArgumentsDelta:
		for len(r.calls) <= d.Index {
			r.calls = append(r.calls, call{})
		}
		r.calls[d.Index].args = append(r.calls[d.Index].args, d.Text...)
	case wire.Finish:
		r.stop, r.usage = d.Text, d.Usage
	}
	return dst
}

// End appends the closing event for the whole answer a: the held calls
// (or, when nothing was streamed, the answer's content), finishReason and
// usageMetadata.
func (r *Renderer) End(dst []byte, a *wire.Answer) []byte {
	stop, u := body.Ending(a, r.stop, r.usage)
	var parts []byte
	if !r.rendered && a != nil {
		parts = []byte(parse(answerContent(a)).Get("parts").Raw)
	} else {
		var names counter
		parts = append(parts, '[')
		for i, c := range r.calls {
			if i > 0 {
				parts = append(parts, ',')
			}
			parts = append(parts, `{"functionCall":{"name":`...)
			parts = gjson.AppendJSONString(parts, c.name)
			parts = append(parts, `,"args":`...)
			parts = append(parts, body.ObjectArgs(string(c.args))...)
			parts = appendID(parts, c.id, c.name, names.next(c.name))
			parts = append(parts, "}}"...)
		}
		if len(r.calls) == 0 {
			parts = append(parts, `{"text":""}`...)
		}
		parts = append(parts, ']')
	}
	usage := appendUsage(nil, u)
	return r.chunk(dst, parts, finishReason(stop), usage)
}

// chunk appends one event: a candidate with parts (one part, or an array
// when it starts with '['), finishReason when set, usageMetadata when
// set.
func (r *Renderer) chunk(dst, parts []byte, finish string, usage []byte) []byte {
	dst = append(dst, `data: {"candidates":[{"content":{"parts":`...)
	if len(parts) > 0 && parts[0] == '[' {
		dst = append(dst, parts...)
	} else {
		dst = append(append(append(dst, '['), parts...), ']')
	}
	dst = append(dst, `,"role":"model"}`...)
	if finish != "" {
		dst = append(dst, `,"finishReason":"`...)
		dst = append(dst, finish...)
		dst = append(dst, '"')
	}
	dst = append(dst, `,"index":0}]`...)
	if usage != nil {
		dst = append(dst, `,"usageMetadata":`...)
		dst = append(dst, usage...)
	}
	dst = appendTrailer(dst, r.model, r.id)
	return append(dst, "}\r\n\r\n"...)
}

// AppendError appends the Gemini API's error body,
// {"error":{"code","message","status"}}, status the google.rpc code name
// of the HTTP status (Status).
func (Ingress) AppendError(dst []byte, status int, typ, code, param, message string) []byte {
	return append(dst, ErrorBody(&apierr.Error{Status: status, Message: message})...)
}

// AppendErrorEvent appends a stream's closing error event, data: and the
// body.
func (in Ingress) AppendErrorEvent(dst []byte, status int, typ, code, param, message string) []byte {
	dst = append(dst, "data: "...)
	dst = in.AppendError(dst, status, typ, code, param, message)
	return append(dst, "\r\n\r\n"...)
}

// ErrorBody renders e in the Gemini API's shape (see Ingress.AppendError).
func ErrorBody(e *apierr.Error) []byte {
	var body struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	body.Error.Code, body.Error.Message, body.Error.Status = e.Status, e.Message, Status(e.Status)
	b, _ := json.Marshal(body) // cannot fail: strings and a number
	return b
}

// Status is the google.rpc status name the Gemini API answers an HTTP
// status with.
func Status(code int) string {
	switch {
	case code == 400, code == 413:
		return "INVALID_ARGUMENT"
	case code == 401:
		return "UNAUTHENTICATED"
	case code == 403:
		return "PERMISSION_DENIED"
	case code == 404:
		return "NOT_FOUND"
	case code == 405:
		return "UNIMPLEMENTED"
	case code == 409:
		return "ABORTED"
	case code == 429:
		return "RESOURCE_EXHAUSTED"
	case code == 499:
		return "CANCELLED"
	case code == 503:
		return "UNAVAILABLE"
	case code == 504:
		return "DEADLINE_EXCEEDED"
	case code == 507:
		return "RESOURCE_EXHAUSTED"
	case code >= 500:
		return "INTERNAL"
	}
	return "FAILED_PRECONDITION"
}
