package tokens

import (
	"sync"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// The tests' reference tokeniser is tiktoken-go itself, with the offline
// loader (its default loader downloads vocabularies).
var (
	referenceOnce  sync.Once
	referenceTks   map[Encoding]*tiktoken.Tiktoken
	referenceError error
)

// reference returns tiktoken-go's encoder of enc; unknown encodings get
// O200k's, as in vocabFor. It panics if the encoders cannot be built.
func reference(enc Encoding) *tiktoken.Tiktoken {
	referenceOnce.Do(func() {
		tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
		referenceTks = make(map[Encoding]*tiktoken.Tiktoken)
		for _, e := range []Encoding{O200k, CL100k} {
			tk, err := tiktoken.GetEncoding(string(e))
			if err != nil {
				referenceError = err
				return
			}
			referenceTks[e] = tk
		}
	})
	if referenceError != nil {
		panic("tokens: build reference encoders: " + referenceError.Error())
	}
	if enc != CL100k {
		enc = O200k
	}
	return referenceTks[enc]
}

// referenceCount is tiktoken-go's count of s in enc.
func referenceCount(enc Encoding, s string) int {
	return len(reference(enc).EncodeOrdinary(s))
}
