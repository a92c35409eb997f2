package responses

import (
	"bytes"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/wire"
)

// POST /v1/responses/compact: the Responses API's compaction. Its body is
// a Response request's model, input, previous_response_id, instructions
// and prompt_cache_key; its answer a "response.compaction" object whose
// output is the compacted window: the user messages kept, then one
// compaction item whose encrypted_content stands for everything before
// it. A later request that sends that window back in its input continues
// from the compaction.

// typeCompaction is the type of a compaction item.
const typeCompaction = "compaction"

// CompactPath is the compaction's path below /v1.
const CompactPath = "/responses/compact"

// ParseCompact decodes a compaction's body as ParseRequest decodes a
// Response request's, but model is required (its absence is 400
// missing_required_parameter, param model, as OpenAI answers) and input
// may be left out (a compaction of the conversation previous_response_id
// or the conversation header names).
func ParseCompact(body []byte) (*wire.Request, error) {
	return parseRequest(body, true)
}

// Compaction reports whether raw is a compaction item, and returns its
// encrypted_content ("" if it has none that is a string).
func Compaction(raw []byte) (content string, ok bool) {
	if !bytes.Contains(raw, []byte(typeCompaction)) {
		return "", false // every item of every request is asked: no parse for the others
	}
	item := parse(raw)
	if itemType(item) != typeCompaction {
		return "", false
	}
	return item.Get("encrypted_content").Str, true
}

// AppendCompactionItem appends a compaction item with id and content.
func AppendCompactionItem(dst []byte, id, content string) []byte {
	dst = append(dst, `{"id":`...)
	dst = gjson.AppendJSONString(dst, id)
	dst = append(dst, `,"type":"compaction","encrypted_content":`...)
	dst = gjson.AppendJSONString(dst, content)
	return append(dst, '}')
}

// AppendUserItem appends raw, a user message item of an input (an easy
// input message, its content a string, or a message item), as an output
// item of a compaction: id, type message, status completed, role user,
// and its content as parts (a string becomes one input_text part).
func AppendUserItem(dst []byte, id string, raw []byte) []byte {
	item := parse(raw)
	dst = append(dst, `{"id":`...)
	dst = gjson.AppendJSONString(dst, id)
	dst = append(dst, `,"type":"message","status":"completed","role":"user","content":`...)
	switch c := item.Get("content"); {
	case c.Type == gjson.String:
		dst = append(dst, `[{"type":"input_text","text":`...)
		dst = append(gjson.AppendJSONString(dst, c.Str), "}]"...)
	case c.IsArray():
		dst = append(dst, c.Raw...)
	default:
		dst = append(dst, "[]"...)
	}
	return append(dst, '}')
}

// UserText reports whether raw is a user message item.
func UserText(raw []byte) bool {
	item := parse(raw)
	return itemType(item) == typeMessage && item.Get("role").Str == wire.RoleUser
}

// AppendCompacted appends the answer of a compaction: the
// "response.compaction" object with id, created (Unix seconds), the
// output items and the usage the compaction cost.
func AppendCompacted(dst []byte, id string, created int64, output [][]byte, u wire.Usage) []byte {
	dst = append(dst, `{"id":`...)
	dst = gjson.AppendJSONString(dst, id)
	dst = append(dst, `,"object":"response.compaction","created_at":`...)
	dst = strconv.AppendInt(dst, created, 10)
	dst = append(dst, `,"output":[`...)
	for i, item := range output {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, item...)
	}
	dst = append(dst, `],"usage":{"input_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.InputTokens), 10)
	dst = append(dst, `,"input_tokens_details":{"cached_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.CachedTokens), 10)
	dst = append(dst, `},"output_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.OutputTokens), 10)
	dst = append(dst, `,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.InputTokens+u.OutputTokens), 10)
	return append(dst, "}}"...)
}
