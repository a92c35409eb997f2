package responses

import (
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/tokens"
)

// Tokens returns the tokens of a stored item as the budget counts an item
// of another protocol than chat completions: the chat messages that
// chat's Encode writes for Decode's reading of raw, each counted as
// tokens.Counter.Message counts it. It reads raw once and writes
// nothing, for the items most turns hold: a message of text parts, a
// function_call and a function_call_output. ok is false for any other
// item (refusals, images, files, reasoning and the other opaque items,
// an item Decode refuses), for raw that is not valid JSON, and for raw
// that is not valid UTF-8, whose strings the chat encoding rewrites: the
// caller counts those through the encoding. raw is not retained.
func (Codec) Tokens(c *tokens.Counter, enc tokens.Encoding, raw []byte) (n int, ok bool) {
	// Every chat message is framed (tokens.MessageOverhead) and names
	// one of the API's roles, a token each.
	const framed = tokens.MessageOverhead + 1
	// A message of text, the most items, read in one pass.
	parts := 0
	if _, ok := scanTextMessage(raw, func(text string) { parts, n = parts+1, n+c.Text(enc, text) }); ok {
		if parts == 0 { // Encode writes nothing
			return tokens.MessageOverhead, true
		}
		return framed + n, true
	}
	n = 0
	if !utf8.Valid(raw) || !gjson.ValidBytes(raw) {
		return 0, false
	}
	item := parse(raw)
	t := itemType(item)
	if roleOf(item, t) == "" {
		return 0, false
	}
	switch t {
	case typeMessage:
		content := item.Get("content")
		if content.Type == gjson.String {
			return framed + c.Text(enc, content.Str), true
		}
		if !content.IsArray() {
			return 0, false
		}
		parts = 0
		content.ForEach(func(_, p gjson.Result) bool {
			switch p.Get("type").Str {
			case partInputText, partOutputText:
				parts++
				n += c.Text(enc, p.Get("text").Str)
				return true
			}
			parts = -1 // a part chat writes otherwise, or not at all
			return false
		})
		switch {
		case parts < 0:
			return 0, false
		case parts == 0: // Encode writes nothing
			return tokens.MessageOverhead, true
		}
		return framed + n, true
	case typeFunctionCall:
		args := item.Get("arguments").Str
		if args == "" {
			args = "{}" // as chat writes a call without arguments
		}
		return framed + c.Call(enc, item.Get("name").Str, args), true
	case typeFunctionCallOutput:
		return framed + c.Text(enc, item.Get("call_id").Str) + c.Text(enc, outputText(item.Get("output"))), true
	}
	return 0, false
}
