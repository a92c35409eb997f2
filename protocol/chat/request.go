package chat

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/jsonscan"
)

// Message is one message of a request: its role and its exact JSON bytes.
//
// Raw points into the body the message was parsed from; copy it if it must
// outlive that body. Role is always one of the Role constants and never
// points into the body.
type Message struct {
	Role string
	Raw  []byte
}

// Request is a validated view of a chat-completions request body.
//
// Body, Messages[i].Raw and Tools all share the memory of the body given to
// [ParseRequest]: the caller must keep that body unchanged while the Request
// is in use (with fasthttp, not past the handler). Model is a copy.
type Request struct {
	// Body is the request body as the client sent it.
	Body []byte
	// Messages holds the elements of "messages" in order.
	Messages []Message
	// Model is the "model" value, or "" when absent.
	Model string
	// Stream is the "stream" value, false when absent.
	Stream bool
	// MaxTokens is max_completion_tokens, else max_tokens, else 0.
	MaxTokens int
	// Tools is the raw JSON of "tools", nil when absent or null.
	Tools []byte
	// N is the "n" value (choices asked for), 0 when absent.
	N int

	// msgStart and msgEnd bound the "messages" array value inside Body.
	msgStart, msgEnd int
}

// ParseRequest validates body as a chat-completions request and returns a
// view of it. Every error is an *[Error] naming the offending parameter.
//
// It checks the shape the proxy relies on (valid UTF-8 JSON nested at most
// [MaxDepth] levels, an object whose "messages" is a non-empty array of
// well-formed messages, and the types of model, stream and the token
// limits) and leaves everything else, including whether tool calls are
// answered, to the upstream and the proxy.
func ParseRequest(body []byte) (Request, error) {
	return parseRequest(body, true)
}

// CheckRequest validates body as [ParseRequest] does, with the same error
// for every body, without building the view: for a caller that forwards
// the body as it came (the proxy's path without history). It reports the
// request's "stream" (Request.Stream). It does not allocate for a valid
// body.
func CheckRequest(body []byte) (stream bool, err error) {
	if stream, ok := plainValid(body); ok {
		return stream, nil
	}
	r, err := parseRequest(body, false)
	return r.Stream, err
}

// parseRequest is ParseRequest, and CheckRequest when view is false: then
// it validates the same way but keeps neither the messages nor the model.
func parseRequest(body []byte, view bool) (Request, error) {
	doc, root, err := checkBody(body)
	if err != nil {
		return Request{}, err
	}
	r := Request{Body: body}
	var f topFields
	if err := f.read(&r, doc, root, view); err != nil {
		return Request{}, err
	}
	if err := f.checkDuplicates(); err != nil {
		return Request{}, err
	}
	if n, err := tokenLimit("max_tokens", f.maxTokens); err != nil {
		return Request{}, err
	} else if n != 0 {
		r.MaxTokens = n
	}
	if n, err := tokenLimit("max_completion_tokens", f.maxCompletion); err != nil {
		return Request{}, err
	} else if f.maxCompletion.Exists() && f.maxCompletion.Type != gjson.Null {
		r.MaxTokens = n
	}
	if err := readMessages(&r, doc, &f, view); err != nil {
		return Request{}, err
	}
	return r, nil
}

// checkBody checks that body is a JSON object, nested at most MaxDepth
// levels, in valid UTF-8, and returns it as a string (sharing body's
// bytes) and parsed.
func checkBody(body []byte) (string, gjson.Result, error) {
	if CheckDepth(body) != nil {
		return "", gjson.Result{}, &Error{Message: "The JSON body is nested too deeply (more than " + strconv.Itoa(MaxDepth) + " levels).", Code: "invalid_json"}
	}
	if !gjson.ValidBytes(body) {
		return "", gjson.Result{}, &Error{Message: "We could not parse the JSON body of your request. The API expects a JSON payload, but what was sent was not valid JSON."}
	}
	doc := bytesString(body)
	root := gjson.Parse(doc)
	if !utf8.Valid(body) {
		return "", gjson.Result{}, invalidUTF8(doc, root)
	}
	if !root.IsObject() {
		return "", gjson.Result{}, &Error{Message: "Invalid type for request body: expected an object, but got " + jsonscan.TypeName(root.Raw) + " instead."}
	}
	return doc, root, nil
}

