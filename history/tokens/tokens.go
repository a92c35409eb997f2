// Package tokens counts the tokens of chat-completions requests the way
// OpenAI's models see them, for Recall's curation budget.
//
// Text is tokenised with tiktoken (github.com/pkoukk/tiktoken-go) using the
// vocabularies embedded in github.com/pkoukk/tiktoken-go-loader, so nothing
// is ever downloaded at run time. Building an encoder takes tens to hundreds
// of milliseconds, so each encoding is built at most once per process, lazily
// on first use, and shared by every Counter; encoders are safe for concurrent
// use.
//
// Message, Tools and Image follow OpenAI's published counting recipe where
// one exists and are documented estimates where it does not. The counts are
// what the budget needs: close to the upstream's usage, never exact for
// inputs the upstream renders in an undocumented way.
package tokens

import (
	"strings"
	"sync"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// Encoding names a tiktoken byte-pair encoding.
type Encoding string

// The encodings used by OpenAI's chat models.
const (
	// O200k is the encoding of gpt-4o, gpt-4.1, gpt-4.5, gpt-5 and the
	// o-series; it is also the default for models this package does not know.
	O200k Encoding = "o200k_base"
	// CL100k is the encoding of gpt-4 (before gpt-4o) and gpt-3.5.
	CL100k Encoding = "cl100k_base"
)

// ForModel returns the encoding of model, matched by prefix after stripping
// an optional "provider/" prefix ("openai/gpt-4o" is "gpt-4o"). gpt-4 and
// gpt-4-* (including gpt-4-turbo*) and gpt-3.5* map to CL100k; gpt-4o*,
// gpt-4.1*, gpt-4.5*, gpt-5*, o1*, o3*, o4*, chatgpt-4o* and every unknown
// model map to O200k.
func ForModel(model string) Encoding {
	m := normalizeModel(model)
	switch {
	case m == "gpt-4", strings.HasPrefix(m, "gpt-4-"),
		strings.HasPrefix(m, "gpt-3.5"), strings.HasPrefix(m, "gpt-35"):
		return CL100k
	default:
		// gpt-4o, gpt-4.1, gpt-4.5, gpt-5, o1, o3, o4, chatgpt-4o and
		// anything newer or unknown.
		return O200k
	}
}

// normalizeModel strips a "provider/" prefix and lower-cases the name.
func normalizeModel(model string) string {
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		model = model[i+1:]
	}
	for i := 0; i < len(model); i++ {
		if c := model[i]; 'A' <= c && c <= 'Z' {
			return strings.ToLower(model)
		}
	}
	return model
}

// encoder is one lazily built, process-wide tiktoken encoder.
type encoder struct {
	once sync.Once
	tk   *tiktoken.Tiktoken
}

var (
	// loaderOnce installs the offline BPE loader before the first encoder is
	// built: tiktoken-go's default loader downloads vocabularies.
	loaderOnce sync.Once
	o200k      encoder
	cl100k     encoder
)

// encoderFor returns the shared encoder of enc, building it on first use.
// Unknown encodings get O200k. It returns nil only if the embedded
// vocabulary cannot be loaded, which the callers answer with an estimate.
func encoderFor(enc Encoding) *tiktoken.Tiktoken {
	e, name := &o200k, string(O200k)
	if enc == CL100k {
		e, name = &cl100k, string(CL100k)
	}
	e.once.Do(func() {
		loaderOnce.Do(func() { tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader()) })
		tk, err := tiktoken.GetEncoding(name)
		if err == nil {
			e.tk = tk
		}
	})
	return e.tk
}
