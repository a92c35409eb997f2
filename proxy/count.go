package proxy

import (
	"bytes"
	"io"

	"github.com/cespare/xxhash/v2"

	"github.com/recallproxy/recall/history/tokens"
)

// maxCachedCounts bounds the token-count cache; past it the cache starts over.
const maxCachedCounts = 1 << 14

// cachedTokens counts an instruction message (or, with tools set, a tools
// array), remembering the count by content hash: clients send the same
// system prompt and tool definitions on every call, and tokenizing them
// each time would dominate the request's cost.
func (s *Server) cachedTokens(enc tokens.Encoding, raw []byte, tools bool) int {
	if len(raw) == 0 {
		return 0
	}
	d := xxhash.New()
	d.WriteString(string(enc))
	if tools {
		d.Write([]byte{1})
	}
	d.Write(raw)
	key := d.Sum64()
	if n, ok := s.textOnce.Load(key); ok {
		return n.(int)
	}
	var n int
	if tools {
		n = s.counter.Tools(enc, raw)
	} else {
		n = s.counter.Message(enc, raw)
	}
	if s.cached.Add(1) > maxCachedCounts {
		s.textOnce.Clear()
		s.cached.Store(0)
	}
	s.textOnce.Store(key, n)
	return n
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

func clone(b []byte) []byte { return bytes.Clone(b) }
