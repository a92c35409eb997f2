package chat

import (
	"bytes"
	"strings"

	"github.com/recallproxy/recall/internal/canonjson"
	"github.com/recallproxy/recall/internal/jsonscan"
	"github.com/tidwall/gjson"
)

// Reading a stream's chunk in one pass. A chunk is the one a token of a
// stream: Add reads each, and relaying a chat stream is mostly that. The
// gjson read validates the chunk, then walks it again for its members,
// then each choice and delta again for theirs; scanChunk validates the
// chunk as it reads the members the assembler keeps (jsonscan), and
// applies them after, so that a chunk it cannot decide on changes
// nothing and is read the gjson way (add), which also says what is
// wrong with it.

// chunk is what scanChunk read of a chunk: each member the assembler
// keeps, raw (a string's quotes included), nil when absent or, for a
// member kept only as a string, not a string.
type chunk struct {
	id, model, usage []byte
	// choice is whether choices held a choice; index, finish and delta's
	// members are its.
	choice bool
	// reply is set for a non-streamed reply (scanReply), whose choice
	// has a "message" where a chunk's has a "delta"; message is whether
	// the choice held one, an object.
	reply, message   bool
	index            int
	finish           []byte
	content, refusal []byte
	reasoning        []byte // reasoning_content, which only the seam's Event reads
	calls            [maxChunkCalls]callFragment
	nCalls           int
}

// callFragment is one element of a delta's tool_calls; index is -1 when
// it has none (the element's position counts then).
type callFragment struct {
	index                int
	id, typ, name, input []byte
}

const (
	// maxChunkCalls is the number of tool call fragments one chunk's
	// delta may hold for scanChunk; more are add's to read (OpenAI sends
	// one).
	maxChunkCalls = 4
	// maxChunkDepth is how deeply scanChunk follows a member it skips: a
	// deeper chunk is add's to read.
	maxChunkDepth = 32
)

// addScanned reads data, a chunk, as add does, when scanChunk can: it
// reports false, the assembler unchanged, for a chunk scanChunk cannot
// decide on.
func (a *Assembler) addScanned(data []byte) bool {
	var c chunk
	if !c.scan(data) {
		return false
	}
	a.apply(&c)
	return true
}

