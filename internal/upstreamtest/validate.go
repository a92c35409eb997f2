package upstreamtest

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/jsonscan"
)

// APIError is an OpenAI-shaped error: the object under "error" in an error
// response body. Empty Param or Code render as JSON null, as OpenAI does.
type APIError struct {
	Message string
	Type    string
	Param   string
	Code    string
}

// Error returns the message, so that an *APIError can be used as an error.
func (e *APIError) Error() string { return "upstreamtest: " + e.Message }

// JSON renders the full error body: {"error":{"message","type","param","code"}}.
func (e *APIError) JSON() []byte {
	b := make([]byte, 0, 64+len(e.Message))
	b = append(b, `{"error":{"message":`...)
	b = gjson.AppendJSONString(b, e.Message)
	b = append(b, `,"type":`...)
	b = appendNullableString(b, e.Type)
	b = append(b, `,"param":`...)
	b = appendNullableString(b, e.Param)
	b = append(b, `,"code":`...)
	b = appendNullableString(b, e.Code)
	return append(b, "}}\n"...)
}

func appendNullableString(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return gjson.AppendJSONString(b, s)
}

const invalidRequest = "invalid_request_error"

// Messages of OpenAI's tool-sequencing errors, spelling mistakes included.
const (
	msgToolNotResponse = "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
	msgCallsUnanswered = "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
	msgParseBody       = "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)"
)

// ValidateMessages checks a chat-completions "messages" array the way
// OpenAI does and returns the error OpenAI would answer with, or nil.
//
// It checks the shape of every message first (an object, a known role, no
// key its role does not allow, the content each role requires, well-formed
// tool_calls, a tool_call_id on tool messages) and then the tool-call sequencing: every tool message must follow
// an assistant message with tool_calls, directly or after other tool messages
// answering it, and answer one of its call ids exactly once; every call must
// be answered before the next non-tool message or the end of the array.
// Messages, error types, params and codes follow OpenAI's own; the one
// wording of this package's own is for duplicate ids inside one assistant
// message's tool_calls, which OpenAI also rejects.
func ValidateMessages(msgs []json.RawMessage) *APIError {
	rs := make([]gjson.Result, len(msgs))
	for i, raw := range msgs {
		if !gjson.ValidBytes(raw) {
			return &APIError{Message: msgParseBody, Type: invalidRequest}
		}
		// The results point into raw without copying; nothing derived from
		// them outlives this call except through fresh concatenations.
		rs[i] = gjson.Parse(unsafe.String(unsafe.SliceData(raw), len(raw)))
	}
	return validate(rs)
}

// validateArray validates a parsed "messages" value of a request body.
func validateArray(v gjson.Result) *APIError {
	if !v.Exists() {
		return &APIError{Message: "Missing required parameter: 'messages'.", Type: invalidRequest, Param: "messages", Code: "missing_required_parameter"}
	}
	if !v.IsArray() {
		return invalidType("messages", "an array", v)
	}
	return validate(v.Array())
}

// message holds the fields of one message that the validator looks at.
type message struct {
	obj                                                                      gjson.Result
	role, content, toolCalls, toolCallID, name, functionCall, refusal, audio gjson.Result
}

// scan reads m's fields in one pass (see members).
func scan(m gjson.Result) message {
	f := message{obj: m}
	members(m, []string{"role", "content", "tool_calls", "tool_call_id", "name", "function_call", "refusal", "audio"},
		&f.role, &f.content, &f.toolCalls, &f.toolCallID, &f.name, &f.functionCall, &f.refusal, &f.audio)
	return f
}

// members reads the members of obj named in names, each into the
// result in dst at the name's index, in one pass; a repeated key's last
// value wins, as with OpenAI's parser.
func members(obj gjson.Result, names []string, dst ...*gjson.Result) {
	obj.ForEach(func(k, v gjson.Result) bool {
		if i := slices.Index(names, k.Str); i >= 0 {
			*dst[i] = v
		}
		return true
	})
}

// fields returns the keys a message of role may have. Strict
// OpenAI-compatible providers answer 400 to any other, such as the
// "annotations" or "refusal": null of a response message resent as is.
func fields(role string) []string {
	switch role {
	case "assistant":
		return []string{"role", "content", "name", "tool_calls", "refusal", "audio", "function_call"}
	case "tool":
		return []string{"role", "content", "tool_call_id"}
	default: // system, developer, user, and the legacy function
		return []string{"role", "content", "name"}
	}
}

