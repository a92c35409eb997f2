package upstreamtest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"math"
	"net/http"

	"github.com/tidwall/gjson"
)

// defaultDimensions is the length of an embedding when the request does
// not ask for one; maxDimensions bounds what it may ask for.
const (
	defaultDimensions = 8
	maxDimensions     = 256
)

// serveEmbeddings answers POST /v1/embeddings with one vector per input,
// derived from a hash of the input: the same input always gets the same
// vector. "input" is a string or an array (of strings or token arrays);
// "dimensions" and "encoding_format" (float or base64) are honoured.
func (s *Server) serveEmbeddings(w http.ResponseWriter, body []byte) {
	root := gjson.ParseBytes(body)
	input := root.Get("input")
	if !gjson.ValidBytes(body) || !root.IsObject() || !(input.Type == gjson.String || input.IsArray()) {
		e := &APIError{Message: "'input' is a required property and must be a string or an array.", Type: invalidRequest, Param: "input"}
		s.writeError(w, http.StatusBadRequest, e, "")
		return
	}
	inputs := []gjson.Result{input}
	if input.IsArray() {
		inputs = input.Array()
	}
	dims := defaultDimensions
	if d := root.Get("dimensions"); d.Exists() {
		dims = int(d.Int())
		if dims < 1 || dims > maxDimensions {
			e := &APIError{Message: "'dimensions' must be between 1 and 256.", Type: invalidRequest, Param: "dimensions"}
			s.writeError(w, http.StatusBadRequest, e, "")
			return
		}
	}
	base64Format := root.Get("encoding_format").Str == "base64"

	type embedding struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding any    `json:"embedding"`
	}
	resp := struct {
		Object string      `json:"object"`
		Data   []embedding `json:"data"`
		Model  string      `json:"model"`
		Usage  struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}{Object: "list", Model: root.Get("model").Str}
	for i, in := range inputs {
		text := in.Str
		if in.Type != gjson.String {
			text = in.Raw // a token array
		}
		v := Embed(text, dims)
		var e any = v
		if base64Format {
			raw := make([]byte, 0, 4*len(v))
			for _, x := range v {
				raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(x))
			}
			e = base64.StdEncoding.EncodeToString(raw)
		}
		resp.Data = append(resp.Data, embedding{Object: "embedding", Index: i, Embedding: e})
		resp.Usage.PromptTokens += max(1, len(text)/4)
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens
	s.writeJSON(w, http.StatusOK, marshal(resp))
}

// Embed returns the fake's embedding of text: dims values in [-1, 1]
// derived from SHA-256 of the text, so tests can compute what a request
// must get back.
func Embed(text string, dims int) []float32 {
	v := make([]float32, dims)
	var sum [sha256.Size]byte
	for i := range v {
		if i%sha256.Size == 0 {
			sum = sha256.Sum256(append([]byte(text), byte(i/sha256.Size)))
		}
		v[i] = float32(sum[i%sha256.Size])/127.5 - 1
	}
	return v
}
