package messages

import (
	"strings"
	"testing"
)

// locateBodies are request bodies messageAt must find messages in as
// gjson does, or leave to it: white space between tokens, members around
// and before "messages", a second "messages", escapes in strings and in
// names, values nested deep, and bodies that are not what AppendBody
// writes.
var locateBodies = []string{
	`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}],"stream":true}`,
	" {\n \"system\" : [ {\"type\":\"text\",\"text\":\"s\\\"]\"} ] ,\n \"messages\" : [ {\"role\":\"user\",\"content\":\"a\"} ,\t{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"b\\u0041\"}]} ] } ",
	`{"metadata":{"x":[1,2,{"y":"]}"}]},"messages":[{"role":"user","content":"a"}],"messages":[{"role":"user","content":"z"},{"role":"user","content":"w"}]}`,
	`{"messag\u0065s":[{"role":"user","content":"a"}],"messages":[{"role":"user","content":"b"}]}`,
	`{"messages":{"0":{"role":"user","content":"a"}}}`,
	`{"messages":[]}`,
	`{"messages":"none"}`,
	`{"x":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `,"messages":[{"role":"user","content":"a"}]}`,
	`{"messages":[{"role":"user","content":"a"},{"role":"user","content":"b"`,
	`{"model":"m","messages":[{"role":"user","content":"é ✓"},{"role":"assistant","content":"b"}]}`,
	`[{"messages":[{"role":"user","content":"a"}]}]`,
	``,
}

// TestMessageAtIsGJSONsMessage: where messageAt decides, it finds the
// message gjson's walk (messageOf) finds, at the same offset; valid
// JSON without escapes in names it decides.
func TestMessageAtIsGJSONsMessage(t *testing.T) {
	for _, body := range locateBodies {
		for last := range 4 {
			checkMessageAt(t, []byte(body), last)
		}
	}
	for _, body := range []string{locateBodies[0], locateBodies[1], locateBodies[2], locateBodies[9]} {
		if _, _, ok := messageAt([]byte(body), 0); !ok {
			t.Errorf("message 0 of %s: not decided", body)
		}
	}
}

// checkMessageAt fails t if messageAt finds message last of body
// elsewhere than gjson does.
func checkMessageAt(t *testing.T, body []byte, last int) {
	t.Helper()
	i, j, ok := messageAt(body, last)
	if !ok {
		return
	}
	want := messageOf(parse(body), last)
	if got := string(body[i:j]); got != want.Raw || i != want.Index {
		t.Errorf("message %d of %s: got %q at %d, want %q at %d", last, body, got, i, want.Raw, want.Index)
	}
}
