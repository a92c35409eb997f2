package messages

import (
	"bytes"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/jsonscan"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/wire"
)

// quickParse is ParseRequest in one pass over the body, for the requests
// clients commonly send: it answers the Request ParseRequest would, or
// false for anything it cannot decide (an invalid request among them,
// whose error parseRequest then names). It decides a body of valid UTF-8
// JSON nested at most chat.MaxDepth levels whose object names its
// members without escapes, none of the ones ParseRequest reads twice,
// with a non-empty string "model", "max_tokens" a positive integer of
// at most nine digits, a boolean "stream", and "messages" a non-empty
// array of messages of the shape checkMessage accepts, written plainly:
// a role spelled without escapes ("user", "assistant" or "system") and
// content a string or an array of blocks whose "type" is spelled
// without escapes, a tool_result's "tool_use_id" and a tool_use's "id"
// and "name" strings, none of these twice. The other members
// ParseRequest reads (system, tools, tool_choice, temperature, top_p,
// stop_sequences, metadata) are small beside the messages: their bytes
// are found in the pass and read with ParseRequest's own functions.
//
// ParseRequest's gjson passes (a validation, then a parse of every
// message and block for each member it looks up) were most of the
// Messages API's plain path.
func quickParse(body []byte) (*wire.Request, bool) {
	s := reqScan{Scanner: jsonscan.Scanner{B: body}}
	s.req = &wire.Request{Protocol: wire.Messages, Body: body, Choices: 1}
	if !s.request() {
		return nil, false
	}
	s.Space()
	if s.I != len(body) {
		return nil, false
	}
	return s.req, s.members()
}

// reqScan walks a request for quickParse.
type reqScan struct {
	jsonscan.Scanner
	req *wire.Request
	// The bounds of the spanNames members' values (0, 0: absent), and
	// how many times each came.
	spans [len(spanNames)][2]int
	seen  [len(spanNames)]int
}

// spanNames are the members the pass finds and members reads after it
// with ParseRequest's own functions, each at its index below in
// reqScan.spans.
var spanNames = [...]string{"system", "tools", "tool_choice", "temperature", "top_p", "stop_sequences", "metadata"}

const (
	spanSystem = iota
	spanTools
	spanToolChoice
	spanTemperature
	spanTopP
	spanStop
	spanMetadata
)

// request consumes the request object (depth 1).
func (s *reqScan) request() bool {
	var model, maxTokens, messages, stream int
	ok := s.Object(func(name []byte) bool {
		var ok bool
		switch string(name) {
		case "model":
			model++
			var v []byte
			v, ok = s.Plain()
			s.req.Model = string(v) // outlives the body
			return ok && len(v) > 0
		case "max_tokens":
			maxTokens++
			s.req.MaxTokens, ok = s.count()
			return ok
		case "messages":
			messages++
			return s.messages()
		case "stream":
			stream++
			kind, ok := s.Value(chat.MaxDepth - 1)
			s.req.Stream = kind == jsonscan.KindTrue
			return ok && (kind == jsonscan.KindTrue || kind == jsonscan.KindFalse)
		}
		for i, n := range spanNames {
			if string(name) == n {
				s.seen[i]++
				s.spans[i][0] = s.I
				_, ok = s.Value(chat.MaxDepth - 1)
				s.spans[i][1] = s.I
				return ok
			}
		}
		_, ok = s.Value(chat.MaxDepth - 1)
		return ok
	})
	if !ok || model != 1 || maxTokens != 1 || messages != 1 || stream > 1 {
		return false
	}
	for _, n := range s.seen {
		if n > 1 {
			return false
		}
	}
	return true
}

// count consumes a positive integer of one to nine digits, without sign,
// fraction or exponent, and returns it.
func (s *reqScan) count() (int, bool) {
	n, ok := s.SmallUint()
	return n, ok && n > 0
}