// topFields are the request's top-level fields parseRequest checks
// after reading them all, and how often each of those it rejects
// duplicates of appeared.
type topFields struct {
	messages       gjson.Result
	haveMessages   bool
	maxTokens      gjson.Result
	maxCompletion  gjson.Result
	seenMessages   int
	seenModel      int
	seenStream     int
	seenTools      int
	seenMaxTokens  int
	seenMaxCompTok int
}

// read reads root's top-level fields (doc's): into r those it can check
// alone (model, kept only with view; stream, n, tools), into f the rest
// and the counts.
func (f *topFields) read(r *Request, doc string, root gjson.Result, view bool) error {
	var err error
	root.ForEach(func(key, value gjson.Result) bool {
		// Duplicate keys of the fields the proxy reads are rejected: a
		// JSON decoder upstream may keep a different one than gjson does,
		// and then the validated or rewritten value would not be the one
		// used.
		switch key.Str {
		case "messages":
			f.seenMessages++
			f.messages, f.haveMessages = value, value.Type != gjson.Null
		case "model":
			f.seenModel++
			switch value.Type {
			case gjson.String:
				if view {
					r.Model = strings.Clone(value.Str)
				}
			case gjson.Null:
			default:
				err = invalidType("model", "a string", value)
			}
		case "stream":
			f.seenStream++
			switch value.Type {
			case gjson.True:
				r.Stream = true
			case gjson.False, gjson.Null:
			default:
				err = invalidType("stream", "a boolean", value)
			}
		case "max_tokens":
			f.seenMaxTokens++
			f.maxTokens = value
		case "max_completion_tokens":
			f.seenMaxCompTok++
			f.maxCompletion = value
		case "n":
			switch value.Type {
			case gjson.Number:
				r.N = int(value.Int())
			case gjson.Null:
			default:
				err = invalidType("n", "an integer", value)
			}
		case "tools":
			f.seenTools++
			if value.Type != gjson.Null {
				off := offsetIn(doc, value.Raw)
				r.Tools = r.Body[off : off+len(value.Raw) : off+len(value.Raw)]
			}
		}
		return err == nil
	})
	return err
}

// checkDuplicates rejects a field the proxy reads that appeared more
// than once.
func (f *topFields) checkDuplicates() error {
	for _, d := range [...]struct {
		name string
		n    int
	}{{"messages", f.seenMessages}, {"model", f.seenModel}, {"stream", f.seenStream}, {"tools", f.seenTools}, {"max_tokens", f.seenMaxTokens}, {"max_completion_tokens", f.seenMaxCompTok}} {
		if d.n > 1 {
			return &Error{Message: "Duplicate parameter: '" + d.name + "' appears more than once.", Param: d.name, Code: "invalid_value"}
		}
	}
	return nil
}