// validateFields rejects the first key of message i its role does not allow.
func validateFields(i int, m *message) *APIError {
	allowed := fields(m.role.Str)
	var err *APIError
	m.obj.ForEach(func(k, _ gjson.Result) bool {
		if !contains(allowed, k.Str) {
			p := at(i) + "." + k.Str
			err = &APIError{Message: "Unknown parameter: '" + p + "'.", Type: invalidRequest, Param: p, Code: "unknown_parameter"}
		}
		return err == nil
	})
	return err
}

func validate(msgs []gjson.Result) *APIError {
	if len(msgs) == 0 {
		return &APIError{
			Message: "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
			Type:    invalidRequest, Param: "messages", Code: "empty_array",
		}
	}
	steps := make([]step, len(msgs))
	var callIDs []string
	for i, m := range msgs {
		if !m.IsObject() {
			return invalidType(at(i), "an object", m)
		}
		f := scan(m)
		lo := len(callIDs)
		if e := validateShape(i, &f, &callIDs); e != nil {
			return e
		}
		steps[i] = step{role: f.role.Str, toolCallID: f.toolCallID.Str, lo: lo, hi: len(callIDs)}
	}
	return validateSequence(steps, callIDs)
}

var supportedRoles = []string{"system", "assistant", "user", "function", "tool", "developer"}

// partTypes returns the content part types a role accepts.
func partTypes(role string) []string {
	switch role {
	case "user":
		return []string{"text", "image_url", "input_audio", "file"}
	case "assistant":
		return []string{"text", "refusal"}
	default:
		return []string{"text"}
	}
}

// at is the param naming message i; error paths only, as it allocates.
func at(i int) string { return "messages[" + strconv.Itoa(i) + "]" }

func validateShape(i int, m *message, callIDs *[]string) *APIError {
	switch {
	case !m.role.Exists():
		return missing(at(i) + ".role")
	case m.role.Type != gjson.String:
		return invalidType(at(i)+".role", "a string", m.role)
	}
	r := m.role.Str
	if !contains(supportedRoles, r) {
		return invalidValue(at(i)+".role", r, supportedRoles)
	}
	if e := validateFields(i, m); e != nil {
		return e
	}
	switch r {
	case "system", "developer", "user":
		if e := validateContent(i, r, m.content, true); e != nil {
			return e
		}
	case "tool":
		if e := validateContent(i, r, m.content, true); e != nil {
			return e
		}
		switch {
		case !m.toolCallID.Exists():
			return missing(at(i) + ".tool_call_id")
		case m.toolCallID.Type != gjson.String:
			return invalidType(at(i)+".tool_call_id", "a string", m.toolCallID)
		}
	case "assistant":
		if e := validateAssistant(i, m, callIDs); e != nil {
			return e
		}
	case "function":
		if !m.name.Exists() {
			return missing(at(i) + ".name")
		}
	}
	if m.name.Exists() && m.name.Type != gjson.String {
		return invalidType(at(i)+".name", "a string", m.name)
	}
	return nil
}

func validateContent(i int, role string, c gjson.Result, required bool) *APIError {
	switch {
	case !c.Exists() && required:
		return missing(at(i) + ".content")
	case !c.Exists(), c.Type == gjson.String:
		return nil
	case c.Type == gjson.Null && !required:
		return nil
	case !c.IsArray():
		return invalidType(at(i)+".content", "one of a string or array of objects", c)
	}
	var err *APIError
	j := 0
	c.ForEach(func(_, p gjson.Result) bool {
		err = validatePart(i, j, role, p)
		j++
		return err == nil
	})
	if err == nil && j == 0 && role != "assistant" {
		p := at(i) + ".content"
		return &APIError{
			Message: "Invalid '" + p + "': empty array. Expected an array with minimum length 1, but got an empty array instead.",
			Type:    invalidRequest, Param: p, Code: "empty_array",
		}
	}
	return err
}

func validatePart(i, j int, role string, p gjson.Result) *APIError {
	path := func() string { return at(i) + ".content[" + strconv.Itoa(j) + "]" }
	if !p.IsObject() {
		return invalidType(path(), "an object", p)
	}
	t := p.Get("type")
	switch {
	case !t.Exists():
		return missing(path() + ".type")
	case t.Type != gjson.String:
		return invalidType(path()+".type", "a string", t)
	}
	if types := partTypes(role); !contains(types, t.Str) {
		return invalidValue(path()+".type", t.Str, types)
	}
	if t.Str == "file" {
		return validateFilePart(path(), p.Get("file"))
	}
	if t.Str == "text" || t.Str == "refusal" {
		f := p.Get(t.Str)
		switch {
		case !f.Exists():
			return missing(path() + "." + t.Str)
		case f.Type != gjson.String:
			return invalidType(path()+"."+t.Str, "a string", f)
		}
	}
	return nil
}