// messages consumes a non-empty array of messages (depth 2) into the
// request's Messages and InPlace.
func (s *reqScan) messages() bool {
	n, ok := s.Array(func(i int) bool {
		start := s.I
		role, ok := s.message()
		if !ok {
			return false
		}
		if role == roleSystem {
			s.req.InPlace = append(s.req.InPlace, i)
		}
		s.req.Messages = append(s.req.Messages, s.B[start:s.I:s.I])
		return true
	})
	return ok && n > 0
}

// message consumes a message (depth 3) as checkMessage accepts it and
// returns its role.
func (s *reqScan) message() (string, bool) {
	var roles, contents int
	var role []byte
	ok := s.Object(func(name []byte) bool {
		var ok bool
		switch string(name) {
		case "role":
			roles++
			role, ok = s.Plain()
		case "content":
			contents++
			switch {
			case s.At('"'):
				_, _, _, ok = s.Str()
			case s.At('['):
				ok = s.blocks()
			} // content of another kind: parseRequest names the error
		default:
			_, ok = s.Value(chat.MaxDepth - 3)
		}
		return ok
	})
	if !ok || roles != 1 || contents != 1 {
		return "", false
	}
	switch r := str(role); r {
	case roleUser, roleAssistant, roleSystem:
		return r, true
	}
	return "", false
}

// blocks consumes a message's array of content blocks (depth 4).
func (s *reqScan) blocks() bool {
	_, ok := s.Array(func(int) bool { return s.block() })
	return ok
}

// block consumes a content block (depth 5): an object with one "type"
// spelled without escapes, and for a tool_result one string
// "tool_use_id", for a tool_use one string "id" and one string "name".
func (s *reqScan) block() bool {
	var types, useIDs, ids, names int
	useID, id, name := -1, -1, -1 // the kinds of the values
	var typ []byte
	ok := s.Object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "type":
			types++
			typ, ok = s.Plain()
		case "tool_use_id":
			useIDs++
			useID, ok = s.Value(chat.MaxDepth - 5)
		case "id":
			ids++
			id, ok = s.Value(chat.MaxDepth - 5)
		case "name":
			names++
			name, ok = s.Value(chat.MaxDepth - 5)
		default:
			_, ok = s.Value(chat.MaxDepth - 5)
		}
		return ok
	})
	if !ok || types != 1 || useIDs > 1 || ids > 1 || names > 1 {
		return false
	}
	switch string(typ) {
	case typeToolResult:
		return useID == jsonscan.KindString
	case typeToolUse:
		return id == jsonscan.KindString && name == jsonscan.KindString
	}
	return true
}

// members reads the members whose bounds the pass found with
// ParseRequest's functions, and reports whether each is as it accepts.
func (s *reqScan) members() bool {
	var err error
	val := func(span [2]int) ([]byte, bool) { return s.B[span[0]:span[1]], span[1] > 0 }
	if v, ok := val(s.spans[spanSystem]); ok {
		if s.req.Instructions, err = parseSystem(parse(v)); err != nil {
			return false
		}
	}
	if v, ok := val(s.spans[spanTools]); ok {
		s.req.ToolsRaw = bytes.Clone(v)
		if s.req.Tools, err = parseTools(parse(v)); err != nil {
			return false
		}
	}
	if v, ok := val(s.spans[spanToolChoice]); ok {
		if s.req.ToolChoice, err = parseToolChoice(parse(v)); err != nil {
			return false
		}
	}
	if v, ok := val(s.spans[spanTemperature]); ok {
		if s.req.Temperature, err = number("temperature", parse(v)); err != nil {
			return false
		}
	}
	if v, ok := val(s.spans[spanTopP]); ok {
		if s.req.TopP, err = number("top_p", parse(v)); err != nil {
			return false
		}
	}
	if v, ok := val(s.spans[spanStop]); ok {
		if s.req.Stop, err = stringList("stop_sequences", parse(v)); err != nil {
			return false
		}
	}
	if v, ok := val(s.spans[spanMetadata]); ok {
		if m := parse(v); !m.IsObject() && m.Type != gjson.Null {
			return false
		}
	}
	return true
}