// readMessages checks r's messages (f.messages: a non-empty
// array of valid messages), notes where they lie in doc, and with view
// keeps each one's role and bytes.
func readMessages(r *Request, doc string, f *topFields, view bool) error {
	if !f.haveMessages {
		return &Error{Message: "Missing required parameter: 'messages'.", Param: "messages", Code: "missing_required_parameter"}
	}
	messages := f.messages
	if !messages.IsArray() {
		return invalidType("messages", "an array", messages)
	}
	r.msgStart = offsetIn(doc, messages.Raw)
	r.msgEnd = r.msgStart + len(messages.Raw)
	if view {
		r.Messages = make([]Message, 0, 16)
	}
	n := 0
	var err error
	messages.ForEach(func(_, m gjson.Result) bool {
		var role string
		role, err = checkMessage(n, m)
		if err != nil {
			return false
		}
		n++
		if view {
			off := offsetIn(doc, m.Raw)
			r.Messages = append(r.Messages, Message{Role: role, Raw: r.Body[off : off+len(m.Raw) : off+len(m.Raw)]})
		}
		return true
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return &Error{Message: "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", Param: "messages", Code: "empty_array"}
	}
	return nil
}

// AppendBody appends to dst the request body with its "messages" value
// replaced by a JSON array of msgs, every other byte exactly as in r.Body,
// and returns the extended slice. Each element of msgs must be one JSON
// value; AppendBody does not check them.
func (r Request) AppendBody(dst []byte, msgs [][]byte) []byte {
	return spliceMessages(dst, r.Body, r.msgStart, r.msgEnd, nil, msgs)
}

// spliceMessages appends body with its messages array, body[start:end],
// replaced by the array of head's and msgs' messages.
func spliceMessages(dst, body []byte, start, end int, head, msgs [][]byte) []byte {
	n := len(body) - (end - start) + 2 + len(head) + len(msgs)
	for _, m := range head {
		n += len(m)
	}
	for _, m := range msgs {
		n += len(m)
	}
	if cap(dst)-len(dst) < n {
		grown := make([]byte, len(dst), len(dst)+n)
		copy(grown, dst)
		dst = grown
	}
	dst = append(dst, body[:start]...)
	dst = append(dst, '[')
	i := 0
	for _, part := range [2][][]byte{head, msgs} {
		for _, m := range part {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, m...)
			i++
		}
	}
	dst = append(dst, ']')
	return append(dst, body[end:]...)
}

// checkMessage validates messages[i] and returns its role.
func checkMessage(i int, m gjson.Result) (string, error) {
	if !m.IsObject() {
		return "", invalidType(index("messages", i), "an object", m)
	}
	// Parameter names are built only on failure: the success path must
	// not allocate per message.
	r, bad := messageRole(m)
	if bad != nil {
		bad.at(index("messages", i))
		return "", bad
	}
	return r, nil
}

// at prefixes e's parameter (a path relative to a message, like ".role")
// with param, and rewrites the message to match.
func (e *Error) at(param string) {
	e.Message = strings.Replace(e.Message, "'"+e.Param, "'"+param+e.Param, 1)
	e.Param = param + e.Param
}

// index returns "param[i]".
func index(param string, i int) string { return param + "[" + strconv.Itoa(i) + "]" }

// messageRole validates one message object and returns its role. Errors
// name parameters relative to the message (".role"), for the caller to
// prefix.
func messageRole(m gjson.Result) (string, *Error) {
	var f messageFields
	m.ForEach(func(key, value gjson.Result) bool {
		switch key.Str {
		case "audio":
			f.audio = value
		case "role":
			f.role = value
		case "content":
			f.content = value
		case "tool_calls":
			f.toolCalls = value
		case "tool_call_id":
			f.toolCallID = value
		case "refusal":
			f.refusal = value
		}
		return true
	})
	r, err := knownRole(f.role)
	if err != nil {
		return "", err
	}
	if err := checkContent(".content", f.content); err != nil {
		return "", err
	}
	hasContent := f.content.Exists() && f.content.Type != gjson.Null
	switch r {
	case RoleSystem, RoleDeveloper, RoleUser:
		if !hasContent {
			return "", missing(".content")
		}
	case RoleTool:
		switch {
		case !f.toolCallID.Exists() || f.toolCallID.Type == gjson.Null:
			return "", missing(".tool_call_id")
		case f.toolCallID.Type != gjson.String:
			return "", invalidType(".tool_call_id", "a string", f.toolCallID)
		case !hasContent:
			return "", missing(".content")
		}
	case RoleAssistant:
		if err := checkAssistant(&f, hasContent); err != nil {
			return "", err
		}
	}
	return r, nil
}

