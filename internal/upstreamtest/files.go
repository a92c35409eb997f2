package upstreamtest

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// file is one upload in the fake's in-memory files store.
type file struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	Bytes     int    `json:"bytes"`
	CreatedAt int64  `json:"created_at"`
	Filename  string `json:"filename"`
	Purpose   string `json:"purpose"`
	Status    string `json:"status"`
	content   []byte
}

// serveFiles answers the files API under /v1/files: a multipart upload,
// the listing, retrieval, content and deletion, over an in-memory store
// that lives until Reset or Close. rest is the path after "/v1/files".
func (s *Server) serveFiles(w http.ResponseWriter, r *http.Request, rest string, body []byte) {
	id, content := strings.CutSuffix(strings.TrimPrefix(rest, "/"), "/content")
	switch {
	case rest == "" && r.Method == http.MethodPost:
		s.uploadFile(w, r, body)
	case rest == "" && r.Method == http.MethodGet:
		s.listFiles(w, r)
	case id == "" || strings.Contains(id, "/"):
		s.writeNotFound(w, r)
	case content && r.Method == http.MethodGet:
		f, ok := s.file(id)
		if !ok {
			s.writeFileNotFound(w, id)
			return
		}
		h := w.Header()
		h["Content-Type"] = []string{"application/octet-stream"}
		h["Content-Length"] = []string{strconv.Itoa(len(f.content))}
		s.setRequestHeaders(h)
		_, _ = w.Write(f.content)
	case !content && r.Method == http.MethodGet:
		f, ok := s.file(id)
		if !ok {
			s.writeFileNotFound(w, id)
			return
		}
		s.writeJSON(w, http.StatusOK, marshal(f))
	case !content && r.Method == http.MethodDelete:
		if !s.deleteFile(id) {
			s.writeFileNotFound(w, id)
			return
		}
		s.writeJSON(w, http.StatusOK, marshal(map[string]any{"id": id, "object": "file", "deleted": true}))
	default:
		s.writeNotFound(w, r)
	}
}

// uploadFile stores the "file" part of a multipart/form-data upload with
// its "purpose" field, as POST /v1/files does.
func (s *Server) uploadFile(w http.ResponseWriter, r *http.Request, body []byte) {
	name, data, purpose, e := readUpload(r.Header.Get("Content-Type"), body)
	if e != nil {
		s.writeError(w, http.StatusBadRequest, e, "")
		return
	}
	f := &file{
		ID:        "file-" + strconv.FormatUint(s.nextSeq(), 10),
		Object:    "file",
		Bytes:     len(data),
		CreatedAt: s.created,
		Filename:  name,
		Purpose:   purpose,
		Status:    "processed",
		content:   data,
	}
	s.mu.Lock()
	s.files = append(s.files, f)
	s.mu.Unlock()
	s.writeJSON(w, http.StatusOK, marshal(f))
}

// readUpload parses a files upload: the file's name and content, and the
// purpose field.
func readUpload(contentType string, body []byte) (name string, data []byte, purpose string, e *APIError) {
	bad := func(msg string) (string, []byte, string, *APIError) {
		return "", nil, "", &APIError{Message: msg, Type: invalidRequest}
	}
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return bad("Expected a multipart/form-data body.")
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return bad("Could not parse the multipart form: " + err.Error())
		}
		v, err := io.ReadAll(p)
		if err != nil {
			return bad("Could not parse the multipart form: " + err.Error())
		}
		switch p.FormName() {
		case "file":
			name, data = p.FileName(), v
		case "purpose":
			purpose = string(v)
		}
	}
	switch {
	case data == nil:
		return bad("Missing required parameter: 'file'.")
	case purpose == "":
		return bad("Missing required parameter: 'purpose'.")
	}
	return name, data, purpose, nil
}

// listFiles answers GET /v1/files: newest first (order=asc for oldest
// first), filtered by purpose, paged by limit and after.
func (s *Server) listFiles(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	files := slices.Clone(s.files) // in upload order
	s.mu.Unlock()
	if q.Get("order") != "asc" {
		slices.Reverse(files)
	}
	files = slices.DeleteFunc(files, func(f *file) bool {
		return q.Has("purpose") && f.Purpose != q.Get("purpose")
	})
	if after := q.Get("after"); after != "" {
		if i := slices.IndexFunc(files, func(f *file) bool { return f.ID == after }); i >= 0 {
			files = files[i+1:]
		}
	}
	limit := 10000
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 {
		limit = n
	}
	more := len(files) > limit
	files = files[:min(limit, len(files))]
	page := struct {
		Object  string  `json:"object"`
		Data    []*file `json:"data"`
		HasMore bool    `json:"has_more"`
	}{"list", files, more}
	if page.Data == nil {
		page.Data = []*file{}
	}
	s.writeJSON(w, http.StatusOK, marshal(page))
}

func (s *Server) file(id string) (*file, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.files, func(f *file) bool { return f.ID == id })
	if i < 0 {
		return nil, false
	}
	return s.files[i], true
}

func (s *Server) deleteFile(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.files)
	s.files = slices.DeleteFunc(s.files, func(f *file) bool { return f.ID == id })
	return len(s.files) < n
}

func (s *Server) writeFileNotFound(w http.ResponseWriter, id string) {
	e := &APIError{Message: "No such File object: " + id, Type: invalidRequest, Param: "id"}
	s.writeError(w, http.StatusNotFound, e, "")
}

// marshal is json.Marshal with a newline, for values that cannot fail.
func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("upstreamtest: " + err.Error())
	}
	return append(b, '\n')
}
