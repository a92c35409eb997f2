package history

import (
	"encoding/json"
	"strconv"

	"github.com/cespare/xxhash/v2"
	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/wire"
)

// Message builders shared by this package's tests and, being exported from
// a _test.go file, by the external history_test package.

// Msg builds a message from raw JSON: its role read from it, its hash the
// xxhash of raw (test messages are written canonically) and its token
// count a rough len/4 plus OpenAI's per-message overhead.
func Msg(raw string) Message {
	return Message{
		Role:   gjson.Get(raw, "role").String(),
		Raw:    []byte(raw),
		Hash:   xxhash.Sum64String(raw),
		Tokens: len(raw)/4 + 3,
	}
}

// User builds a user message.
func User(text string) Message { return Msg(`{"role":"user","content":` + quote(text) + `}`) }

// Asst builds a plain assistant answer.
func Asst(text string) Message { return Msg(`{"role":"assistant","content":` + quote(text) + `}`) }

// Calls builds an assistant message asking for the tool calls ids; an
// empty content is sent as null.
func Calls(content string, ids ...string) Message {
	c := "null"
	if content != "" {
		c = quote(content)
	}
	raw := `{"role":"assistant","content":` + c + `,"tool_calls":[`
	for i, id := range ids {
		if i > 0 {
			raw += ","
		}
		raw += `{"id":` + quote(id) + `,"type":"function","function":{"name":"f","arguments":"{\"n\":` + strconv.Itoa(i) + `}"}}`
	}
	return Msg(raw + `]}`)
}

// Tool builds the result of call id.
func Tool(id, content string) Message {
	return Msg(`{"role":"tool","tool_call_id":` + quote(id) + `,"content":` + quote(content) + `}`)
}

// Tok returns m with n tokens.
func Tok(m Message, n int) Message {
	m.Tokens = n
	return m
}

// Number assigns msgs sequence numbers from first and turn numbers as a
// store does (a user message opens a turn), in place, and returns msgs.
func Number(msgs []Message, first uint64) []Message {
	var turn uint32
	for i := range msgs {
		if msgs[i].Role == wire.RoleUser || turn == 0 {
			turn++
		}
		msgs[i].Seq = first + uint64(i)
		msgs[i].Turn = turn
	}
	return msgs
}

// Roles returns the roles of msgs, for compact failure messages.
func Roles(msgs []Message) []string {
	out := make([]string, len(msgs))
	for i := range msgs {
		out[i] = msgs[i].Role
	}
	return out
}

// Raws returns the raw JSON of msgs.
func Raws(msgs []Message) []json.RawMessage {
	out := make([]json.RawMessage, len(msgs))
	for i := range msgs {
		out[i] = msgs[i].Raw
	}
	return out
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