// messageFields are the members of a message messageRole checks.
type messageFields struct {
	role, content, toolCalls, toolCallID, refusal, audio gjson.Result
}

// knownRole returns the role constant role names, or the error for a
// missing, mistyped or unknown role.
func knownRole(role gjson.Result) (string, *Error) {
	switch {
	case !role.Exists() || role.Type == gjson.Null:
		return "", missing(".role")
	case role.Type != gjson.String:
		return "", invalidType(".role", "a string", role)
	}
	switch role.Str {
	case RoleSystem:
		return RoleSystem, nil
	case RoleDeveloper:
		return RoleDeveloper, nil
	case RoleUser:
		return RoleUser, nil
	case RoleAssistant:
		return RoleAssistant, nil
	case RoleTool:
		return RoleTool, nil
	}
	return "", &Error{
		Message: "Invalid value for '.role': " + strconv.Quote(role.Str) + ". Supported values are: 'system', 'developer', 'user', 'assistant' and 'tool'.",
		Param:   ".role",
		Code:    "invalid_value",
	}
}

// checkAssistant checks an assistant message's refusal, tool calls and
// audio, and that it has one of them or content.
func checkAssistant(f *messageFields, hasContent bool) *Error {
	if f.refusal.Exists() && f.refusal.Type != gjson.Null && f.refusal.Type != gjson.String {
		return invalidType(".refusal", "a string", f.refusal)
	}
	n, err := checkToolCalls(".tool_calls", f.toolCalls)
	if err != nil {
		return err
	}
	// An earlier audio answer is referred to by its id alone.
	hasAudio := f.audio.Exists() && f.audio.Type != gjson.Null
	if hasAudio {
		if err := requireObject(f.audio); err != nil {
			err.at(".audio")
			return err
		}
		if err := requireString(f.audio.Get("id")); err != nil {
			err.at(".audio.id")
			return err
		}
	}
	if !hasContent && n == 0 && f.refusal.Type != gjson.String && !hasAudio {
		return &Error{
			Message: "Missing required parameter: '.content'. An assistant message needs content, tool_calls, refusal or audio.",
			Param:   ".content",
			Code:    "missing_required_parameter",
		}
	}
	return nil
}

// checkContent validates a message's content: absent, null, a string, or an
// array of content parts (see [checkPart]).
func checkContent(param string, c gjson.Result) *Error {
	switch {
	case !c.Exists(), c.Type == gjson.Null, c.Type == gjson.String:
		return nil
	case !c.IsArray():
		return invalidType(param, "a string or an array", c)
	}
	var err *Error
	i := 0
	c.ForEach(func(_, part gjson.Result) bool {
		if err = checkPart(part); err != nil {
			err.at(index(param, i))
		}
		i++
		return err == nil
	})
	return err
}

// checkPart validates one content part: an object with a string "type"
// and, for the types OpenAI defines, the member that type requires, as
// OpenAI checks it (a string "text" or "refusal", an "image_url" object
// with a string "url", an "input_audio" object). A part of another type
// passes: new types appear upstream before Recall knows them, and the
// upstream decides. Errors name parameters relative to the part (".text"),
// for the caller to prefix.
func checkPart(part gjson.Result) *Error {
	if !part.IsObject() {
		return invalidType("", "an object", part)
	}
	var typ, text, refusal, imageURL, inputAudio gjson.Result
	part.ForEach(func(key, value gjson.Result) bool {
		switch key.Str {
		case "type":
			typ = value
		case "text":
			text = value
		case "refusal":
			refusal = value
		case "image_url":
			imageURL = value
		case "input_audio":
			inputAudio = value
		}
		return true
	})
	switch {
	case !typ.Exists() || typ.Type == gjson.Null:
		return missing(".type")
	case typ.Type != gjson.String:
		return invalidType(".type", "a string", typ)
	}
	var err *Error
	switch typ.Str {
	case "text":
		if err = requireString(text); err != nil {
			err.at(".text")
		}
	case "refusal":
		if err = requireString(refusal); err != nil {
			err.at(".refusal")
		}
	case "image_url":
		if err = requireObject(imageURL); err != nil {
			err.at(".image_url")
		} else if err = requireString(imageURL.Get("url")); err != nil {
			err.at(".image_url.url")
		}
	case "input_audio":
		if err = requireObject(inputAudio); err != nil {
			err.at(".input_audio")
		}
	}
	return err
}

