package messages

import (
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/tokens"
)

// Tokens returns the tokens of a stored message as the budget counts a
// message of another protocol: the chat-completions messages that chat's
// Encode writes for Decode's reading of raw, each counted as
// tokens.Counter.Message counts it, plus a token per four bytes of the
// opaque blocks (thinking, server tools), which chat cannot carry. It
// reads raw once and writes nothing. ok is false for raw that is not
// valid UTF-8, whose strings the chat encoding rewrites: the caller
// counts such a message through the encoding. raw is not retained.
func (Codec) Tokens(c *tokens.Counter, enc tokens.Encoding, raw []byte) (n int, ok bool) {
	if !utf8.Valid(raw) {
		return 0, false
	}
	m := parse(raw)
	var role string
	var content gjson.Result
	if m.IsObject() { // as Decode reads it
		content = m.Get("content")
		role = canonicalRole(m.Get("role").Str, content)
	}
	var t tally
	switch {
	case role == "":
		return undecodable(raw), true
	case content.Type == gjson.String:
		if content.Str != "" {
			t.parts++
			t.content += c.Text(enc, content.Str)
		}
	case content.IsArray():
		content.ForEach(func(_, b gjson.Result) bool {
			t.block(c, enc, b)
			return true
		})
	case content.Exists() && content.Type != gjson.Null:
		return undecodable(raw), true
	}
	return t.total(), true
}

// undecodable is the count of a message Decode refuses.
func undecodable(raw []byte) int { return len(raw)/4 + tokens.MessageOverhead }

// tally adds up a message's counts as its chat encoding would have them:
// one tool message per tool result, then one message of the content
// parts (text, images, files) and tool calls, if it has any.
type tally struct {
	results  int  // the tokens of the tool messages
	nresults int  // how many there are
	parts    int  // content parts
	content  int  // their tokens
	calls    int  // tool calls
	callToks int  // their tokens
	opaque   int  // bytes of opaque blocks
	refused  bool // a document chat cannot carry: Encode fails
}

// roleTokens is what tokens.Counter.Message counts for a chat role: one
// token each for the API's roles, the only ones chat's Encode writes.
const roleTokens = 1

// block adds block b, as Decode's appendPart reads it.
func (t *tally) block(c *tokens.Counter, enc tokens.Encoding, b gjson.Result) {
	switch b.Get("type").Str {
	case typeText:
		t.parts++
		t.content += c.Text(enc, b.Get("text").Str)
		return
	case typeImage:
		src := b.Get("source")
		switch src.Get("type").Str {
		case "base64":
			t.parts++
			t.content += tokens.ImageURL("data:" + src.Get("media_type").Str + ";base64," + src.Get("data").Str)
			return
		case "url":
			t.parts++
			t.content += tokens.ImageURL(src.Get("url").Str)
			return
		}
	case typeDocument:
		// decodeDocument's sources; chat carries a file as a data: URL
		// only, and refuses a file id Anthropic holds.
		src := b.Get("source")
		switch src.Get("type").Str {
		case "base64", "text":
			t.file()
			return
		case "url":
			if strings.HasPrefix(src.Get("url").Str, "data:") {
				t.file()
			} else {
				t.refused = true
			}
			return
		case "file":
			t.refused = true
			return
		}
	case typeToolUse:
		args := b.Get("input").Raw
		if args == "" {
			args = "{}"
		}
		t.calls++
		t.callToks += c.Call(enc, b.Get("name").Str, args)
		return
	case typeToolResult:
		t.nresults++
		t.results += tokens.MessageOverhead + roleTokens + c.Text(enc, b.Get("tool_use_id").Str) + c.Text(enc, resultText(b.Get("content")))
		return
	}
	t.opaque += len(b.Raw)
}

// file adds a document chat carries as a file part.
func (t *tally) file() {
	t.parts++
	t.content += tokens.FilePart
}

// total is the message's count.
func (t *tally) total() int {
	n := t.results
	switch {
	case t.refused: // Encode writes nothing
		n = tokens.MessageOverhead
	case t.parts > 0 || t.calls > 0:
		n += tokens.MessageOverhead + roleTokens + t.content + t.callToks
	case t.nresults == 0:
		n = tokens.MessageOverhead
	}
	return n + t.opaque/4
}
