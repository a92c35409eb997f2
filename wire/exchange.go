package wire

// The exchange seam: what a protocol package gives the proxy. A client
// speaks one protocol (its ingress) and the tenant's upstream another, or
// the same; the proxy decodes the request with the ingress, curates the
// history, encodes the context with the upstream's Codec, sends it with
// the upstream's Upstream, and renders the answer with the ingress. When
// both are the same protocol the upstream's bytes are relayed as they came.

import "errors"

// Request is a client's request, decoded by its ingress protocol.
type Request struct {
	// Protocol is the ingress protocol; Body the request body as it came.
	Protocol Protocol
	Body     []byte
	// MessagesAt is where the ingress found the conversation's messages in
	// Body (its messages array: start and end offsets; both 0 when it did
	// not say): the upstream half of the same protocol splices the curated
	// context there instead of parsing Body again.
	MessagesAt [2]int
	// Model is the request's model: a copy of its own, never pointing
	// into Body (it outlives the request: the exchange's record, a
	// summary job).
	Model  string
	Stream bool
	// MaxTokens is the answer's token cap (0: the request set none).
	MaxTokens int
	// Choices is the number of answers asked for (chat completions' n;
	// 1 elsewhere).
	Choices int
	// Instructions are sent first on every request and never stored (chat
	// completions' leading system and developer messages, Responses'
	// instructions, Messages' system), each a message in Protocol's JSON.
	Instructions [][]byte
	// Messages are the request's conversation messages in Protocol's JSON,
	// merged with the stored history.
	Messages [][]byte
	// InPlace are the indexes in Messages of instructions a client placed
	// among its messages (a Messages system-role message): they are sent
	// where they stand, to an upstream of Protocol only, and never stored
	// or merged. Nil when there are none.
	InPlace []int
	// Tools are the tools the request offers, ToolsRaw their JSON as sent
	// (counted as the prompt counts them).
	Tools    []Tool
	ToolsRaw []byte
	// ToolChoice is "", "auto", "none", "required", or a tool's name.
	ToolChoice string
	// Temperature and TopP are nil when not set.
	Temperature *float64
	TopP        *float64
	// Stop are the stop sequences.
	Stop []string
	// Conversation is the conversation the proxy resolved for the request
	// ("" when none is recorded), PreviousResponseID and Store the
	// Responses API's fields (Store defaults to true there).
	Conversation       string
	PreviousResponseID string
	Store              bool
	// ResponseID and Created (Unix seconds) are Recall's id and time for
	// the answer being made, set by the proxy before NewRenderer when the
	// ingress names its answer in its first event (the Responses API's
	// response.created); the Answer the renderer ends with carries the same.
	ResponseID string
	Created    int64
}

// Tool is a function the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments.
	Parameters []byte
}

// Stop reasons of the canonical model.
const (
	StopEnd       = "stop"
	StopLength    = "length"
	StopToolCalls = "tool_calls"
	StopFilter    = "content_filter"
)

// Usage is what the upstream reports it spent. InputTokens counts every
// input token, those read from the provider's prompt cache and those
// written to it included: CachedTokens are the part read from the cache,
// CacheCreationTokens the part written to it (Anthropic's
// cache_creation_input_tokens; the other protocols report none).
type Usage struct {
	InputTokens         int
	OutputTokens        int
	CachedTokens        int
	CacheCreationTokens int
	ReasoningTokens     int
}

// Answer is an upstream's whole answer.
type Answer struct {
	// ID and Model are the upstream's.
	ID    string
	Model string
	// Stored are the messages to record, in the upstream protocol's JSON;
	// Protocol is that protocol (set by the upstream's ParseAnswer and
	// Assembler), so that an ingress of the same protocol can render
	// Stored as they came.
	Stored   [][]byte
	Protocol Protocol
	// Hashed holds Protocol's Hash of messages of Stored, computed where
	// they were decoded (an upstream's ParseAnswer), each for the very
	// bytes it names: HashOf reads them. Stored's bytes are never
	// changed in place; a message changed is a new slice.
	Hashed []Hashed
	// Message is the answer in the canonical model (the ingress renders it
	// when it speaks another protocol).
	Message Message
	// Stop is the canonical stop reason.
	Stop  string
	Usage Usage
	// ResponseID is Recall's id for the answer, set by the proxy before an
	// ingress renders it ("resp_…" for the Responses API; empty: the
	// ingress uses ID). Created is its Unix time in seconds, Completed
	// the Unix time in seconds it was finished (0: not known).
	ResponseID string
	Created    int64
	Completed  int64
	// Settings are how the upstream says it ran the request (a Responses
	// upstream's service_tier, temperature, ...), a JSON object in
	// Protocol's shape for an ingress of the same protocol to echo; nil
	// when the upstream said nothing or the answer was translated.
	Settings []byte
}

// Hashed is a codec's Hash of the message whose bytes are Raw.
type Hashed struct {
	Raw  []byte
	Hash uint64
}

