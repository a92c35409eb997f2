package tokens

import (
	"slices"
	"testing"
)

// ForModel maps a model to its encoding (unknown and empty models count
// as O200k), and For gives the same unless the tenant's history.encoding
// overrides it.
func TestForModel(t *testing.T) {
	tests := []struct {
		name     string
		model    string
		override string // the tenant's history.encoding
		want     Encoding
	}{
		{"gpt-4o", "gpt-4o", "", O200k},
		{"gpt-4o dated", "gpt-4o-2024-08-06", "", O200k},
		{"gpt-4o-mini", "gpt-4o-mini", "", O200k},
		{"chatgpt-4o", "chatgpt-4o-latest", "", O200k},
		{"gpt-4.1", "gpt-4.1-mini", "", O200k},
		{"gpt-4.5", "gpt-4.5-preview", "", O200k},
		{"gpt-5", "gpt-5", "", O200k},
		{"gpt-5 mini", "gpt-5-mini-2025-08-07", "", O200k},
		{"o1", "o1", "", O200k},
		{"o3-mini", "o3-mini", "", O200k},
		{"o4-mini", "o4-mini", "", O200k},
		{"gpt-4", "gpt-4", "", CL100k},
		{"gpt-4-0613", "gpt-4-0613", "", CL100k},
		{"gpt-4-turbo", "gpt-4-turbo-2024-04-09", "", CL100k},
		{"gpt-4-32k", "gpt-4-32k", "", CL100k},
		{"gpt-3.5-turbo", "gpt-3.5-turbo-0125", "", CL100k},
		{"azure gpt-35", "gpt-35-turbo", "", CL100k},
		{"provider prefix o200k", "openai/gpt-4o", "", O200k},
		{"provider prefix cl100k", "openai/gpt-4-0613", "", CL100k},
		{"upper case", "GPT-4", "", CL100k},
		{"unknown", "llama-3.1-70b", "", O200k},
		{"empty", "", "", O200k},
		{"tenant's cl100k over gpt-4o", "gpt-4o", "cl100k_base", CL100k},
		{"tenant's o200k over gpt-4", "gpt-4", "o200k_base", O200k},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := For(tt.model, tt.override); got != tt.want {
				t.Errorf("For(%q, %q): got %s, want %s", tt.model, tt.override, got, tt.want)
			}
			if got := ForModel(tt.model); tt.override == "" && got != tt.want {
				t.Errorf("ForModel(%q): got %s, want %s", tt.model, got, tt.want)
			}
		})
	}
}

// TestKnownTokens checks token ids against values verified by running the
// encoder and, for "tiktoken is great!" (cl100k_base), against OpenAI's
// cookbook "How to count tokens with tiktoken".
func TestKnownTokens(t *testing.T) {
	tests := []struct {
		name string
		enc  Encoding
		text string
		want []int
	}{
		{"hello world o200k", O200k, "hello world", []int{24912, 2375}},
		{"hello world cl100k", CL100k, "hello world", []int{15339, 1917}},
		{"cookbook o200k", O200k, "tiktoken is great!", []int{83, 8251, 2488, 382, 2212, 0}},
		{"cookbook cl100k", CL100k, "tiktoken is great!", []int{83, 1609, 5963, 374, 2294, 0}},
		{"long word o200k", O200k, "antidisestablishmentarianism", []int{493, 129901, 376, 160388, 21203, 2367}},
		{"long word cl100k", CL100k, "antidisestablishmentarianism", []int{519, 85342, 34500, 479, 8997, 2191}},
		{"japanese o200k", O200k, "お誕生日おめでとう", []int{8930, 9697, 243, 128225, 8930, 17693, 4344, 48669}},
		{"japanese cl100k", CL100k, "お誕生日おめでとう", []int{33334, 45918, 243, 21990, 9080, 33334, 62004, 16556, 78699}},
	}
	var c Counter
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reference(tt.enc).EncodeOrdinary(tt.text); !slices.Equal(got, tt.want) {
				t.Errorf("ids of %q: got %v, want %v", tt.text, got, tt.want)
			}
			if got := c.Text(tt.enc, tt.text); got != len(tt.want) {
				t.Errorf("Text(%q): got %d, want %d", tt.text, got, len(tt.want))
			}
			if got := c.Bytes(tt.enc, []byte(tt.text)); got != len(tt.want) {
				t.Errorf("Bytes(%q): got %d, want %d", tt.text, got, len(tt.want))
			}
		})
	}
}

func TestVocabShared(t *testing.T) {
	for _, enc := range []Encoding{O200k, CL100k} {
		a, b := vocabFor(enc), vocabFor(enc)
		if a == nil || a != b {
			t.Errorf("vocabFor(%s): got %p then %p, want one shared vocabulary", enc, a, b)
		}
	}
	if got, want := vocabFor("p50k_base"), vocabFor(O200k); got != want {
		t.Errorf("unknown encoding: got %p, want the o200k vocabulary %p", got, want)
	}
	if vocabFor(O200k) == vocabFor(CL100k) {
		t.Error("o200k and cl100k: got the same vocabulary, want two")
	}
	if got := vocabFor(O200k).maxLen; got < 16 || got > 1024 {
		t.Errorf("o200k longest token: got %d bytes, want 16..1024", got)
	}
}
