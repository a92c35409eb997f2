package upstreamtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// POST /v1/models/{model}:generateContent and :streamGenerateContent (and
// the same under /v1beta, Google's own root): the Gemini API, validated
// as strictly as the real one on the points Recall must get right, and
// answered from the same scripted Reply queue (Content, ToolCalls, Fault,
// Status, Hold, Delay, Chunks) as a GenerateContentResponse, or as
// server-sent events of them when the method streams (which needs
// ?alt=sse: without it the API streams a JSON array, which the fake
// refuses).
//
// It refuses, in Gemini's error shape ({"error":{"code","message",
// "status"}}): a request without x-goog-api-key (403) or with an
// Authorization header (401: Gemini reads a bearer token as OAuth); a
// body that is not an object, or has a member generateContent does not
// know ("model", "messages", "stream"); contents missing or empty; a
// content whose role is not user or model, or whose parts are empty or
// hold not exactly one kind of data; two model contents in a row, or a
// first content that is not user (two user contents in a row are taken,
// as the API takes Gemini CLI's router call, which sends its context and
// the prompt so); a functionResponse that answers no
// functionCall of the model content right before it (by id when the call
// has one, by name otherwise), and a model's calls left without as many
// responses in the next content; and a thoughtSignature that is neither
// GeminiSignature of its call's name nor Google's documented
// "skip_thought_signature_validator". For a gemini-3 model a model
// content's first functionCall must carry a signature, as Gemini 3 asks.
//
// Calls the fake makes carry a thoughtSignature (the first of a content,
// as Gemini signs them) and an id only when the Reply's ToolCall names
// one: Gemini's calls usually have none.

// GeminiSignature is the thoughtSignature the fake gives a function call
// to name, and accepts back.
func GeminiSignature(name string) string {
	sum := sha256.Sum256([]byte("upstreamtest gemini:" + name))
	return hex.EncodeToString(sum[:12])
}

// geminiSkipSignature is the signature Google documents for a call whose
// own signature is lost (history from another model).
const geminiSkipSignature = "skip_thought_signature_validator"

// geminiError is an error answered in Gemini's shape.
type geminiError struct {
	code    int
	status  string
	message string
}

func (e *geminiError) json() []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": e.code, "message": e.message, "status": e.status}})
	return append(b, '\n')
}

func geminiInvalid(message string) *geminiError {
	return &geminiError{code: http.StatusBadRequest, status: "INVALID_ARGUMENT", message: message}
}

// geminiRoute reads a Gemini path: the model and whether it streams.
func geminiRoute(path string) (model string, stream, ok bool) {
	rest, ok := strings.CutPrefix(path, "/v1beta/models/")
	if !ok {
		if rest, ok = strings.CutPrefix(path, "/v1/models/"); !ok {
			return "", false, false
		}
	}
	if model, ok = strings.CutSuffix(rest, ":streamGenerateContent"); ok {
		return model, true, model != ""
	}
	model, ok = strings.CutSuffix(rest, ":generateContent")
	return model, false, ok && model != ""
}

// geminiMembers are the members of a GenerateContentRequest body, as the
// API reads them (either spelling).
var geminiMembers = []string{"contents", "systemInstruction", "system_instruction", "tools", "toolConfig", "tool_config",
	"generationConfig", "generation_config", "safetySettings", "safety_settings", "cachedContent", "cached_content", "labels"}

