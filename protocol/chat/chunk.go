package chat

import (
	"bytes"
	"strings"

	"github.com/recallproxy/recall/internal/canonjson"
	"github.com/recallproxy/recall/internal/jsonscan"
	"github.com/tidwall/gjson"
)

// Reading a stream's chunk in one pass. A stream sends a chunk a token:
// Add reads each, and relaying a chat stream is mostly that. The
// gjson read validates the chunk, then walks it again for its members,
// then each choice and delta again for theirs; chunk.scan validates the
// chunk as it reads the members the assembler keeps (jsonscan), and
// applies them after, so that a chunk it cannot decide on changes
// nothing and is read the gjson way (add), which also says what is
// wrong with it.

// chunk is what chunk.scan read of a chunk: each member the assembler
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
	// delta may hold for chunk.scan; more are add's to read (OpenAI sends
	// one).
	maxChunkCalls = 4
	// maxChunkDepth is how deeply chunk.scan follows a member it skips: a
	// deeper chunk is add's to read.
	maxChunkDepth = 32
)

// addScanned reads data, a chunk, as add does, when chunk.scan can: it
// reports false, the assembler unchanged, for a chunk chunk.scan cannot
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
	walked := scanKnown(&s, chunkMembers[:], func(i int) bool {
		switch chunkMembers[i] {
		case "id":
			return scanString(&s, &c.id)
		case "model":
			return scanString(&s, &c.model)
		case "usage":
			start := s.I
			kind, ok := s.Value(maxChunkDepth)
			if kind == jsonscan.KindObject {
				c.usage = data[start:s.I]
			}
			return ok
		case "error":
			return scanNull(&s)
		default: // choices
			if !s.At('[') {
				return scanNull(&s)
			}
			_, ok := s.Array(func(i int) bool {
				c.choice = true
				return i == 0 && c.scanChoice(&s)
			})
			return ok
		}
	})
	s.Space()
	return walked && s.I == len(data)
}

// The members chunk.scan reads, of a chunk, a choice (a chunk's or a
// reply's), a delta, a tool call fragment and its function.
var (
	chunkMembers    = [...]string{"id", "model", "choices", "usage", "error"}
	choiceMembers   = [...]string{"index", "delta", "finish_reason"}
	replyMembers    = [...]string{"index", "message", "finish_reason"}
	deltaMembers    = [...]string{"content", "refusal", "reasoning_content", "tool_calls", "name", "audio"}
	callMembers     = [...]string{"index", "id", "type", "function", "custom"}
	functionMembers = [...]string{"name", "arguments"}
)

// scanChoice reads a choice: its index, delta (a reply's message) and
// finish_reason.
func (c *chunk) scanChoice(s *jsonscan.Scanner) bool {
	names := choiceMembers[:]
	if c.reply {
		names = replyMembers[:]
	}
	return scanKnown(s, names, func(i int) bool {
		switch i {
		case 0:
			var ok bool
			c.index, ok = s.SmallUint()
			return ok
		case 2:
			return scanString(s, &c.finish)
		}
		if !s.At('{') {
			return scanNull(s)
		}
		c.message = true
		return c.scanDelta(s)
	})
}

// scanDelta reads a delta: its content, refusal, reasoning and tool
// calls.
func (c *chunk) scanDelta(s *jsonscan.Scanner) bool {
	return scanKnown(s, deltaMembers[:], func(i int) bool {
		switch deltaMembers[i] {
		case "content":
			return !s.At('[') && scanString(s, &c.content)
		case "refusal":
			return scanString(s, &c.refusal)
		case "reasoning_content":
			return scanString(s, &c.reasoning)
		case "tool_calls":
			if !s.At('[') {
				return scanNull(s)
			}
			_, ok := s.Array(func(i int) bool {
				if i >= maxChunkCalls || !s.At('{') {
					return false
				}
				c.nCalls = i + 1
				return c.calls[i].scan(s)
			})
			return ok
		default: // name, audio: add's to read
			return false
		}
	})
}

// scan reads a tool call fragment: its index, id, type and function.
func (f *callFragment) scan(s *jsonscan.Scanner) bool {
	f.index = -1
	return scanKnown(s, callMembers[:], func(i int) bool {
		switch callMembers[i] {
		case "index":
			var ok bool
			f.index, ok = s.SmallUint()
			return ok
		case "id":
			return scanStringOrNull(s, &f.id)
		case "type":
			return scanStringOrNull(s, &f.typ)
		case "custom":
			return scanNull(s)
		default: // function
			if !s.At('{') {
				return scanNull(s)
			}
			return scanKnown(s, functionMembers[:], func(i int) bool {
				if i == 0 {
					return scanStringOrNull(s, &f.name)
				}
				return scanStringOrNull(s, &f.input)
			})
		}
	})
}

// scanKnown is s.Known with chunks' depth.
func scanKnown(s *jsonscan.Scanner, names []string, read func(i int) bool) bool {
	_, ok := s.Known(names, maxChunkDepth, read)
	return ok
}

// scanNull consumes a value, which must be null.
func scanNull(s *jsonscan.Scanner) bool {
	kind, ok := s.Value(0)
	return ok && kind == jsonscan.KindNull
}

// scanString consumes a value and sets *raw to it if it is a string,
// quotes included.
func scanString(s *jsonscan.Scanner, raw *[]byte) bool {
	if !s.At('"') {
		_, ok := s.Value(maxChunkDepth)
		return ok
	}
	start := s.I
	_, _, _, ok := s.Str()
	*raw = s.B[start:s.I]
	return ok
}

// scanStringOrNull consumes a string, set in *raw as scanString does, or
// null. A value of another kind is not read: the seam's Event reads a
// tool call's members as their text (gjson's String), which a pass does
// not keep.
func scanStringOrNull(s *jsonscan.Scanner, raw *[]byte) bool {
	if s.At('"') {
		return scanString(s, raw)
	}
	return scanNull(s)
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