// validateFilePart checks a file part's file: a file_id, or file_data (a
// base64 data: URL) with its filename.
func validateFilePart(path string, f gjson.Result) *APIError {
	switch {
	case !f.Exists():
		return missing(path + ".file")
	case !f.IsObject():
		return invalidType(path+".file", "an object", f)
	case f.Get("file_id").Type == gjson.String:
		return nil
	case !f.Get("file_data").Exists():
		return missing(path + ".file.file_data")
	case !strings.HasPrefix(f.Get("file_data").Str, "data:") || !strings.Contains(f.Get("file_data").Str, ";base64,"):
		return &APIError{Message: "Invalid '" + path + ".file.file_data': expected a base64 data: URL.",
			Type: invalidRequest, Param: path + ".file.file_data", Code: "invalid_value"}
	case f.Get("filename").Str == "":
		return missing(path + ".file.filename")
	}
	return nil
}

func validateAssistant(i int, m *message, callIDs *[]string) *APIError {
	if e := validateContent(i, "assistant", m.content, false); e != nil {
		return e
	}
	if m.audio.Exists() && m.audio.Type != gjson.Null {
		// An earlier audio answer, referred to by its id.
		path := func() string { return at(i) }
		if e := requireStrings(path, ".audio", m.audio, "id"); e != nil {
			return e
		}
	}
	if m.toolCalls.Exists() && m.toolCalls.Type != gjson.Null {
		return validateToolCalls(i, m.toolCalls, callIDs)
	}
	switch {
	case m.audio.IsObject():
		return nil
	case m.content.Exists() && m.content.Type != gjson.Null:
		return nil
	case m.functionCall.Exists() && m.functionCall.Type != gjson.Null:
		return nil
	case m.refusal.Type == gjson.String:
		return nil
	}
	return &APIError{
		Message: "Invalid value for 'content': expected a string, got null.",
		Type:    invalidRequest, Param: "messages.[" + strconv.Itoa(i) + "].content",
	}
}

// validateToolCalls checks message i's tool_calls and appends their ids to
// callIDs.
func validateToolCalls(i int, tc gjson.Result, callIDs *[]string) *APIError {
	if !tc.IsArray() {
		return invalidType(at(i)+".tool_calls", "an array", tc)
	}
	var err *APIError
	start := len(*callIDs)
	tc.ForEach(func(_, c gjson.Result) bool {
		seen := (*callIDs)[start:]
		var id string
		id, err = validateToolCall(i, len(seen), seen, c)
		*callIDs = append(*callIDs, id)
		return err == nil
	})
	if err == nil && len(*callIDs) == start {
		p := at(i) + ".tool_calls"
		return &APIError{
			Message: "Invalid '" + p + "': empty array. Expected an array with minimum length 1, but got an empty array instead.",
			Type:    invalidRequest, Param: p, Code: "empty_array",
		}
	}
	return err
}

// validateToolCall checks call j of message i's tool_calls, given the ids of
// the calls before it, and returns its id.
func validateToolCall(i, j int, seen []string, c gjson.Result) (string, *APIError) {
	path := func() string { return at(i) + ".tool_calls[" + strconv.Itoa(j) + "]" }
	if !c.IsObject() {
		return "", invalidType(path(), "an object", c)
	}
	var id, t, fn, custom gjson.Result
	members(c, []string{"id", "type", "function", "custom"}, &id, &t, &fn, &custom)
	switch {
	case !id.Exists():
		return "", missing(path() + ".id")
	case id.Type != gjson.String:
		return "", invalidType(path()+".id", "a string", id)
	case contains(seen, id.Str):
		return "", &APIError{
			Message: "Invalid parameter: Duplicate value for 'id' of '" + id.Str + "' in '" + at(i) + ".tool_calls'.",
			Type:    invalidRequest, Param: path() + ".id",
		}
	}
	switch {
	case !t.Exists():
		return "", missing(path() + ".type")
	case t.Type != gjson.String:
		return "", invalidType(path()+".type", "a string", t)
	case t.Str == "function":
		return id.Str, requireStrings(path, ".function", fn, "name", "arguments")
	case t.Str == "custom":
		return id.Str, requireStrings(path, ".custom", custom, "name", "input")
	default:
		return "", invalidValue(path()+".type", t.Str, []string{"function", "custom"})
	}
}

