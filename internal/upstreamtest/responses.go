package upstreamtest

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// The Responses API route: POST /v1/responses, validated like OpenAI's
// and answered from the same Reply queue as chat completions, as a
// Response object or its event stream. It serves Recall's stateless use
// of an upstream: previous_response_id and conversation are refused
// whatever their value, since Recall must never forward them. The same
// route upgraded to a WebSocket is websocket.go's.

// responsesItemTypes are the input item types the fake accepts.
var responsesItemTypes = []string{"message", "function_call", "function_call_output", "reasoning", "compaction"}

// answerResponse is one Responses answer being produced.
type answerResponse struct {
	id, model   string
	created     int64
	stream      bool
	reply       Reply
	reasoning   string // encrypted_content of the leading reasoning item ("": none)
	text        string
	hasText     bool
	calls       []ToolCall
	seq         uint64
	inTok, out  int
	requestBody gjson.Result
	previous    string // the previous_response_id it continues ("": none; WebSocket mode only)
}

// serveResponses answers POST /v1/responses.
func (s *Server) serveResponses(w http.ResponseWriter, r *http.Request, body []byte) {
	rec := s.receivedFor(r, body)
	root := parseBody(body)
	var items []gjson.Result
	apiErr, status := validateResponses(root, &items)
	reply, gate := s.takeReply(rec, root.Get("model").Str, root.Get("stream").Type == gjson.True, false, items, apiErr)
	if apiErr != nil {
		s.writeError(w, status, apiErr, "")
		return
	}
	ctx := r.Context()
	if !s.beforeOpenAIAnswer(ctx, w, reply, gate) {
		return
	}
	a := s.newAnswerResponse(root, items, reply)
	s.setAnswerHeaders(w.Header(), reply)
	if a.stream {
		s.writeResponsesStream(ctx, w, a, gate)
		return
	}
	s.writeBody(ctx, w, a.appendResponse(make([]byte, 0, 1024), "completed", true), reply.Fault, false, gate)
}

// validateResponses checks a Responses body as OpenAI does, and the rule
// of a stateless upstream: no previous_response_id, no conversation. It
// returns the error and its status, and the input items in *items.
func validateResponses(root gjson.Result, items *[]gjson.Result) (*APIError, int) {
	if !root.IsObject() {
		return &APIError{Message: msgParseBody, Type: invalidRequest}, http.StatusBadRequest
	}
	for _, k := range []string{"previous_response_id", "conversation"} {
		if v := root.Get(k); v.Exists() {
			return &APIError{Message: "upstreamtest: '" + k + "' reached the upstream: Recall keeps the state and must never forward it.",
				Type: invalidRequest, Param: k, Code: "unsupported_parameter"}, http.StatusBadRequest
		}
	}
	if m := root.Get("model"); m.Type != gjson.String || m.Str == "" {
		return missing("model"), http.StatusBadRequest
	}
	input := root.Get("input")
	switch {
	case !input.Exists() || input.Type == gjson.Null:
		return missing("input"), http.StatusBadRequest
	case input.Type == gjson.String:
		*items = append(*items, gjson.Parse(`{"role":"user","content":`+input.Raw+`}`))
	case input.IsArray():
		*items = input.Array()
	default:
		return invalidType("input", "a string or array", input), http.StatusBadRequest
	}
	store := root.Get("store").Type != gjson.False
	var calls []string
	for i, it := range *items {
		if e, status := validateResponsesItem("input["+strconv.Itoa(i)+"]", it, store, &calls); e != nil {
			return e, status
		}
	}
	if e := validateResponsesTools(root.Get("tools")); e != nil {
		return e, http.StatusBadRequest
	}
	return nil, 0
}