// checkToolCalls validates an assistant message's tool_calls and returns how
// many there are.
func checkToolCalls(param string, tc gjson.Result) (int, *Error) {
	switch {
	case !tc.Exists(), tc.Type == gjson.Null:
		return 0, nil
	case !tc.IsArray():
		return 0, invalidType(param, "an array", tc)
	}
	var err *Error
	n := 0
	tc.ForEach(func(_, call gjson.Result) bool {
		i := n
		n++
		if !call.IsObject() {
			err = invalidType(index(param, i), "an object", call)
			return false
		}
		var id, fn gjson.Result
		call.ForEach(func(key, value gjson.Result) bool {
			switch key.Str {
			case "id":
				id = value
			case "function":
				fn = value
			}
			return true
		})
		if err = requireString(id); err == nil {
			switch {
			case !fn.Exists() || fn.Type == gjson.Null:
				err = missing(".function")
			case !fn.IsObject():
				err = invalidType(".function", "an object", fn)
			default:
				if err = requireString(fn.Get("name")); err != nil {
					err.at(".function.name")
				} else if err = requireString(fn.Get("arguments")); err != nil {
					err.at(".function.arguments")
				}
			}
		} else {
			err.at(".id")
		}
		if err != nil {
			err.at(index(param, i))
		}
		return err == nil
	})
	return n, err
}

// tokenLimit validates an optional numeric token limit and returns it, or 0
// when it is absent or null.
func tokenLimit(param string, v gjson.Result) (int, error) {
	switch v.Type {
	case gjson.Null:
		return 0, nil
	case gjson.Number:
		return int(v.Int()), nil
	default:
		return 0, invalidType(param, "a number", v)
	}
}

// requireString reports a missing or non-string required parameter, with
// an empty Param for the caller to fill in with [Error.at].
func requireString(v gjson.Result) *Error {
	switch {
	case !v.Exists() || v.Type == gjson.Null:
		return missing("")
	case v.Type != gjson.String:
		return invalidType("", "a string", v)
	}
	return nil
}

// requireObject is requireString for an object.
func requireObject(v gjson.Result) *Error {
	switch {
	case !v.Exists() || v.Type == gjson.Null:
		return missing("")
	case !v.IsObject():
		return invalidType("", "an object", v)
	}
	return nil
}

func missing(param string) *Error {
	return &Error{Message: "Missing required parameter: '" + param + "'.", Param: param, Code: "missing_required_parameter"}
}

func invalidType(param, want string, got gjson.Result) *Error {
	return &Error{
		Message: "Invalid type for '" + param + "': expected " + want + ", but got " + jsonscan.TypeName(got.Raw) + " instead.",
		Param:   param,
		Code:    "invalid_type",
	}
}

// plainValid reports whether body is certainly a request ParseRequest
// accepts, in one pass over it: valid UTF-8 JSON nested at most MaxDepth
// levels, an object whose fields ParseRequest reads have the types it
// accepts, none of them twice, and whose "messages" is a non-empty array
// of messages of the common shape (a system, developer, user or assistant
// role spelled without escapes, string content, none of tool_calls,
// tool_call_id, refusal or audio). For anything else, valid or not, it
// answers false and CheckRequest runs ParseRequest's checks, which name
// the error. stream is the request's "stream" when ok. It does not
// allocate.
func plainValid(body []byte) (stream, ok bool) {
	s := scanner{Scanner: jsonscan.Scanner{B: body}}
	s.Space()
	if !s.request() {
		return false, false
	}
	s.Space()
	return s.stream, s.I == len(s.B)
}