// HashOf returns c.Hash(raw) for raw, a message of a.Stored in
// a.Protocol (c its codec): the hash a.Hashed holds for these very bytes
// (the same array, the same length) without hashing them again, else
// c.Hash(raw).
func (a *Answer) HashOf(c Codec, raw []byte) uint64 {
	for _, h := range a.Hashed {
		if len(h.Raw) == len(raw) && len(raw) > 0 && &h.Raw[0] == &raw[0] {
			return h.Hash
		}
	}
	return c.Hash(raw)
}

// Upstream is the upstream side of a protocol.
type Upstream interface {
	// Path is appended to the tenant's base_url ("/chat/completions").
	Path() string
	// AppendBody appends the request body for the upstream: the request's
	// options, then instructions and msgs (the curated context, already in
	// this protocol's JSON). When req came in this protocol its other
	// fields are kept as sent.
	AppendBody(dst []byte, req *Request, instructions, msgs [][]byte) ([]byte, error)
	// WithTools returns body (an AppendBody result) with tools added to
	// the request's tools in the protocol's shape (Recall's history
	// tools), and asking for no stream unless stream is set.
	WithTools(body []byte, tools []Tool, stream bool) ([]byte, error)
	// ParseAnswer reads a non-streamed answer. It refuses a body that is
	// not JSON: nobody checks it before.
	ParseAnswer(body []byte) (Answer, error)
	// NewAssembler reads a streamed answer, one server-sent event at a time.
	NewAssembler() Assembler
}

// StoredParser is an optional interface of an Upstream that reads a
// non-streamed answer without its canonical Message: for a client of the
// upstream's own protocol, which gets the answer's bytes as they came and
// whose stored form (Stored) they are. It refuses a body that is not
// JSON, as ParseAnswer does.
type StoredParser interface {
	ParseStored(body []byte) (Answer, error)
}

// ErrUpstream is wrapped by an Assembler's and ParseAnswer's errors when
// the upstream reported an error in its own words (an error event or
// object): a client of the upstream's protocol may be handed that event
// as it came.
var ErrUpstream = errors.New("upstream error")

// Completer is an optional interface of an Assembler whose answer may be
// whole though the stream ended cleanly before the event that completes
// it (chat completions: some compatible servers send no [DONE], and the
// SDKs accept the stream).
type Completer interface {
	// Complete reports whether the events read so far are a whole answer.
	Complete() bool
}

// Relayer is an optional interface of an Assembler that can read an
// event without its deltas, for a relay that hands the client the
// upstream's own events and needs only to know where the answer ends.
type Relayer interface {
	// Relay reads one event as Event does; finished is set from the
	// first event that carries the stop reason on.
	Relay(name, data []byte) (finished, done bool, err error)
	// StoredAnswer returns the whole answer without its canonical
	// Message (see StoredParser): the relay's client got the events, and
	// their answer is stored as the upstream's protocol has it.
	StoredAnswer() (Answer, error)
}

// Assembler builds an answer from a stream's events.
type Assembler interface {
	// Event reads one event (its SSE event name, possibly empty, and data)
	// and appends the deltas it carries to dst. done is set at the event
	// that completes the answer.
	Event(dst []Delta, name, data []byte) (out []Delta, done bool, err error)
	// Answer returns the whole answer once done.
	Answer() (Answer, error)
}

// DeltaKind is the kind of a streamed step.
type DeltaKind uint8

// Kinds of streamed steps.
const (
	// TextDelta adds Text to the answer's text part Index.
	TextDelta DeltaKind = iota
	// ToolCallStart opens tool call Index with CallID and Name.
	ToolCallStart
	// ArgumentsDelta adds Text to the arguments of tool call Index.
	ArgumentsDelta
	// RefusalDelta adds Text to the refusal.
	RefusalDelta
	// ReasoningDelta adds readable reasoning Text.
	ReasoningDelta
	// Finish carries the stop reason (Text) and the usage.
	Finish
)

// Delta is one step of a streamed answer.
type Delta struct {
	Kind   DeltaKind
	Index  int
	Text   string
	CallID string
	Name   string
	Usage  Usage
	// Raw, on a ReasoningDelta with no Text, is the finished reasoning
	// item CallID in the upstream protocol's own JSON (a Responses
	// reasoning item with its encrypted_content), for a renderer of that
	// protocol to show whole; other renderers ignore it.
	Raw []byte
}

// Ingress is the client side of a protocol.
type Ingress interface {
	// ParseRequest decodes a request body. Its errors are client errors
	// (apierr values) rendered in the protocol's shape.
	ParseRequest(body []byte) (*Request, error)
	// AppendAnswer renders a non-streamed answer as the protocol's answer
	// object.
	AppendAnswer(dst []byte, req *Request, a *Answer) []byte
	// NewRenderer renders a stream as the protocol's events.
	NewRenderer(req *Request) Renderer
}