// validateResponsesItem checks the input item it, named at; store is
// the request's, calls the call ids of the function calls before it
// (a function call's is appended).
func validateResponsesItem(at string, it gjson.Result, store bool, calls *[]string) (*APIError, int) {
	if !it.IsObject() {
		return invalidType(at, "an object", it), http.StatusBadRequest
	}
	typ := it.Get("type").Str
	if !it.Get("type").Exists() && it.Get("role").Exists() {
		typ = "message"
	}
	if !contains(responsesItemTypes, typ) {
		return invalidValue(at+".type", typ, responsesItemTypes), http.StatusBadRequest
	}
	switch typ {
	case "message":
		if e := invalidRole(at, it.Get("role")); e != nil {
			return e, http.StatusBadRequest
		}
		if c := it.Get("content"); c.Type != gjson.String && !c.IsArray() {
			return invalidType(at+".content", "a string or array", c), http.StatusBadRequest
		}
		if e := validateInputFiles(at, it.Get("content")); e != nil {
			return e, http.StatusBadRequest
		}
	case "function_call":
		if e := requireStrings(func() string { return at }, "", it, "call_id", "name", "arguments"); e != nil {
			return e, http.StatusBadRequest
		}
		*calls = append(*calls, it.Get("call_id").Str)
	case "function_call_output":
		id := it.Get("call_id")
		if id.Type != gjson.String {
			return missing(at + ".call_id"), http.StatusBadRequest
		}
		if !contains(*calls, id.Str) {
			return &APIError{Message: "No tool call found for function call output with call_id " + id.Str + ".",
				Type: invalidRequest, Param: "input"}, http.StatusBadRequest
		}
		if o := it.Get("output"); o.Type != gjson.String && !o.IsArray() {
			return invalidType(at+".output", "a string or array", o), http.StatusBadRequest
		}
	case "compaction":
		// OpenAI reads only its own compactions: one Recall made
		// (recall_cmp_…) must have been expanded before it came here.
		if c := it.Get("encrypted_content"); c.Type != gjson.String || strings.HasPrefix(c.Str, "recall_cmp_") {
			return &APIError{Message: "The encrypted content for item " + at + " could not be verified.",
				Type: invalidRequest, Param: "input", Code: "invalid_encrypted_content"}, http.StatusBadRequest
		}
	case "reasoning":
		if !store && it.Get("encrypted_content").Type != gjson.String {
			return &APIError{Message: "Item with id '" + it.Get("id").Str + "' not found. Items are not persisted when `store` is set to false. " +
				"Try again with `store` set to true, or remove this item from your input.", Type: invalidRequest, Param: "input"}, http.StatusNotFound
		}
	}
	return nil, 0
}

// validateInputFiles checks the input_file parts of the content of the
// message item at: each has a file_id, a file_url, or file_data with a
// filename.
func validateInputFiles(at string, content gjson.Result) *APIError {
	for j, p := range content.Array() {
		if p.Get("type").Str != "input_file" {
			continue
		}
		pat := at + ".content[" + strconv.Itoa(j) + "]"
		switch d := p.Get("file_data"); {
		case p.Get("file_id").Type == gjson.String, p.Get("file_url").Type == gjson.String:
		case d.Type != gjson.String:
			return &APIError{Message: "Invalid '" + pat + "': an input_file must have one of file_id, file_data or file_url.",
				Type: invalidRequest, Param: pat, Code: "invalid_value"}
		case p.Get("filename").Str == "":
			return missing(pat + ".filename")
		}
	}
	return nil
}

// validateResponsesTools checks the function tools: each has a name
// and parameters.
func validateResponsesTools(tools gjson.Result) *APIError {
	for i, t := range tools.Array() {
		at := "tools[" + strconv.Itoa(i) + "]"
		if t.Get("type").Str != "function" {
			continue
		}
		if t.Get("name").Type != gjson.String {
			return missing(at + ".name")
		}
		if !t.Get("parameters").IsObject() {
			return missing(at + ".parameters")
		}
	}
	return nil
}

// invalidRole checks a message item's role.
func invalidRole(at string, r gjson.Result) *APIError {
	roles := []string{"user", "assistant", "system", "developer"}
	if r.Type != gjson.String {
		return missing(at + ".role")
	}
	if !contains(roles, r.Str) {
		return invalidValue(at+".role", r.Str, roles)
	}
	return nil
}

