package history

import (
	"bytes"
	"unsafe"

	"github.com/tidwall/gjson"
)

// view returns raw as a string without copying (gjson.GetBytes copies what
// it returns, which would make Repair's fast path allocate). Strings derived
// from it alias raw: they must not outlive the call that made them, and
// raw must not change meanwhile (stored messages are never modified).
func view(raw []byte) string { return unsafe.String(unsafe.SliceData(raw), len(raw)) }

// toolCallsKey is the tail of the "tool_calls" key: searching for it starts
// from '_', rare in text, where the whole key would start from '"', on
// which JSON trips the search at every string.
var toolCallsKey = []byte(`_calls"`)

// hasToolCalls reports whether an assistant message asks for tool calls.
func hasToolCalls(raw []byte) bool {
	if !bytes.Contains(raw, toolCallsKey) { // most messages: skip the parse
		return false
	}
	tc := gjson.Get(view(raw), "tool_calls")
	if !tc.IsArray() {
		return false
	}
	found := false
	tc.ForEach(func(_, _ gjson.Result) bool {
		found = true
		return false
	})
	return found
}

// callIDs returns the ids of an assistant message's tool calls, appended to
// dst. The ids alias raw (see view).
func callIDs(dst []string, raw []byte) []string {
	gjson.Get(view(raw), "tool_calls").ForEach(func(_, v gjson.Result) bool {
		dst = append(dst, v.Get("id").String())
		return true
	})
	return dst
}

// toolCallID returns the id a tool message answers. It aliases raw (see
// view).
func toolCallID(raw []byte) string {
	return gjson.Get(view(raw), "tool_call_id").String()
}
