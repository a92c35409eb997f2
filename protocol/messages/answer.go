package messages

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/protocol/internal/body"
	"github.com/recallproxy/recall/wire"
)

// AppendAnswer appends a as a Message object
// (https://docs.anthropic.com/en/api/messages):
// {"id","type":"message","role":"assistant","model","content":[…],
// "stop_reason","stop_sequence":null,"usage":{…}}. Its id is
// a.ResponseID when the proxy set one, else the upstream's id when it is
// a Message id (msg_…), else a fresh one. When a.Stored is a Messages
// assistant message (the upstream spoke Messages) its blocks are sent as
// they are, thinking included; otherwise the blocks are written from the
// canonical message.
func (Ingress) AppendAnswer(dst []byte, req *wire.Request, a *wire.Answer) []byte {
	dst = append(dst, `{"id":`...)
	dst = gjson.AppendJSONString(dst, answerID(a))
	dst = append(dst, `,"type":"message","role":"assistant","model":`...)
	dst = gjson.AppendJSONString(dst, answerModel(req, a))
	dst = append(dst, `,"content":`...)
	dst = appendContentOf(dst, a)
	dst = append(dst, `,"stop_reason":`...)
	dst = gjson.AppendJSONString(dst, stopReason(a.Stop))
	dst = append(dst, `,"stop_sequence":null,"usage":`...)
	dst = appendUsage(dst, a.Usage, true)
	return append(dst, '}')
}

// answerID is the id of the Message rendered for a.
func answerID(a *wire.Answer) string {
	switch {
	case a.ResponseID != "":
		return a.ResponseID
	case strings.HasPrefix(a.ID, "msg_"):
		return a.ID
	}
	return NewMessageID()
}

func answerModel(req *wire.Request, a *wire.Answer) string {
	if a.Model != "" {
		return a.Model
	}
	return req.Model
}

// NewMessageID returns a fresh Message id: "msg_" and 24 random
// characters of base 62, as Anthropic's look.
func NewMessageID() string { return body.ID("msg_", 24) }

// storedContent returns the content blocks of a.Stored when it is one
// Messages assistant message: only "role" and an array "content" whose
// blocks all have a type, which no other protocol's stored answer is.
func storedContent(a *wire.Answer) (gjson.Result, bool) {
	if len(a.Stored) != 1 {
		return gjson.Result{}, false
	}
	m := parse(a.Stored[0])
	ok, n := true, 0
	var content gjson.Result
	m.ForEach(func(k, v gjson.Result) bool {
		n++
		switch k.Str {
		case "role":
			ok = v.Str == roleAssistant
		case "content":
			content = v
			ok = v.IsArray()
		default:
			ok = false
		}
		return ok
	})
	if !ok || n != 2 {
		return gjson.Result{}, false
	}
	content.ForEach(func(_, b gjson.Result) bool {
		ok = b.Get("type").Type == gjson.String
		return ok
	})
	return content, ok
}

// appendContentOf appends the content array of the Message for a.
func appendContentOf(dst []byte, a *wire.Answer) []byte {
	if c, ok := storedContent(a); ok {
		return append(dst, c.Raw...)
	}
	dst = append(dst, '[')
	n := 0
	for _, p := range a.Message.Parts {
		b := appendBlock(nil, roleAssistant, p)
		if b == nil {
			continue
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = append(dst, b...)
	}
	return append(dst, ']')
}

// appendUsage appends a usage object as Anthropic splits it: the input
// neither read from the prompt cache nor written to it as input_tokens,
// the written as cache_creation_input_tokens, the read as
// cache_read_input_tokens, and output_tokens. Without withInput only
// output_tokens is written.
func appendUsage(dst []byte, u wire.Usage, withInput bool) []byte {
	dst = append(dst, '{')
	if withInput {
		dst = append(dst, `"input_tokens":`...)
		dst = strconv.AppendInt(dst, int64(max(0, u.InputTokens-u.CachedTokens-u.CacheCreationTokens)), 10)
		dst = append(dst, `,"cache_creation_input_tokens":`...)
		dst = strconv.AppendInt(dst, int64(u.CacheCreationTokens), 10)
		dst = append(dst, `,"cache_read_input_tokens":`...)
		dst = strconv.AppendInt(dst, int64(u.CachedTokens), 10)
		dst = append(dst, ',')
	}
	dst = append(dst, `"output_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.OutputTokens), 10)
	return append(dst, '}')
}