// newAnswerResponse resolves reply against the request.
func (s *Server) newAnswerResponse(root gjson.Result, items []gjson.Result, reply Reply) *answerResponse {
	seq := s.nextSeq()
	a := &answerResponse{
		id: "resp_" + strconv.FormatUint(seq, 10), model: root.Get("model").Str, created: s.created,
		stream: root.Get("stream").Type == gjson.True, reply: reply, seq: seq, requestBody: root,
	}
	model := a.model
	wantsReasoning := strings.HasPrefix(model, "o") || strings.HasPrefix(model, "gpt-5")
	if wantsReasoning && strings.Contains(root.Get("include").Raw, `"reasoning.encrypted_content"`) {
		a.reasoning = "enc_" + strconv.FormatUint(seq, 10)
	}
	a.text = reply.Content
	a.hasText = reply.Content != ""
	if reply.Content == "" && reply.Refusal == "" && len(reply.ToolCalls) == 0 {
		a.text, a.hasText = "echo: "+lastUserText(items, "input_text"), true
	}
	for i, tc := range reply.ToolCalls {
		if tc.ID == "" {
			tc.ID = "call_" + strconv.FormatUint(seq, 10) + "_" + strconv.Itoa(i)
		}
		a.calls = append(a.calls, tc)
	}
	a.inTok = max(1, len(root.Get("input").Raw)/4)
	a.out = max(1, (len(a.text)+len(reply.Refusal))/4)
	for _, tc := range a.calls {
		a.out += (len(tc.Name) + len(tc.Arguments)) / 4
	}
	return a
}

func (a *answerResponse) msgID() string { return "msg_" + strconv.FormatUint(a.seq, 10) }
func (a *answerResponse) rsID() string  { return "rs_" + strconv.FormatUint(a.seq, 10) }
func (a *answerResponse) fcID(i int) string {
	return "fc_" + strconv.FormatUint(a.seq, 10) + "_" + strconv.Itoa(i)
}

// hasMessage reports whether the answer has a message item.
func (a *answerResponse) hasMessage() bool { return a.hasText || a.reply.Refusal != "" }

// appendReasoning appends the reasoning item.
func (a *answerResponse) appendReasoning(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = gjson.AppendJSONString(b, a.rsID())
	b = append(b, `,"type":"reasoning","summary":[],"encrypted_content":`...)
	b = gjson.AppendJSONString(b, a.reasoning)
	return append(b, '}')
}

// appendMessage appends the message item, with its content when done.
func (a *answerResponse) appendMessage(b []byte, done bool) []byte {
	b = append(b, `{"id":`...)
	b = gjson.AppendJSONString(b, a.msgID())
	if !done {
		return append(b, `,"type":"message","status":"in_progress","content":[],"role":"assistant"}`...)
	}
	b = append(b, `,"type":"message","status":"completed","content":[`...)
	if a.hasText {
		b = appendTextPart(b, a.text)
	}
	if a.reply.Refusal != "" {
		if a.hasText {
			b = append(b, ',')
		}
		b = appendRefusalPart(b, a.reply.Refusal)
	}
	return append(b, `],"role":"assistant"}`...)
}

func appendTextPart(b []byte, text string) []byte {
	b = append(b, `{"type":"output_text","annotations":[],"logprobs":[],"text":`...)
	return append(gjson.AppendJSONString(b, text), '}')
}

func appendRefusalPart(b []byte, text string) []byte {
	b = append(b, `{"type":"refusal","refusal":`...)
	return append(gjson.AppendJSONString(b, text), '}')
}

// appendCall appends function call i, with its arguments when done.
func (a *answerResponse) appendCall(b []byte, i int, done bool) []byte {
	tc := a.calls[i]
	b = append(b, `{"id":`...)
	b = gjson.AppendJSONString(b, a.fcID(i))
	status, args := "in_progress", ""
	if done {
		status, args = "completed", tc.Arguments
	}
	b = append(b, `,"type":"function_call","status":"`+status+`","arguments":`...)
	b = gjson.AppendJSONString(b, args)
	b = append(b, `,"call_id":`...)
	b = gjson.AppendJSONString(b, tc.ID)
	b = append(b, `,"name":`...)
	b = gjson.AppendJSONString(b, tc.Name)
	return append(b, '}')
}