// scanner walks a request for plainValid.
type scanner struct {
	jsonscan.Scanner
	stream bool // the request's "stream" is true
}

// request consumes the request object (depth 1).
func (s *scanner) request() bool {
	var messages, model, stream, tools, maxTokens, maxCompletion int
	ok := s.Object(func(name []byte) bool {
		var kind int
		var ok bool
		switch string(name) {
		case "messages":
			messages++
			return s.messages()
		case "model":
			model++
			kind, ok = s.Value(MaxDepth - 1)
			return ok && (kind == jsonscan.KindString || kind == jsonscan.KindNull)
		case "stream":
			stream++
			kind, ok = s.Value(MaxDepth - 1)
			s.stream = kind == jsonscan.KindTrue
			return ok && (kind == jsonscan.KindTrue || kind == jsonscan.KindFalse || kind == jsonscan.KindNull)
		case "max_tokens":
			maxTokens++
		case "max_completion_tokens":
			maxCompletion++
		case "n":
		case "tools":
			tools++
			_, ok = s.Value(MaxDepth - 1)
			return ok
		default:
			_, ok = s.Value(MaxDepth - 1)
			return ok
		}
		// max_tokens, max_completion_tokens, n: a number or null.
		kind, ok = s.Value(MaxDepth - 1)
		return ok && (kind == jsonscan.KindNumber || kind == jsonscan.KindNull)
	})
	return ok && messages == 1 && model <= 1 && stream <= 1 && tools <= 1 && maxTokens <= 1 && maxCompletion <= 1
}

// messages consumes a non-empty array of plain messages (depth 2).
func (s *scanner) messages() bool {
	n, ok := s.Array(func(int) bool { return s.message() })
	return ok && n > 0
}

// message consumes a message of a shape whose checks the one pass makes
// (depth 3): a role spelled without escapes; content a string, null or
// an array of content parts (scanner.parts); an assistant's tool_calls
// (scanner.toolCalls) and string refusal, a tool result's string
// tool_call_id; none of these twice, no audio. It reports false for a
// message ParseRequest would reject and for one it cannot decide.
func (s *scanner) message() bool {
	var role []byte
	var roles, contents, calls, callIDs, refusals, nCalls int
	content, callID, refusal := -1, -1, -1 // the kinds of the values, -1 for none
	ok := s.Object(func(name []byte) bool {
		var ok bool
		switch string(name) {
		case "role":
			roles++
			role, ok = s.Plain()
		case "content":
			contents++
			if s.At('[') {
				content, ok = jsonscan.KindArray, s.parts()
			} else {
				content, ok = s.Value(MaxDepth - 3)
				ok = ok && (content == jsonscan.KindString || content == jsonscan.KindNull)
			}
		case "tool_calls":
			calls++
			if s.At('[') {
				nCalls, ok = s.toolCalls()
			} else {
				var kind int
				kind, ok = s.Value(MaxDepth - 3)
				ok = ok && kind == jsonscan.KindNull
			}
		case "tool_call_id":
			callIDs++
			callID, ok = s.Value(MaxDepth - 3)
		case "refusal":
			refusals++
			refusal, ok = s.Value(MaxDepth - 3)
			ok = ok && (refusal == jsonscan.KindString || refusal == jsonscan.KindNull)
		case "audio":
			return false
		default:
			_, ok = s.Value(MaxDepth - 3)
		}
		return ok
	})
	if !ok || roles != 1 || contents > 1 || calls > 1 || callIDs > 1 || refusals > 1 {
		return false
	}
	hasContent := content != -1 && content != jsonscan.KindNull
	switch string(role) {
	case RoleSystem, RoleDeveloper, RoleUser:
		return hasContent
	case RoleTool:
		return hasContent && callID == jsonscan.KindString
	case RoleAssistant:
		return hasContent || nCalls > 0 || refusal == jsonscan.KindString
	}
	return false
}

