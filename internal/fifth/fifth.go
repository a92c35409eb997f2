// Package fifth is a wire protocol for tests only: the least a protocol
// package is, a Codec and an Upstream registered from its init with a
// kind of upstream and a key header of their own. A test that links it
// shows what adding a protocol as a package gets without an edit
// elsewhere: config accepts its kind, auth reads a client's key from its
// header, and the summariser sends its request through its Upstream.
//
// A message is {"speaker":"user","says":"…"}. A request to the upstream
// is POST Path with the key in KeyHeaderName and the body
// {"model":…,"limit":…,"rules":[instructions],"turns":[messages]}; its
// answer is {"reply":"…","used":{"in":…,"out":…}}.
package fifth

import (
	"bytes"
	"errors"
	"hash/fnv"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/wire"
)

// Protocol is the protocol's wire value, far from any real protocol's.
const Protocol wire.Protocol = 200

// Kind is its kind of upstream (upstream.protocol), KeyHeaderName the
// header its upstream, and its clients, send the key in.
const (
	Kind          = "fifth"
	KeyHeaderName = "x-fifth-key"
)

func init() {
	wire.Register(Codec{})
	wire.RegisterUpstream(Protocol, Upstream{}, wire.UpstreamKind{Name: Kind, Sends: Protocol})
}

// Codec is the protocol's wire.Codec: messages of text only.
type Codec struct{}

var _ wire.Codec = Codec{}

// Protocol returns Protocol.
func (Codec) Protocol() wire.Protocol { return Protocol }

// Name returns Kind.
func (Codec) Name() string { return Kind }

// Role returns the message's speaker.
func (Codec) Role(raw []byte) string { return gjson.GetBytes(raw, "speaker").Str }

// Calls appends nothing: the protocol has no tool calls.
func (Codec) Calls(dst []string, _ []byte) []string { return dst }

// Results appends nothing: the protocol has no tool results.
func (Codec) Results(dst []string, _ []byte) []string { return dst }

// KeepCalls returns raw: there is no call to drop.
func (Codec) KeepCalls(raw []byte, _ func(string) bool) ([]byte, bool) { return raw, true }

// Itemized reports false.
func (Codec) Itemized() bool { return false }

// CutResults returns raw: there is no result to cut.
func (Codec) CutResults(raw []byte, _ int, _ func(int, int) string) ([]byte, bool) {
	return raw, false
}

// Hash hashes the speaker and the text.
func (c Codec) Hash(raw []byte) uint64 {
	h := fnv.New64a()
	h.Write([]byte(c.Role(raw)))
	h.Write([]byte{0})
	h.Write([]byte(gjson.GetBytes(raw, "says").Str))
	return h.Sum64()
}

// WithoutCacheHints returns raw: the protocol has none.
func (Codec) WithoutCacheHints(raw []byte) []byte { return raw }

// Decode reads the speaker and the text.
func (c Codec) Decode(raw []byte) (wire.Message, error) {
	r := gjson.ParseBytes(raw)
	if !r.IsObject() {
		return wire.Message{}, errors.New("fifth: decode: not an object")
	}
	return wire.Message{Role: r.Get("speaker").Str, Parts: []wire.Part{{Kind: wire.Text, Text: r.Get("says").Str}}}, nil
}

// Text appends the message's text.
func (Codec) Text(dst, raw []byte) []byte {
	return wire.AppendLine(dst, gjson.GetBytes(raw, "says").Str)
}

// Encode writes each message as its role and its text (wire.AppendText).
func (Codec) Encode(dst [][]byte, msgs []wire.Message) ([][]byte, error) {
	for _, m := range msgs {
		b := append([]byte(`{"speaker":`), gjson.AppendJSONString(nil, m.Role)...)
		b = append(b, `,"says":`...)
		b = gjson.AppendJSONString(b, string(wire.AppendText(nil, m)))
		dst = append(dst, append(b, '}'))
	}
	return dst, nil
}

// Upstream is the protocol's wire.Upstream, with a key header of its own.
type Upstream struct{}

var (
	_ wire.Upstream  = Upstream{}
	_ wire.KeyHeader = Upstream{}
)

// Path returns "/fifth/talk".
func (Upstream) Path() string { return "/fifth/talk" }

// KeyHeader returns KeyHeaderName.
func (Upstream) KeyHeader() string { return KeyHeaderName }

// AppendBody appends {"model","limit","rules","turns"}.
func (Upstream) AppendBody(dst []byte, req *wire.Request, instructions, msgs [][]byte) ([]byte, error) {
	dst = append(dst, `{"model":`...)
	dst = gjson.AppendJSONString(dst, req.Model)
	dst = append(dst, `,"limit":`...)
	dst = strconv.AppendInt(dst, int64(req.MaxTokens), 10)
	dst = append(dst, `,"rules":[`...)
	dst = append(dst, bytes.Join(instructions, []byte(","))...)
	dst = append(dst, `],"turns":[`...)
	dst = append(dst, bytes.Join(msgs, []byte(","))...)
	return append(dst, "]}"...), nil
}

// WithTools refuses: the protocol has no tools.
func (Upstream) WithTools([]byte, []wire.Tool, bool) ([]byte, error) {
	return nil, errors.New("fifth: no tools")
}

// ParseAnswer reads {"reply","used":{"in","out"}}.
func (Upstream) ParseAnswer(body []byte) (wire.Answer, error) {
	if !gjson.ValidBytes(body) {
		return wire.Answer{}, errors.New("fifth: answer is not JSON")
	}
	r := gjson.ParseBytes(body)
	if !r.Get("reply").Exists() {
		return wire.Answer{}, errors.New("fifth: answer without reply")
	}
	reply := r.Get("reply").Str
	raw, _ := Codec{}.Encode(nil, []wire.Message{{Role: wire.RoleAssistant, Parts: []wire.Part{{Kind: wire.Text, Text: reply}}}})
	return wire.Answer{
		Stored:   raw,
		Protocol: Protocol,
		Message:  wire.Message{Role: wire.RoleAssistant, Parts: []wire.Part{{Kind: wire.Text, Text: reply}}},
		Stop:     wire.StopEnd,
		Usage:    wire.Usage{InputTokens: int(r.Get("used.in").Int()), OutputTokens: int(r.Get("used.out").Int())},
	}, nil
}

// NewAssembler returns an Assembler that refuses every event: the
// protocol does not stream.
func (Upstream) NewAssembler() wire.Assembler { return noStream{} }

type noStream struct{}

func (noStream) Event(dst []wire.Delta, _, _ []byte) ([]wire.Delta, bool, error) {
	return dst, false, errors.New("fifth: no streams")
}

func (noStream) Answer() (wire.Answer, error) { return wire.Answer{}, errors.New("fifth: no streams") }