// appendResponse appends the Response object, with the members OpenAI
// renders: the request's settings, OpenAI's defaults for those it left
// out, and completed_at once completed. withOutput false gives the
// in-progress object of response.created.
func (a *answerResponse) appendResponse(b []byte, status string, withOutput bool) []byte {
	b = append(b, `{"id":`...)
	b = gjson.AppendJSONString(b, a.id)
	b = append(b, `,"object":"response","created_at":`...)
	b = strconv.AppendInt(b, a.created, 10)
	b = append(b, `,"status":"`+status+`","background":false,"completed_at":`...)
	if status == "completed" {
		b = strconv.AppendInt(b, a.created+1, 10)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"error":null,"incomplete_details":null`...)
	for _, s := range [...]struct{ key, def string }{
		{"instructions", "null"}, {"max_output_tokens", "null"}, {"max_tool_calls", "null"},
		{"presence_penalty", "0.0"}, {"frequency_penalty", "0.0"}, {"prompt_cache_key", "null"},
		{"safety_identifier", "null"}, {"temperature", "1.0"}, {"top_logprobs", "0"}, {"top_p", "1.0"}, {"user", "null"},
	} {
		b = append(b, `,"`+s.key+`":`...)
		if v := a.requestBody.Get(s.key); v.Exists() && v.Type != gjson.Null {
			b = append(b, v.Raw...)
		} else {
			b = append(b, s.def...)
		}
	}
	// OpenAI names the tier it used once the response is done: "auto"
	// (or none) asked is "default".
	tier := a.requestBody.Get("service_tier").Str
	switch {
	case status == "in_progress" && tier == "":
		tier = "auto"
	case status != "in_progress" && (tier == "" || tier == "auto"):
		tier = "default"
	}
	b = append(b, `,"service_tier":`...)
	b = gjson.AppendJSONString(b, tier)
	b = append(b, `,"model":`...)
	b = gjson.AppendJSONString(b, a.model)
	b = append(b, `,"output":[`...)
	if withOutput {
		n := 0
		sep := func() {
			if n > 0 {
				b = append(b, ',')
			}
			n++
		}
		if a.reasoning != "" {
			sep()
			b = a.appendReasoning(b)
		}
		if a.hasMessage() {
			sep()
			b = a.appendMessage(b, true)
		}
		for i := range a.calls {
			sep()
			b = a.appendCall(b, i, true)
		}
	}
	b = append(b, `],"parallel_tool_calls":true,"previous_response_id":`...)
	if a.previous != "" {
		b = gjson.AppendJSONString(b, a.previous)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"reasoning":{"effort":null,"summary":null},"store":false,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"truncation":"disabled","usage":`...)
	if !withOutput {
		b = append(b, "null"...)
	} else {
		reasoningTok := 0
		if a.reasoning != "" {
			reasoningTok = 8
		}
		b = append(b, `{"input_tokens":`...)
		b = strconv.AppendInt(b, int64(a.inTok), 10)
		b = append(b, `,"input_tokens_details":{"cached_tokens":0},"output_tokens":`...)
		b = strconv.AppendInt(b, int64(a.out+reasoningTok), 10)
		b = append(b, `,"output_tokens_details":{"reasoning_tokens":`...)
		b = strconv.AppendInt(b, int64(reasoningTok), 10)
		b = append(b, `},"total_tokens":`...)
		b = strconv.AppendInt(b, int64(a.inTok+a.out+reasoningTok), 10)
		b = append(b, '}')
	}
	return append(b, `,"metadata":{}}`...)
}

// writeResponsesStream writes the answer as the Responses event stream,
// with the reply's mid-stream faults: cut, stall, malformed JSON, or an
// error event, about halfway.
func (s *Server) writeResponsesStream(ctx context.Context, w http.ResponseWriter, a *answerResponse, gate <-chan struct{}) {
	rc := startEventStream(w)
	events := a.events()
	buf := make([]byte, 0, 512)
	faults := streamFaults{
		cut: cutConnection(w),
		malformed: func(i int) bool {
			typ := events[i].typ
			_, err := w.Write([]byte("event: " + typ + "\ndata: {\"type\":\"" + typ + "\",\n\n"))
			return err == nil
		},
		errorEvent: func(i int) {
			_, _ = w.Write([]byte(`event: error` + "\n" + `data: {"type":"error","sequence_number":` + strconv.Itoa(i) +
				`,"code":"` + ErrorEventCode + `","message":"The server had an error while processing your request.","param":null}` + "\n\n"))
			_ = rc.Flush()
		},
	}
	s.sendEvents(ctx, a.reply.Fault, len(events), 2, gate, faults, func(i int) bool {
		ev := events[i]
		buf = append(buf[:0], "event: "+ev.typ+"\ndata: "...)
		buf = append(ev.appendData(buf, i), "\n\n"...)
		if _, err := w.Write(buf); err != nil {
			return false
		}
		return rc.Flush() == nil
	})
}