// requireStrings checks that obj, named path()+name, is an object whose keys
// are all strings.
func requireStrings(path func() string, name string, obj gjson.Result, keys ...string) *APIError {
	if !obj.Exists() {
		return missing(path() + name)
	}
	if !obj.IsObject() {
		return invalidType(path()+name, "an object", obj)
	}
	for _, k := range keys {
		v := obj.Get(k)
		switch {
		case !v.Exists():
			return missing(path() + name + "." + k)
		case v.Type != gjson.String:
			return invalidType(path()+name+"."+k, "a string", v)
		}
	}
	return nil
}

// step is what the sequence check needs of one message: its role, its
// tool_call_id, and callIDs[lo:hi], the ids of its tool_calls.
type step struct {
	role, toolCallID string
	lo, hi           int
}

// validateSequence checks that tool messages and assistant tool_calls pair up.
func validateSequence(steps []step, callIDs []string) *APIError {
	open := -1       // index of the assistant message whose calls are being answered
	var ids []string // its call ids
	var byBuf [8]int
	answeredBy := byBuf[:0] // per id, the index of the tool message answering it, or -1
	closeOpen := func() *APIError {
		if open < 0 {
			return nil
		}
		var missingIDs []string
		for k, by := range answeredBy {
			if by < 0 {
				missingIDs = append(missingIDs, ids[k])
			}
		}
		if len(missingIDs) > 0 {
			return &APIError{
				Message: msgCallsUnanswered + strings.Join(missingIDs, ", "),
				Type:    invalidRequest, Param: "messages.[" + strconv.Itoa(open) + "].role",
			}
		}
		open = -1
		return nil
	}
	for i := range steps {
		m := &steps[i]
		role := m.role
		if role == "tool" {
			if open < 0 {
				return toolNotResponse(i)
			}
			id := m.toolCallID
			k := index(ids, id)
			if k < 0 {
				return toolNotResponse(i)
			}
			if prev := answeredBy[k]; prev >= 0 {
				return &APIError{
					Message: "Invalid parameter: Duplicate value for 'tool_call_id' of '" + id + "', in messages[" +
						strconv.Itoa(prev) + "] and messages[" + strconv.Itoa(i) + "].",
					Type: invalidRequest, Param: "messages.[" + strconv.Itoa(i) + "].tool_call_id",
				}
			}
			answeredBy[k] = i
			continue
		}
		if e := closeOpen(); e != nil {
			return e
		}
		if role != "assistant" || m.hi == m.lo {
			continue
		}
		open = i
		ids, answeredBy = callIDs[m.lo:m.hi], answeredBy[:0]
		for range ids {
			answeredBy = append(answeredBy, -1)
		}
	}
	return closeOpen()
}

func toolNotResponse(i int) *APIError {
	return &APIError{Message: msgToolNotResponse, Type: invalidRequest, Param: "messages.[" + strconv.Itoa(i) + "].role"}
}

func missing(param string) *APIError {
	return &APIError{
		Message: "Missing required parameter: '" + param + "'.",
		Type:    invalidRequest, Param: param, Code: "missing_required_parameter",
	}
}

func invalidType(param, want string, got gjson.Result) *APIError {
	return &APIError{
		Message: "Invalid type for '" + param + "': expected " + want + ", but got " + jsonscan.TypeName(got.Raw) + " instead.",
		Type:    invalidRequest, Param: param, Code: "invalid_type",
	}
}

func invalidValue(param, got string, supported []string) *APIError {
	var b strings.Builder
	b.WriteString("Invalid value: '")
	b.WriteString(got)
	b.WriteString("'. Supported values are: ")
	for k, s := range supported {
		switch {
		case k == 0:
		case k == len(supported)-1 && len(supported) == 2:
			b.WriteString(" and ")
		case k == len(supported)-1:
			b.WriteString(", and ")
		default:
			b.WriteString(", ")
		}
		b.WriteString("'" + s + "'")
	}
	b.WriteString(".")
	return &APIError{Message: b.String(), Type: invalidRequest, Param: param, Code: "invalid_value"}
}

func contains(list []string, s string) bool { return index(list, s) >= 0 }

func index(list []string, s string) int {
	for k, v := range list {
		if v == s {
			return k
		}
	}
	return -1
}
