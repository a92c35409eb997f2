package history

import "github.com/tidwall/gjson"

// hasToolCalls reports whether an assistant message asks for tool calls.
func hasToolCalls(raw []byte) bool {
	tc := gjson.GetBytes(raw, "tool_calls")
	return tc.IsArray() && len(tc.Array()) > 0
}

// callIDs returns the ids of an assistant message's tool calls, appended to dst.
func callIDs(dst []string, raw []byte) []string {
	gjson.GetBytes(raw, "tool_calls").ForEach(func(_, v gjson.Result) bool {
		dst = append(dst, v.Get("id").String())
		return true
	})
	return dst
}

// toolCallID returns the id a tool message answers.
func toolCallID(raw []byte) string {
	return gjson.GetBytes(raw, "tool_call_id").String()
}