// rEvent is one streamed event: its type and the members after
// sequence_number, each with its leading comma.
type rEvent struct {
	typ    string
	fields []byte
}

// appendData appends the event's data, the i-th of its stream: the JSON
// object an SSE data line or a WebSocket message carries.
func (ev rEvent) appendData(b []byte, i int) []byte {
	b = append(b, `{"type":"`+ev.typ+`","sequence_number":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, ev.fields...)
	return append(b, '}')
}

// events lists the answer's stream.
func (a *answerResponse) events() []rEvent {
	var evs []rEvent
	add := func(typ string, f []byte) { evs = append(evs, rEvent{typ, f}) }
	ref := func(id string, idx int, content bool) []byte {
		b := gjson.AppendJSONString([]byte(`,"item_id":`), id)
		b = strconv.AppendInt(append(b, `,"output_index":`...), int64(idx), 10)
		if content {
			b = append(b, `,"content_index":0`...)
		}
		return b
	}
	item := func(idx int, it []byte) []byte {
		b := strconv.AppendInt([]byte(`,"output_index":`), int64(idx), 10)
		return append(append(b, `,"item":`...), it...)
	}
	chunks := a.reply.Chunks
	if chunks <= 0 {
		chunks = 4
	}
	add("response.created", a.appendResponse([]byte(`,"response":`), "in_progress", false))
	add("response.in_progress", a.appendResponse([]byte(`,"response":`), "in_progress", false))
	idx := 0
	if a.reasoning != "" {
		add("response.output_item.added", item(idx, []byte(`{"id":"`+a.rsID()+`","type":"reasoning","summary":[]}`)))
		add("response.output_item.done", item(idx, a.appendReasoning(nil)))
		idx++
	}
	if a.hasMessage() {
		add("response.output_item.added", item(idx, a.appendMessage(nil, false)))
		part := 0
		stream := func(kind, text string) {
			b := ref(a.msgID(), idx, false)
			b = strconv.AppendInt(append(b, `,"content_index":`...), int64(part), 10)
			empty := appendTextPart(nil, "")
			full := appendTextPart(nil, text)
			deltaType, doneType, field := "response.output_text.delta", "response.output_text.done", "text"
			if kind == "refusal" {
				empty, full = appendRefusalPart(nil, ""), appendRefusalPart(nil, text)
				deltaType, doneType, field = "response.refusal.delta", "response.refusal.done", "refusal"
			}
			add("response.content_part.added", append(append(append([]byte(nil), b...), `,"part":`...), empty...))
			for _, p := range splitRunes(text, chunks) {
				d := gjson.AppendJSONString(append(append([]byte(nil), b...), `,"delta":`...), p)
				if kind != "refusal" {
					d = append(d, `,"logprobs":[]`...)
				}
				add(deltaType, d)
			}
			d := gjson.AppendJSONString(append(append([]byte(nil), b...), `,"`+field+`":`...), text)
			if kind != "refusal" {
				d = append(d, `,"logprobs":[]`...)
			}
			add(doneType, d)
			add("response.content_part.done", append(append(append([]byte(nil), b...), `,"part":`...), full...))
			part++
		}
		if a.hasText {
			stream("text", a.text)
		}
		if a.reply.Refusal != "" {
			stream("refusal", a.reply.Refusal)
		}
		add("response.output_item.done", item(idx, a.appendMessage(nil, true)))
		idx++
	}
	for i := range a.calls {
		add("response.output_item.added", item(idx, a.appendCall(nil, i, false)))
		for _, p := range splitRunes(a.calls[i].Arguments, 3) {
			add("response.function_call_arguments.delta", gjson.AppendJSONString(append(ref(a.fcID(i), idx, false), `,"delta":`...), p))
		}
		add("response.function_call_arguments.done", gjson.AppendJSONString(append(ref(a.fcID(i), idx, false), `,"arguments":`...), a.calls[i].Arguments))
		add("response.output_item.done", item(idx, a.appendCall(nil, i, true)))
		idx++
	}
	add("response.completed", a.appendResponse([]byte(`,"response":`), "completed", true))
	return evs
}