// serveGemini answers a Gemini generateContent call.
func (s *Server) serveGemini(w http.ResponseWriter, r *http.Request, body []byte, model string, stream bool) {
	rec := s.receivedFor(r, body)
	root := parseBody(body)
	contents := elements(root.Get("contents"))
	var apiErr *geminiError
	switch {
	case r.Header.Get("Authorization") != "":
		apiErr = &geminiError{code: http.StatusUnauthorized, status: "UNAUTHENTICATED",
			message: "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential."}
	case r.Header.Get("X-Goog-Api-Key") == "":
		apiErr = &geminiError{code: http.StatusForbidden, status: "PERMISSION_DENIED",
			message: "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."}
	case stream && r.URL.Query().Get("alt") != "sse":
		apiErr = geminiInvalid("upstreamtest: streamGenerateContent without alt=sse answers a JSON array, which the fake does not serve")
	case !root.IsObject():
		apiErr = geminiInvalid("Invalid JSON payload received.")
	default:
		apiErr = validateGeminiRequest(root, contents, model)
	}
	summary := apiErr == nil && isGeminiSummaryCall(root, contents)
	var rejected *APIError
	if apiErr != nil {
		rejected = &APIError{Message: apiErr.message, Type: apiErr.status}
	}
	reply, gate := s.takeReply(rec, model, stream, summary, contents, rejected)
	if apiErr != nil {
		s.writeJSON(w, apiErr.code, apiErr.json())
		return
	}
	if summary && reply.Content == "" && len(reply.ToolCalls) == 0 {
		reply.Content = SummaryAnswer(geminiSystemText(root), contents[0].Get("parts.0.text").Str)
		if !s.unbounded {
			reply.Content = CapSummary(reply.Content, int(camelGet(camelGet(root, "generationConfig"), "maxOutputTokens").Int()))
		}
	}
	ctx := r.Context()
	writeStatus := func(status int) {
		e := &geminiError{code: status, status: "INTERNAL", message: "upstreamtest: scripted status " + strconv.Itoa(status)}
		if status == http.StatusTooManyRequests {
			e.status = "RESOURCE_EXHAUSTED"
		}
		if reply.Content != "" {
			e.message = reply.Content
		}
		if reply.RetryAfter != "" {
			w.Header()["Retry-After"] = []string{reply.RetryAfter}
		}
		s.writeJSON(w, status, e.json())
	}
	if !s.beforeAnswer(ctx, reply, gate, writeStatus, resetBeforeHeaders(w)) {
		return
	}
	s.writeGemini(ctx, w, s.newGeminiAnswer(model, contents, reply), stream)
}

// isGeminiSummaryCall reports whether a Gemini request is shaped as a
// summariser call (see isSummaryCall): no tools, a systemInstruction that
// asks for a summary, one user content with the transcript.
func isGeminiSummaryCall(root gjson.Result, contents []gjson.Result) bool {
	if len(contents) != 1 || root.Get("tools").Exists() || contents[0].Get("role").Str != "user" {
		return false
	}
	text := geminiSystemText(root)
	return strings.Contains(strings.ToLower(text), "summary") && !strings.Contains(text, injectedSummary)
}

// geminiSystemText is a request's systemInstruction as text.
func geminiSystemText(root gjson.Result) string {
	var b strings.Builder
	for _, p := range camelGet(root, "systemInstruction").Get("parts").Array() {
		b.WriteString(p.Get("text").Str)
	}
	return b.String()
}

// validateGeminiRequest checks a request body as the Gemini API does on
// the points listed in the file comment.
func validateGeminiRequest(root gjson.Result, contents []gjson.Result, model string) *geminiError {
	var unknown string
	root.ForEach(func(k, _ gjson.Result) bool {
		if !contains(geminiMembers, k.Str) {
			unknown = k.Str
			return false
		}
		return true
	})
	switch {
	case unknown != "":
		return geminiInvalid("Invalid JSON payload received. Unknown name \"" + unknown + "\": Cannot find field.")
	case len(contents) == 0:
		return geminiInvalid("* GenerateContentRequest.contents: contents is not specified")
	}
	prevRole := ""
	var prevCalls []gjson.Result // the functionCall objects of the previous content
	for i, c := range contents {
		role, calls, err := validateGeminiContent(i, c, prevRole, prevCalls, model)
		if err != nil {
			return err
		}
		prevRole, prevCalls = role, calls
	}
	return nil
}

// validateGeminiContent checks contents[i], c, after a content of
// prevRole with the function calls prevCalls, and returns its role and
// its function calls.
func validateGeminiContent(i int, c gjson.Result, prevRole string, prevCalls []gjson.Result, model string) (string, []gjson.Result, *geminiError) {
	at := "* GenerateContentRequest.contents[" + strconv.Itoa(i) + "]"
	role := c.Get("role").Str
	if role == "" {
		role = "user"
	}
	parts := c.Get("parts").Array()
	switch {
	case role != "user" && role != "model":
		return "", nil, geminiInvalid("Please use a valid role: user, model.")
	case len(parts) == 0:
		return "", nil, geminiInvalid(at + ".parts: contents.parts must not be empty.")
	case prevRole == "" && role != "user":
		return "", nil, geminiInvalid("Please ensure that multiturn requests start with a user turn.")
	case role == "model" && prevRole == "model":
		return "", nil, geminiInvalid("Please ensure that multiturn requests alternate between user and model.")
	}
	t := geminiTurn{role: role, model: model, prevCalls: prevCalls, answered: make([]bool, len(prevCalls))}
	for j, p := range parts {
		if err := t.part(at+".parts["+strconv.Itoa(j)+"]", j, p); err != nil {
			return "", nil, err
		}
	}
	if len(prevCalls) > 0 && t.responses != len(prevCalls) {
		return "", nil, geminiInvalid("Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.")
	}
	return role, t.calls, nil
}

