// Package wire is the protocol-neutral face of a conversation. Recall
// stores every message in the exact JSON it arrived with, tagged with the
// wire protocol it came in; merge, curation, repair and translation work
// on it through that protocol's Codec, and never parse a protocol's JSON
// themselves. A protocol is one package that implements Codec and
// Upstream and registers them (Register and RegisterUpstream, from its
// init function), with the kinds of upstream that speak it; adding a
// protocol changes nothing here, in history or in the stores.
package wire

import (
	"fmt"
	"unicode/utf8"
)

// Protocol names a wire protocol. Its value is stored with every message:
// values are never reused or renumbered.
type Protocol uint8

// The protocols Recall speaks. ChatCompletions is 0 so that messages
// stored before protocols were recorded read as chat completions.
const (
	ChatCompletions Protocol = 0
	Responses       Protocol = 1
	Messages        Protocol = 2
	Gemini          Protocol = 3
)

func (p Protocol) String() string {
	if c := lookup(p); c != nil {
		return c.Name()
	}
	return fmt.Sprintf("protocol(%d)", uint8(p))
}

// Roles of the canonical model. A message's canonical role is what turn and
// tool-call structure read: Tool marks a message that carries only tool
// results, whatever role its protocol gives it (Anthropic sends them as
// user messages).
const (
	RoleSystem    = "system"
	RoleDeveloper = "developer"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Codec reads and edits the stored messages of one protocol. Its methods
// take a message's raw JSON as stored and never modify it: edits return a
// new slice. Strings a method returns may alias raw.
type Codec interface {
	// Protocol and Name identify the protocol ("chat.completions",
	// "responses", "messages").
	Protocol() Protocol
	Name() string
	// Role returns the message's canonical role ("" if raw is not a
	// message of the protocol).
	Role(raw []byte) string
	// Calls appends to dst the ids of the tool calls the message asks for.
	Calls(dst []string, raw []byte) []string
	// Results appends to dst the ids of the tool calls the message answers.
	Results(dst []string, raw []byte) []string
	// KeepCalls returns the message with only the tool calls and tool
	// results whose ids keep accepts. It reports false if nothing would be
	// left to send.
	KeepCalls(raw []byte, keep func(id string) bool) ([]byte, bool)
	// Itemized reports whether one answer's tool calls may be stored as
	// several consecutive assistant messages (the Responses API's items):
	// curation then reads such a run as one call group.
	Itemized() bool
	// CutResults cuts each tool result's text to max characters (runes),
	// appending on a line of its own the marker made from the kept and
	// total counts. It reports false if nothing was longer than max.
	CutResults(raw []byte, max int, marker func(kept, total int) string) ([]byte, bool)
	// Hash is the message's canonical hash: equal for messages a client
	// would consider the same (key order, whitespace and cache hints aside).
	Hash(raw []byte) uint64
	// WithoutCacheHints returns the message without the client's cache
	// hints, as history is replayed with the provider's breakpoints moved.
	WithoutCacheHints(raw []byte) []byte
	// Decode reads the message into the canonical model, for translation to
	// another protocol and for counting.
	Decode(raw []byte) (Message, error)
	// Text appends to dst the message's readable text, as AppendText
	// writes it: what search indexes and what the history tools, the
	// summariser and the API's views show. Every reader of a stored
	// message's words goes through it, never through the JSON.
	Text(dst, raw []byte) []byte
	// Encode writes canonical messages in the protocol, as the messages of a
	// request to an upstream of it. Parts it cannot carry (another
	// provider's opaque items) are left out, but a File it cannot carry
	// is a *FileError: a user's file is refused, never dropped. It may
	// merge or split messages where the protocol shapes turns
	// differently.
	Encode(dst [][]byte, msgs []Message) ([][]byte, error)
}

// Separable is implemented by the codec of a protocol whose Encode writes
// each message apart from its neighbours but for the runs of consecutive
// messages it joins: Encode of a sequence is, run after run, Encode of
// each run alone, a run being the longest stretch of messages each of
// which Joins to the one before it (by their canonical roles). A bridged
// request's translations are then kept a run at a time and encoded only
// when new (the pipeline's memo). A codec whose encoding of a message
// depends on messages not beside it does not implement it.
type Separable interface {
	// Joins reports whether a message of role next is encoded together
	// with the message of role prev right before it.
	Joins(prev, next string) bool
}

// Thinking is implemented by the codec of a protocol whose answers carry
// the model's thinking or reasoning, which a client may leave out when it
// resends them: Anthropic lets a client drop earlier turns' thinking and
// redacted_thinking blocks, and a Responses client may leave reasoning
// items out. Merge compares such a resend with the stored answer through
// it; the stored hash stays that of the message as it arrived.
type Thinking interface {
	// WithoutThinking reports whether raw holds thinking or reasoning a
	// client may leave out (ok). If it does, hash is the codec's Hash of
	// the message without it, and empty reports that nothing is left: a
	// client leaves the whole message out.
	WithoutThinking(raw []byte) (hash uint64, empty, ok bool)
}

// Signer is implemented by the codec of a protocol whose upstream
// request carries a conversation message otherwise than Encode (or the
// store) has it: Gemini 3 refuses a model content whose first function
// call lost its thoughtSignature, so the body gets Google's documented
// stand-in there. The upstream body applies it to every message it
// sends, and the inspector's render of a request (api) does the same.
type Signer interface {
	// Signed returns raw as the upstream request carries it (raw itself
	// when nothing changes).
	Signed(raw []byte) []byte
}

// Message is a message in the canonical model.
type Message struct {
	// Role is the canonical role.
	Role  string
	Parts []Part
}

// Kind is the kind of a Part.
type Kind uint8

// Kinds of content.
const (
	// Text is plain text.
	Text Kind = iota
	// Image is an image by URL (or data: URL).
	Image
	// ToolCall asks for a tool: CallID, Name and Arguments (JSON text).
	ToolCall
	// ToolResult answers CallID with Text (IsError if the tool failed).
	ToolResult
	// Refusal is the model's refusal text.
	Refusal
	// Opaque is a piece only its own protocol's upstream can read
	// (encrypted reasoning, signed thinking): Raw in Origin's JSON.
	Opaque
	// File is a document the user attached (a PDF, a text file): Name is
	// its filename ("" if none was given), and it is carried by one of
	// URL (a data: URL holding it in base64, or a URL it is fetched
	// from, whose media type MediaType gives when known) or FileID (a
	// file the provider of Origin holds). A codec whose protocol cannot
	// carry a file refuses it (Encode's error, a 400): a user's file is
	// never left out unsaid.
	File
)

// Part is one piece of a canonical message.
type Part struct {
	Kind      Kind
	Text      string
	URL       string
	CallID    string
	Name      string
	Arguments string
	IsError   bool
	Origin    Protocol
	Raw       []byte
	// MediaType and FileID are a File's (see File).
	MediaType string
	FileID    string
}

// AppendText appends to dst the readable text of m, one piece a line: its
// texts and refusals, each tool call's name and arguments, each tool
// result's text. Images and opaque pieces (reasoning, thinking, items only
// their provider reads) add nothing: they are not words a reader searches
// for or a summary keeps.
func AppendText(dst []byte, m Message) []byte {
	add := func(s string) { dst = AppendLine(dst, s) }
	for _, p := range m.Parts {
		switch p.Kind {
		case Text, Refusal, ToolResult:
			add(p.Text)
		case ToolCall:
			add(p.Name)
			add(p.Arguments)
		}
	}
	return dst
}

// RunePrefix returns the longest prefix of s of at most n bytes that
// ends on a rune boundary: s itself when it is no longer than n. It is
// where a shortened text (a list's preview, a summary prompt's tool
// result) is cut.
func RunePrefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// AppendLine appends s to dst as a line of its own, after a newline when
// dst is not empty; an empty s adds nothing. It is how AppendText, and
// each codec's Text, join the pieces of a message's text.
func AppendLine(dst []byte, s string) []byte {
	if s == "" {
		return dst
	}
	if len(dst) > 0 {
		dst = append(dst, '\n')
	}
	return append(dst, s...)
}

// codecs is written only by Register, from init functions, which run
// before anything reads it: no lock on the hot path.
var codecs [256]Codec

// Register makes c the codec of its protocol. Protocol packages call it
// from their init function and nowhere else; registering two codecs for
// one protocol panics.
func Register(c Codec) {
	if codecs[c.Protocol()] != nil {
		panic(fmt.Sprintf("wire: protocol %d registered twice", c.Protocol()))
	}
	codecs[c.Protocol()] = c
}

func lookup(p Protocol) Codec { return codecs[p] }

// For returns the codec of p. It panics if none is registered: a stored
// message of a protocol this binary cannot read is a build error (the
// protocol's package is not linked), not a request error.
func For(p Protocol) Codec {
	if c := lookup(p); c != nil {
		return c
	}
	panic(fmt.Sprintf("wire: no codec for protocol %d (is its package imported?)", p))
}

// Named returns the registered protocol whose codec is called name
// ("chat.completions", "responses", "messages"), as an export names it.
func Named(name string) (Protocol, bool) {
	for i, c := range codecs {
		if c != nil && c.Name() == name {
			return Protocol(i), true
		}
	}
	return 0, false
}
