package gemini

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/wire"
)

var _ wire.Thinking = Codec{}

// WithoutThinking implements wire.Thinking: a model content's thought
// parts ("thought": true) and thoughtSignature members are what a client
// may leave out when it resends it, and what a client of another
// protocol cannot carry at all (a coding agent that moves its history
// from Gemini to chat completions keeps the call and its text, not the
// signature). hash is Hash of the content without them; empty reports
// that only thoughts were there.
func (c Codec) WithoutThinking(raw []byte) (hash uint64, empty, ok bool) {
	if !strings.Contains(str(raw), "hought") {
		return 0, false, false
	}
	m := parse(raw)
	parts := m.Get("parts")
	if m.Get("role").Str != roleModel || !parts.IsArray() {
		return 0, false, false
	}
	var kept []string
	parts.ForEach(func(_, p gjson.Result) bool {
		if get(p, keyThought).Type == gjson.True {
			ok = true
			return true
		}
		if !get(p, keySignature).Exists() {
			kept = append(kept, p.Raw)
			return true
		}
		ok = true
		var b strings.Builder
		b.WriteByte('{')
		p.ForEach(func(k, v gjson.Result) bool {
			if k.Str == keySignature || k.Str == snake(keySignature) {
				return true
			}
			if b.Len() > 1 {
				b.WriteByte(',')
			}
			b.WriteString(k.Raw)
			b.WriteByte(':')
			b.WriteString(v.Raw)
			return true
		})
		b.WriteByte('}')
		if b.Len() > 2 {
			kept = append(kept, b.String())
		}
		return true
	})
	if !ok {
		return 0, false, false
	}
	return c.Hash(splice(raw, parts, "["+strings.Join(kept, ",")+"]")), len(kept) == 0, true
}