// Renderer writes a streamed answer in the ingress protocol's events.
type Renderer interface {
	// Delta appends the events for d to dst.
	Delta(dst []byte, d Delta) []byte
	// End appends the events that close the stream for the whole answer a
	// (the event a client acknowledges the turn by).
	End(dst []byte, a *Answer) []byte
}

// The optional parts of a protocol: interfaces an Ingress, an Upstream
// or a Renderer implements when its API does not fit the defaults the
// proxy assumes: an Ingress served at its Upstream's Path under the API
// root (POST /v1/messages), a fixed path upstream, "Authorization:
// Bearer", OpenAI's error shape, the turns sent as they were stored. The
// proxy reads which of them a protocol implements once, when it starts.

// ModelPath is an Upstream whose request path names the model and
// whether the answer streams (Gemini's /models/{model}:generateContent
// and :streamGenerateContent?alt=sse), which Path cannot express. The
// proxy sends to PathFor's path and query, not Path's, and never the
// client's own query.
type ModelPath interface {
	// PathFor returns the path appended to the tenant's base_url and the
	// query string (without '?', "" for none) of a request for model.
	PathFor(model string, stream bool) (path, query string)
}

// KeyHeader is an Upstream that reads the tenant's key from a header of
// its own ("x-goog-api-key") instead of "Authorization: Bearer".
type KeyHeader interface {
	// KeyHeader is the header's name.
	KeyHeader() string
}

// PathIngress is an Ingress whose routes carry request fields in their
// path (Gemini's POST /v1beta/models/{model}:generateContent), which
// the proxy cannot list as exact paths.
type PathIngress interface {
	// Serves reports whether the ingress serves a POST to path, the raw
	// path as the client sent it below any /c/{conversation} prefix.
	Serves(path []byte) bool
	// ParseRequestAt is ParseRequest for a request to path (one Serves
	// accepted).
	ParseRequestAt(path, body []byte) (*Request, error)
}

// DefaultHeader is an Upstream whose API wants a header on every request
// (Anthropic's anthropic-version): the proxy sends it with the value when
// the request carries none of its own (a client of another protocol).
type DefaultHeader interface {
	// DefaultHeader returns the header's name and the value sent.
	DefaultHeader() (name, value string)
}

// ErrorShaper is an Ingress whose clients read Recall's errors in a
// shape of its own, instead of OpenAI's {"error":{"message","type",
// "param","code"}} and, in a stream, "data: " and that body. An error is
// its HTTP status, OpenAI's error type (invalid_request_error, …), its
// code and param ("" for none) and the message shown to the client.
type ErrorShaper interface {
	// AppendError appends the error's body.
	AppendError(dst []byte, status int, typ, code, param, message string) []byte
	// AppendErrorEvent appends the event a stream that failed ends with,
	// for a stream whose events were not rendered by Recall (its own
	// renderer's ErrorRenderer, when it has one, numbers it).
	AppendErrorEvent(dst []byte, status int, typ, code, param, message string) []byte
}

// ErrorRenderer is a Renderer that renders the error event a failed
// stream ends with itself, to number it after the events it rendered
// (the Responses API's sequence_number).
type ErrorRenderer interface {
	// Error appends the error event with its code and message.
	Error(dst []byte, code, message string) []byte
}

// CacheMarker is an Upstream whose API caches a prompt's prefix where
// the request marks it (Anthropic's cache_control breakpoints): the
// proxy asks it for a body with the end of the curated history marked,
// when the context went as stored.
type CacheMarker interface {
	// AppendMarkedBody is AppendBody with the end of message last of
	// msgs (the index among the sent messages of the last history
	// message) marked where the mark fits, and reports whether it was.
	// msgs is as it was when it returns, but may change during the
	// call: it is the caller's own, read by no one else meanwhile.
	AppendMarkedBody(dst []byte, req *Request, instructions, msgs [][]byte, last int) (body []byte, marked bool, err error)
}

// EndMarker is implemented by the codec of a protocol whose Upstream is
// a CacheMarker: the inspector's render of a request (api) places the
// breakpoint the proxy placed on the message the exchange's record
// names, as the request carried it.
type EndMarker interface {
	// MarkedEnd returns raw, one stored message, marked as
	// CacheMarker.AppendMarkedBody marks the last history message (raw
	// itself where it takes no mark). raw is not modified.
	MarkedEnd(raw []byte) []byte
}

// TurnJoiner is an Upstream whose API wants turns shaped otherwise than
// they were stored (Anthropic: every tool result of a call in the one
// user message after it), for messages sent as stored.
type TurnJoiner interface {
	// JoinTurns returns msgs (this protocol's JSON) reshaped, and last
	// (the index of a message in msgs, or -1) as its index in the result.
	// roles, nil or one for each message, are the roles the caller knows
	// (the codec's Role of the message; "" where it does not know it),
	// which spare reading the messages. msgs is not modified.
	JoinTurns(msgs [][]byte, roles []string, last int) ([][]byte, int)
}