// scan reads data, a chunk, into c in one pass that validates it. It
// reports false for a chunk that is not an object of the shape add reads
// members from as it reads them here: invalid JSON, a name with an
// escape, a duplicate member the assembler reads (which of them counts
// differs between gjson's walk and its lookup), an "error" that is not
// null, choices that are not an array of at most one object, content
// sent as an array of parts, a delta's name or audio, a tool call's
// custom input, a tool call's id, type, name or arguments that is
// neither a string nor null, or more than maxChunkCalls fragments.
func (c *chunk) scan(data []byte) bool {
	s := jsonscan.Scanner{B: data}
	seen := 0
	const (
		sID = 1 << iota
		sModel
		sChoices
		sUsage
		sError
	)
	walked := s.Object(func(name []byte) bool {
		bit := 0
		switch string(name) {
		case "id":
			bit = sID
		case "model":
			bit = sModel
		case "choices":
			bit = sChoices
		case "usage":
			bit = sUsage
		case "error":
			bit = sError
		default:
			_, ok := s.Value(maxChunkDepth)
			return ok
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		var ok bool
		switch bit {
		case sID:
			c.id, ok = scanString(&s)
		case sModel:
			c.model, ok = scanString(&s)
		case sUsage:
			start := s.I
			var kind int
			if kind, ok = s.Value(maxChunkDepth); kind == jsonscan.KindObject {
				c.usage = data[start:s.I]
			}
		case sError:
			kind, valid := s.Value(maxChunkDepth)
			ok = valid && kind == jsonscan.KindNull
		default:
			ok = c.scanChoices(&s)
		}
		return ok
	})
	s.Space()
	return walked && s.I == len(data)
}

// scanChoices reads a chunk's choices: null, or an array of at most one
// choice.
func (c *chunk) scanChoices(s *jsonscan.Scanner) bool {
	if !s.At('[') {
		kind, ok := s.Value(0)
		return ok && kind == jsonscan.KindNull
	}
	_, ok := s.Array(func(i int) bool {
		c.choice = true
		return i == 0 && c.scanChoice(s)
	})
	return ok
}

// scanChoice reads a choice: its index, delta and finish_reason.
func (c *chunk) scanChoice(s *jsonscan.Scanner) bool {
	seen := 0
	const (
		sIndex = 1 << iota
		sDelta
		sFinish
	)
	return s.Object(func(name []byte) bool {
		bit := 0
		switch string(name) {
		case "index":
			bit = sIndex
		case "delta", "message":
			if (string(name) == "message") != c.reply {
				_, ok := s.Value(maxChunkDepth)
				return ok
			}
			bit = sDelta
		case "finish_reason":
			bit = sFinish
		default:
			_, ok := s.Value(maxChunkDepth)
			return ok
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		var ok bool
		switch bit {
		case sIndex:
			c.index, ok = s.SmallUint()
		case sFinish:
			c.finish, ok = scanString(s)
		default:
			if !s.At('{') {
				kind, valid := s.Value(0)
				return valid && kind == jsonscan.KindNull
			}
			c.message = true
			ok = c.scanDelta(s)
		}
		return ok
	})
}

// scanDelta reads a delta: its content, refusal and tool calls.
func (c *chunk) scanDelta(s *jsonscan.Scanner) bool {
	seen := 0
	const (
		sContent = 1 << iota
		sRefusal
		sReasoning
		sCalls
	)
	return s.Object(func(name []byte) bool {
		bit := 0
		switch string(name) {
		case "content":
			bit = sContent
		case "refusal":
			bit = sRefusal
		case "reasoning_content":
			bit = sReasoning
		case "tool_calls":
			bit = sCalls
		case "name", "audio":
			return false
		default:
			_, ok := s.Value(maxChunkDepth)
			return ok
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		var ok bool
		switch bit {
		case sContent:
			if s.At('[') {
				return false
			}
			c.content, ok = scanString(s)
		case sRefusal:
			c.refusal, ok = scanString(s)
		case sReasoning:
			c.reasoning, ok = scanString(s)
		default:
			if !s.At('[') {
				kind, valid := s.Value(0)
				return valid && kind == jsonscan.KindNull
			}
			_, ok = s.Array(func(i int) bool {
				if i >= maxChunkCalls || !s.At('{') {
					return false
				}
				c.nCalls = i + 1
				return c.calls[i].scan(s)
			})
		}
		return ok
	})
}

// scan reads a tool call fragment: its index, id, type and function.
func (f *callFragment) scan(s *jsonscan.Scanner) bool {
	f.index = -1
	seen := 0
	const (
		sIndex = 1 << iota
		sID
		sType
		sFunction
		sCustom
	)
	return s.Object(func(name []byte) bool {
		bit := 0
		switch string(name) {
		case "index":
			bit = sIndex
		case "id":
			bit = sID
		case "type":
			bit = sType
		case "function":
			bit = sFunction
		case "custom":
			bit = sCustom
		default:
			_, ok := s.Value(maxChunkDepth)
			return ok
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		var ok bool
		switch bit {
		case sIndex:
			f.index, ok = s.SmallUint()
		case sID:
			f.id, ok = scanStringOrNull(s)
		case sType:
			f.typ, ok = scanStringOrNull(s)
		case sCustom:
			kind, valid := s.Value(0)
			ok = valid && kind == jsonscan.KindNull
		default:
			if !s.At('{') {
				kind, valid := s.Value(0)
				return valid && kind == jsonscan.KindNull
			}
			ok = f.scanFunction(s)
		}
		return ok
	})
}

// scanFunction reads a tool call fragment's function: its name and
// arguments.
func (f *callFragment) scanFunction(s *jsonscan.Scanner) bool {
	seen := 0
	return s.Object(func(name []byte) bool {
		bit := 0
		switch string(name) {
		case "name":
			bit = 1
		case "arguments":
			bit = 2
		default:
			_, ok := s.Value(maxChunkDepth)
			return ok
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		var ok bool
		if bit == 1 {
			f.name, ok = scanStringOrNull(s)
		} else {
			f.input, ok = scanStringOrNull(s)
		}
		return ok
	})
}

// scanString consumes a value and returns it raw if it is a string, nil
// if it is of another kind.
func scanString(s *jsonscan.Scanner) (raw []byte, ok bool) {
	if !s.At('"') {
		_, ok = s.Value(maxChunkDepth)
		return nil, ok
	}
	start := s.I
	_, _, _, ok = s.Str()
	return s.B[start:s.I], ok
}

// scanStringOrNull consumes a string, returned raw, or null (nil). A
// value of another kind is not read: the seam's Event reads a tool
// call's members as their text (gjson's String), which a pass does not
// keep.
func scanStringOrNull(s *jsonscan.Scanner) (raw []byte, ok bool) {
	if s.At('"') {
		return scanString(s)
	}
	kind, ok := s.Value(0)
	return nil, ok && kind == jsonscan.KindNull
}

// apply changes the assembler as add does for the chunk c was read from.
func (a *Assembler) apply(c *chunk) {
	if c.id != nil && a.id == "" {
		a.id = unquote(c.id)
	}
	if c.model != nil && a.model == "" {
		a.model = unquote(c.model)
	}
	if c.usage != nil {
		a.usage = parseUsage(gjson.Parse(bytesString(c.usage)))
	}
	if !c.choice {
		return
	}
	if c.finish != nil {
		a.finished = true
	}
	if c.index != 0 {
		return
	}
	if c.content != nil {
		a.content = canonjson.AppendUnescaped(a.content, bytesString(c.content))
	}
	if c.refusal != nil {
		a.refusal = canonjson.AppendUnescaped(a.refusal, bytesString(c.refusal))
	}
	for i := range c.nCalls {
		f := &c.calls[i]
		idx := int64(f.index)
		if idx < 0 {
			idx = int64(i)
		}
		call := a.call(idx)
		if f.id != nil && call.id == "" {
			call.id = unquote(f.id)
		}
		if f.typ != nil && call.typ == "" {
			call.typ = unquote(f.typ)
		}
		if f.name != nil {
			call.name = canonjson.AppendUnescaped(call.name, bytesString(f.name))
		}
		if f.input != nil {
			call.argument = canonjson.AppendUnescaped(call.argument, bytesString(f.input))
		}
	}
	if c.finish != nil {
		if f := unquote(c.finish); f != a.finish {
			a.finish = f
		}
	}
}

// unquote returns the string raw holds (quotes included, valid JSON), in
// memory of its own.
func unquote(raw []byte) string {
	body := raw[1 : len(raw)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		return string(body)
	}
	return strings.Clone(gjson.ParseBytes(raw).Str)
}

// scanReply reads body, a non-streamed chat.completion, as ParseReply
// reads it, in one pass that validates it (chunk.scan, its choice's
// message read as a chunk's delta). ok is false for a body that pass
// cannot decide on, or that ParseReply refuses: no choice, or no message
// object in it.
func scanReply(body []byte) (r Reply, ok bool) {
	c := chunk{reply: true}
	if !c.scan(body) || !c.message {
		return Reply{}, false
	}
	c.index = 0 // the only choice is the one recorded (firstChoice)
	var a Assembler
	a.apply(&c)
	return a.Reply(), true
}