// geminiTurn is one content's parts being checked.
type geminiTurn struct {
	role, model string
	prevCalls   []gjson.Result // the previous content's function calls
	answered    []bool         // by prevCalls
	calls       []gjson.Result // this content's function calls
	responses   int            // this content's function responses
}

// part checks the content's j-th part p, named pat: one data member,
// complete inline and file data, function calls in model contents
// (named, signed) and function responses in user contents, each
// answering a call of the previous content.
func (t *geminiTurn) part(pat string, j int, p gjson.Result) *geminiError {
	n := 0
	for _, k := range []string{"text", "inlineData", "inline_data", "fileData", "file_data", "functionCall", "function_call",
		"functionResponse", "function_response", "executableCode", "codeExecutionResult"} {
		if p.Get(k).Exists() {
			n++
		}
	}
	if n != 1 {
		return geminiInvalid(pat + ".data: required oneof field 'data' must have one initialized field")
	}
	if d := camelGet(p, "inlineData"); d.Exists() && (camelGet(d, "mimeType").Str == "" || d.Get("data").Str == "") {
		return geminiInvalid(pat + ".inline_data: mime_type and data are required.")
	}
	if d := camelGet(p, "fileData"); d.Exists() && camelGet(d, "fileUri").Str == "" {
		return geminiInvalid(pat + ".file_data.file_uri: file_uri is required.")
	}
	fc, fr := camelGet(p, "functionCall"), camelGet(p, "functionResponse")
	sig := camelGet(p, "thoughtSignature")
	switch {
	case fc.Exists() && t.role != "model", fr.Exists() && t.role != "user":
		return geminiInvalid(pat + ": function parts are not allowed in " + t.role + " contents")
	case fc.Exists():
		if fc.Get("name").Str == "" {
			return geminiInvalid(pat + ".function_call.name: Name cannot be empty.")
		}
		if sig.Exists() && sig.Str != GeminiSignature(fc.Get("name").Str) && sig.Str != geminiSkipSignature {
			return geminiInvalid("Corrupted thought signature.")
		}
		if !sig.Exists() && len(t.calls) == 0 && strings.HasPrefix(t.model, "gemini-3") {
			return geminiInvalid("Function call is missing a thought_signature in functionCall parts. Additional data, function call `" +
				fc.Get("name").Str + "` , position " + strconv.Itoa(j) + ".")
		}
		t.calls = append(t.calls, fc)
	case fr.Exists():
		t.responses++
		name, id := fr.Get("name").Str, fr.Get("id").Str
		k := t.answers(name, id)
		if k < 0 {
			return geminiInvalid(pat + ": function response " + name + " answers no function call of the previous turn.")
		}
		t.answered[k] = true
	}
	return nil
}

// answers returns the index of the previous content's first call not
// answered yet that a response of name and id answers (by id when
// either has one, else by name), or -1.
func (t *geminiTurn) answers(name, id string) int {
	for ci, call := range t.prevCalls {
		if t.answered[ci] {
			continue
		}
		if cid := call.Get("id").Str; cid != "" || id != "" {
			if cid == id {
				return ci
			}
		} else if call.Get("name").Str == name {
			return ci
		}
	}
	return -1
}

// camelGet returns member key of obj, or its snake_case spelling.
func camelGet(obj gjson.Result, key string) gjson.Result {
	if v := obj.Get(key); v.Exists() {
		return v
	}
	var b strings.Builder
	for _, c := range key {
		if 'A' <= c && c <= 'Z' {
			b.WriteByte('_')
			c += 'a' - 'A'
		}
		b.WriteRune(c)
	}
	return obj.Get(b.String())
}

// geminiAnswer is one answer being produced.
type geminiAnswer struct {
	id, model string
	reply     Reply
	text      string
	calls     []ToolCall
	in, out   int
}

