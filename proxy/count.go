package proxy

import (
	"github.com/cespare/xxhash/v2"

	"github.com/recallproxy/recall/tokens"
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
	key := xxhash.Sum64(raw) ^ xxhash.Sum64String(string(enc))
	if tools {
		key = ^key
	}
	if n, ok := s.counts.Load(key); ok {
		return n.(int)
	}
	var n int
	if tools {
		n = s.counter.Tools(enc, raw)
	} else {
		n = s.counter.Message(enc, raw)
	}
	if s.cached.Add(1) > maxCachedCounts {
		s.counts.Clear()
		s.cached.Store(0)
	}
	s.counts.Store(key, n)
	return n
}
