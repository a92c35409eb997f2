package upstreamtest

import (
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/tidwall/gjson"
)

// serveHTTP routes a request. The body is always read in full first, so that
// large streaming uploads complete whatever the answer.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		// The client went away mid-upload: nothing to answer.
		s.record(s.receivedFor(r, body), false)
		return
	}
	path := r.URL.Path
	if r.Method == http.MethodPost && path == "/v1/chat/completions" {
		s.serveChat(w, r, body)
		return
	}
	if r.Method == http.MethodPost && path == "/v1/responses" {
		s.serveResponses(w, r, body)
		return
	}
	if r.Method == http.MethodGet && path == "/v1/responses" && websocket.IsWebSocketUpgrade(r) {
		s.serveResponsesSocket(w, r)
		return
	}
	if r.Method == http.MethodPost && path == "/v1/messages" {
		s.serveMessages(w, r, body)
		return
	}
	if model, stream, ok := geminiRoute(path); ok && r.Method == http.MethodPost {
		s.serveGemini(w, r, body, model, stream)
		return
	}
	s.record(s.receivedFor(r, body), false)
	model, isModel := strings.CutPrefix(path, "/v1/models/")
	files, isFiles := strings.CutPrefix(path, "/v1/files")
	get := r.Method == http.MethodGet || r.Method == http.MethodHead // net/http drops a HEAD's body
	switch {
	case get && path == "/v1/models":
		s.serveModels(w)
	case get && isModel:
		s.serveModel(w, model)
	case r.Method == http.MethodPost && path == "/v1/embeddings":
		s.serveEmbeddings(w, body)
	case isFiles && (files == "" || files[0] == '/'):
		s.serveFiles(w, r, files, body)
	case strings.HasPrefix(path, "/v1/"):
		s.serveEcho(w, r, body)
	default:
		s.writeNotFound(w, r)
	}
}

// writeNotFound answers a path the fake does not serve, as OpenAI does.
func (s *Server) writeNotFound(w http.ResponseWriter, r *http.Request) {
	e := &APIError{Message: "Invalid URL (" + r.Method + " " + r.URL.Path + ")", Type: invalidRequest}
	s.writeError(w, http.StatusNotFound, e, "")
}

// receivedFor builds the log entry of a request, or nil when nothing is kept.
func (s *Server) receivedFor(r *http.Request, body []byte) *Received {
	if !s.keeping() {
		return nil
	}
	return &Received{
		Method:           r.Method,
		RequestURI:       r.RequestURI,
		Path:             r.URL.Path,
		Query:            r.URL.RawQuery,
		Header:           r.Header.Clone(),
		TransferEncoding: r.TransferEncoding,
		Body:             body,
		At:               time.Now(),
	}
}

// models are the ids GET /v1/models lists.
var models = []string{"gpt-4o", "gpt-4o-mini", "gpt-4.1-mini", "o3-mini"}

func (s *Server) serveModels(w http.ResponseWriter) {
	b := make([]byte, 0, 512)
	b = append(b, `{"object":"list","data":[`...)
	for i, id := range models {
		if i > 0 {
			b = append(b, ',')
		}
		b = s.appendModel(b, id)
	}
	b = append(b, "]}\n"...)
	s.writeJSON(w, http.StatusOK, b)
}

// serveModel answers GET /v1/models/{model}.
func (s *Server) serveModel(w http.ResponseWriter, id string) {
	if !slices.Contains(models, id) {
		e := &APIError{Message: "The model '" + id + "' does not exist", Type: invalidRequest, Param: "model", Code: "model_not_found"}
		s.writeError(w, http.StatusNotFound, e, "")
		return
	}
	s.writeJSON(w, http.StatusOK, append(s.appendModel(nil, id), '\n'))
}

func (s *Server) appendModel(b []byte, id string) []byte {
	b = append(b, `{"id":`...)
	b = gjson.AppendJSONString(b, id)
	b = append(b, `,"object":"model","created":`...)
	b = strconv.AppendInt(b, s.created, 10)
	return append(b, `,"owned_by":"openai"}`...)
}

// serveEcho answers {"path","method","query","body","authorization"}, the
// body as a JSON string, so pass-through tests can check what arrived.
func (s *Server) serveEcho(w http.ResponseWriter, r *http.Request, body []byte) {
	b := make([]byte, 0, 128+len(body)+len(body)/8)
	b = append(b, `{"path":`...)
	b = gjson.AppendJSONString(b, r.URL.Path)
	b = append(b, `,"method":`...)
	b = gjson.AppendJSONString(b, r.Method)
	b = append(b, `,"query":`...)
	b = gjson.AppendJSONString(b, r.URL.RawQuery)
	b = append(b, `,"body":`...)
	b = gjson.AppendJSONString(b, string(body))
	b = append(b, `,"authorization":`...)
	b = gjson.AppendJSONString(b, r.Header.Get("Authorization"))
	b = append(b, "}\n"...)
	s.writeJSON(w, http.StatusOK, b)
}

// writeJSON writes a complete JSON response with OpenAI's usual headers.
func (s *Server) writeJSON(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h["Content-Type"] = []string{"application/json"}
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	s.setRequestHeaders(h)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeError writes an OpenAI-shaped error response.
func (s *Server) writeError(w http.ResponseWriter, status int, e *APIError, retryAfter string) {
	if retryAfter != "" {
		w.Header()["Retry-After"] = []string{retryAfter}
	}
	s.writeJSON(w, status, e.JSON())
}

// setAnswerHeaders sets the headers of an OpenAI-shaped answer that goes
// on: setRequestHeaders', and the reply's Retry-After.
func (s *Server) setAnswerHeaders(h http.Header, reply Reply) {
	s.setRequestHeaders(h)
	if reply.RetryAfter != "" {
		h["Retry-After"] = []string{reply.RetryAfter}
	}
}

func (s *Server) setRequestHeaders(h http.Header) {
	h["X-Request-Id"] = []string{"req_" + strconv.FormatUint(s.nextSeq(), 10)}
	h["X-Ratelimit-Remaining-Requests"] = []string{"99"}
}

// statusError is the error body OpenAI sends with a status.
func statusError(status int, message string) *APIError {
	e := &APIError{Type: "server_error"}
	switch {
	case status == http.StatusUnauthorized:
		e.Message, e.Type, e.Code = "Incorrect API key provided.", invalidRequest, "invalid_api_key"
	case status == http.StatusTooManyRequests:
		e.Message, e.Type, e.Code = "Rate limit reached for requests. Please try again later.", "requests", "rate_limit_exceeded"
	case status == http.StatusInternalServerError:
		e.Message = "The server had an error while processing your request. Sorry about that!"
	case status == http.StatusServiceUnavailable || status == http.StatusBadGateway:
		e.Message = "The server is overloaded or not ready yet."
	case status < 500:
		e.Message, e.Type = "upstreamtest: scripted status "+strconv.Itoa(status), invalidRequest
	default:
		e.Message = "upstreamtest: scripted status " + strconv.Itoa(status)
	}
	if message != "" {
		e.Message = message
	}
	return e
}
