package upstreamtest

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"net/http"
	"slices"
	"testing"

	"github.com/tidwall/gjson"
)

func TestEmbeddings(t *testing.T) {
	s := NewTB(t)
	tests := []struct {
		name, body string
		inputs     []string
		dims       int
	}{
		{"one string", `{"model":"text-embedding-3-small","input":"hello"}`, []string{"hello"}, defaultDimensions},
		{"array", `{"model":"m","input":["a","b"]}`, []string{"a", "b"}, defaultDimensions},
		{"tokens", `{"model":"m","input":[[1,2]]}`, []string{"[1,2]"}, defaultDimensions},
		{"dimensions", `{"model":"m","input":"hello","dimensions":40}`, []string{"hello"}, 40},
		{"base64", `{"model":"m","input":"hello","encoding_format":"base64"}`, []string{"hello"}, defaultDimensions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := post(t, s, "/embeddings", tt.body)
			body := gjson.ParseBytes(readAll(t, resp))
			if resp.StatusCode != http.StatusOK || body.Get("object").Str != "list" || body.Get("model").Str != gjson.Get(tt.body, "model").Str {
				t.Fatalf("got %d %s, want 200 with a list", resp.StatusCode, body.Raw)
			}
			data := body.Get("data").Array()
			if len(data) != len(tt.inputs) {
				t.Fatalf("got %d embeddings, want %d", len(data), len(tt.inputs))
			}
			for i, d := range data {
				want := Embed(tt.inputs[i], tt.dims)
				got := vector(t, d.Get("embedding"))
				if d.Get("index").Int() != int64(i) || !slices.Equal(got, want) {
					t.Errorf("embedding %d: got index %d %v, want %d %v", i, d.Get("index").Int(), got, i, want)
				}
			}
			if body.Get("usage.prompt_tokens").Int() < 1 {
				t.Errorf("got usage %s, want prompt tokens", body.Get("usage").Raw)
			}
		})
	}
}

func TestEmbeddingsRejects(t *testing.T) {
	s := NewTB(t)
	tests := []struct{ name, body, param string }{
		{"no input", `{"model":"m"}`, "input"},
		{"input not text", `{"input":7}`, "input"},
		{"not json", `{"input":`, "input"},
		{"too many dimensions", `{"input":"a","dimensions":100000}`, "dimensions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := post(t, s, "/embeddings", tt.body)
			body := readAll(t, resp)
			if got := gjson.GetBytes(body, "error.param").Str; resp.StatusCode != http.StatusBadRequest || got != tt.param {
				t.Errorf("got %d %s, want 400 with param %s", resp.StatusCode, body, tt.param)
			}
		})
	}
}

func TestEmbedIsDeterministic(t *testing.T) {
	a, b := Embed("same", 70), Embed("same", 70)
	if !slices.Equal(a, b) {
		t.Errorf("got %v and %v for the same text, want equal", a, b)
	}
	if slices.Equal(a, Embed("other", 70)) {
		t.Error("got the same vector for different texts, want different")
	}
	for _, x := range a {
		if x < -1 || x > 1 {
			t.Errorf("got value %v, want within [-1, 1]", x)
		}
	}
}

// vector reads an embedding as floats or as base64 of little-endian float32s.
func vector(t *testing.T, e gjson.Result) []float32 {
	t.Helper()
	if e.Type == gjson.String {
		raw, err := base64.StdEncoding.DecodeString(e.Str)
		if err != nil || len(raw)%4 != 0 {
			t.Fatalf("got embedding %s, want base64 of float32s", e.Raw)
		}
		v := make([]float32, len(raw)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		return v
	}
	var v []float32
	for _, x := range e.Array() {
		v = append(v, float32(x.Float()))
	}
	return v
}