// parts consumes a message's array of content parts (depth 4), each an
// object (depth 5) with a "type" spelled without escapes and the member
// its type requires as checkPart checks it: a string "text" or
// "refusal", an "image_url" object with a string "url", an
// "input_audio" object; none of these twice. A part of a type checkPart
// does not know passes, as there.
func (s *scanner) parts() bool {
	_, ok := s.Array(func(int) bool { return s.part() })
	return ok
}

func (s *scanner) part() bool {
	var typ []byte
	types := 0
	seen := [4]int{} // text, refusal, image_url, input_audio: how many
	ok4 := [4]bool{} // whether each is as its type requires
	ok := s.Object(func(name []byte) bool {
		var kind int
		var ok bool
		switch string(name) {
		case "type":
			types++
			typ, ok = s.Plain()
		case "text":
			seen[0]++
			kind, ok = s.Value(MaxDepth - 5)
			ok4[0] = kind == jsonscan.KindString
		case "refusal":
			seen[1]++
			kind, ok = s.Value(MaxDepth - 5)
			ok4[1] = kind == jsonscan.KindString
		case "image_url":
			seen[2]++
			if s.At('{') {
				ok4[2], ok = s.imageURL()
			} else {
				_, ok = s.Value(MaxDepth - 5)
			}
		case "input_audio":
			seen[3]++
			kind, ok = s.Value(MaxDepth - 5)
			ok4[3] = kind == jsonscan.KindObject
		default:
			_, ok = s.Value(MaxDepth - 5)
		}
		return ok
	})
	if !ok || types != 1 || seen[0] > 1 || seen[1] > 1 || seen[2] > 1 || seen[3] > 1 {
		return false
	}
	switch string(typ) {
	case "text":
		return ok4[0]
	case "refusal":
		return ok4[1]
	case "image_url":
		return ok4[2]
	case "input_audio":
		return ok4[3]
	}
	return true
}

// imageURL consumes an image_url object (depth 6) and reports whether it
// has one "url", a string (ok: the object was consumed).
func (s *scanner) imageURL() (valid, ok bool) {
	urls, url := 0, -1
	ok = s.Object(func(name []byte) bool {
		kind, ok := s.Value(MaxDepth - 6)
		if string(name) == "url" {
			urls, url = urls+1, kind
		}
		return ok
	})
	return ok && urls == 1 && url == jsonscan.KindString, ok
}

// toolCalls consumes an assistant's array of tool calls (depth 4) and
// returns how many there are; ok only if each is an object (depth 5)
// with a string "id" and a "function" object (depth 6) with a string
// "name" and "arguments", none of these twice.
func (s *scanner) toolCalls() (n int, ok bool) {
	return s.Array(func(int) bool { return s.toolCall() })
}

func (s *scanner) toolCall() bool {
	ids, fns, id, fnOK := 0, 0, -1, false
	ok := s.Object(func(name []byte) bool {
		var ok bool
		switch string(name) {
		case "id":
			ids++
			id, ok = s.Value(MaxDepth - 5)
		case "function":
			fns++
			if s.At('{') {
				fnOK, ok = s.function()
			} else {
				_, ok = s.Value(MaxDepth - 5)
			}
		default:
			_, ok = s.Value(MaxDepth - 5)
		}
		return ok
	})
	return ok && ids == 1 && id == jsonscan.KindString && fns == 1 && fnOK
}

// function consumes a tool call's function object (depth 6) and reports
// whether it has one string "name" and one string "arguments" (ok: the
// object was consumed).
func (s *scanner) function() (valid, ok bool) {
	names, args, name, arg := 0, 0, -1, -1
	ok = s.Object(func(key []byte) bool {
		kind, ok := s.Value(MaxDepth - 6)
		switch string(key) {
		case "name":
			names, name = names+1, kind
		case "arguments":
			args, arg = args+1, kind
		}
		return ok
	})
	return ok && names == 1 && args == 1 && name == jsonscan.KindString && arg == jsonscan.KindString, ok
}