func (s *Server) newGeminiAnswer(model string, contents []gjson.Result, reply Reply) *geminiAnswer {
	a := &geminiAnswer{id: "gresp_" + strconv.FormatUint(s.nextSeq(), 10), model: model, reply: reply, text: reply.Content, calls: reply.ToolCalls}
	if a.text == "" && len(a.calls) == 0 {
		a.text = "echo: " + lastGeminiUserText(contents)
	}
	for _, c := range contents {
		a.in += len(c.Raw) / 4
	}
	a.out = max(1, len(a.text)/4)
	return a
}

// lastGeminiUserText is the text of the last user content's text parts.
func lastGeminiUserText(contents []gjson.Result) string {
	for i := len(contents) - 1; i >= 0; i-- {
		c := contents[i]
		if r := c.Get("role").Str; r != "user" && r != "" {
			continue
		}
		var texts []string
		for _, p := range c.Get("parts").Array() {
			if t := p.Get("text"); t.Type == gjson.String {
				texts = append(texts, t.Str)
			}
		}
		if len(texts) > 0 {
			return strings.Join(texts, "\n")
		}
	}
	return ""
}

// parts returns the answer's parts: its text, then its calls (the first
// signed).
func (a *geminiAnswer) callParts() []string {
	var out []string
	for i, tc := range a.calls {
		args := tc.Arguments
		if args == "" {
			args = "{}"
		}
		p := `{"functionCall":{"name":` + quoteJSON(tc.Name) + `,"args":` + args
		if tc.ID != "" {
			p += `,"id":` + quoteJSON(tc.ID)
		}
		p += "}"
		if i == 0 {
			p += `,"thoughtSignature":` + quoteJSON(GeminiSignature(tc.Name))
		}
		out = append(out, p+"}")
	}
	return out
}

func quoteJSON(s string) string { return string(gjson.AppendJSONString(nil, s)) }

// chunk is one GenerateContentResponse: parts, and the finish when set.
func (a *geminiAnswer) chunk(parts []string, finish bool) []byte {
	b := []byte(`{"candidates":[{"content":{"parts":[` + strings.Join(parts, ",") + `],"role":"model"}`)
	if finish {
		b = append(b, `,"finishReason":"STOP"`...)
	}
	b = append(b, `,"index":0}]`...)
	if finish {
		b = append(b, `,"usageMetadata":{"promptTokenCount":`+strconv.Itoa(a.in)+`,"candidatesTokenCount":`+strconv.Itoa(a.out)+
			`,"totalTokenCount":`+strconv.Itoa(a.in+a.out)+`}`...)
	}
	b = append(b, `,"modelVersion":`+quoteJSON(a.model)+`,"responseId":`+quoteJSON(a.id)+`}`...)
	return b
}

// writeGemini writes the answer whole, or as events: the text in about
// Reply.Chunks pieces, then the calls with the finishReason and usage.
func (s *Server) writeGemini(ctx context.Context, w http.ResponseWriter, a *geminiAnswer, stream bool) {
	if !stream {
		var parts []string
		if a.text != "" {
			parts = append(parts, `{"text":`+quoteJSON(a.text)+`}`)
		}
		s.writeJSON(w, http.StatusOK, append(a.chunk(append(parts, a.callParts()...), true), '\n'))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	n := a.reply.Chunks
	if n <= 0 {
		n = 4
	}
	pieces := splitText(a.text, n)
	for i, p := range pieces {
		if a.reply.Fault == FaultCutMidStream && i == len(pieces)/2 {
			reset(w, false)
			return
		}
		if _, err := w.Write(append(append([]byte("data: "), a.chunk([]string{`{"text":` + quoteJSON(p) + `}`}, false)...), "\r\n\r\n"...)); err != nil {
			return
		}
		flush(w)
		if ctx.Err() != nil {
			return
		}
	}
	if a.reply.Fault == FaultCutMidStream {
		reset(w, false)
		return
	}
	last := a.callParts()
	if len(last) == 0 {
		last = []string{`{"text":""}`}
	}
	_, _ = w.Write(append(append([]byte("data: "), a.chunk(last, true)...), "\r\n\r\n"...))
	flush(w)
}

// splitText splits s into about n pieces (none for "").
func splitText(s string, n int) []string {
	if s == "" {
		return nil
	}
	size := max(1, (len(s)+n-1)/n)
	var out []string
	for len(s) > 0 {
		k := min(size, len(s))
		for k < len(s) && !utf8Start(s[k]) {
			k++
		}
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
