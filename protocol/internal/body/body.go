// Package body holds what the protocol packages write the same way into
// the bodies they send upstream and answer with: a request object
// rewritten member by member (Splice), tools appended to a request
// (WithTools), its sampling options (AppendSampling), the stop reason
// and usage an answer ends with (Ending), a call's arguments as an
// object (ObjectArgs), an instruction's text (Texts), canonical messages
// as an API with two roles takes them (Turns), arrays of raw JSON values,
// and the random part of an id. What a protocol names its
// members and how it shapes a tool stay in its package.
package body

import (
	"crypto/rand"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/recallproxy/recall/wire"
)

// Splice names the two members of a protocol's request object that
// Recall rewrites: the conversation and the instructions.
type Splice struct {
	Messages string // the conversation's member: "messages", "contents"
	System   string // the instructions' member: "system", "systemInstruction"
	// Name maps a member's name before it is compared with Messages and
	// System (Gemini reads snake_case names too); nil compares it as it is.
	Name func(string) string
}

// Append appends the object root member by member, each as it came but
// for two: the Messages member holds msgs (raw JSON values) as an array,
// and the System member is kept as it came when keep, else holds system,
// or is left out when system is nil. When root has no System member,
// system is added last unless keep or nil. root must be an object.
func (s Splice) Append(dst []byte, root gjson.Result, msgs [][]byte, system []byte, keep bool) []byte {
	dst = append(dst, '{')
	n := 0
	member := func(key string) {
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = append(dst, key...)
		dst = append(dst, ':')
	}
	wroteSystem := false
	root.ForEach(func(k, v gjson.Result) bool {
		name := k.Str
		if s.Name != nil {
			name = s.Name(name)
		}
		switch name {
		case s.Messages:
			member(k.Raw)
			dst = AppendArray(dst, msgs)
		case s.System:
			wroteSystem = true
			if keep {
				member(k.Raw)
				dst = append(dst, v.Raw...)
			} else if system != nil {
				member(k.Raw)
				dst = append(dst, system...)
			}
		default:
			member(k.Raw)
			dst = append(dst, v.Raw...)
		}
		return true
	})
	if !wroteSystem && !keep && system != nil {
		member(`"` + s.System + `"`)
		dst = append(dst, system...)
	}
	return append(dst, '}')
}

// WithTools is wire.Upstream's WithTools for a protocol whose tools are
// elements of a "tools" array, each written by tool, and whose "stream"
// and "stream_options" are left out when the round is not streamed.
func WithTools(body []byte, tools []wire.Tool, stream bool, tool func(dst []byte, t wire.Tool) []byte) ([]byte, error) {
	var err error
	for _, t := range tools {
		if body, err = sjson.SetRawBytes(body, "tools.-1", tool(nil, t)); err != nil {
			return nil, err
		}
	}
	if !stream {
		for _, k := range []string{"stream", "stream_options"} {
			if body, err = sjson.DeleteBytes(body, k); err != nil {
				return nil, err
			}
		}
	}
	return body, nil
}

// Ending returns the stop reason and usage an answer's closing event
// carries: the answer's where it has them (a may be nil), else the ones
// the stream brought (stop, u).
func Ending(a *wire.Answer, stop string, u wire.Usage) (string, wire.Usage) {
	if a != nil {
		if a.Stop != "" {
			stop = a.Stop
		}
		if a.Usage != (wire.Usage{}) {
			u = a.Usage
		}
	}
	return stop, u
}

// AppendSampling appends the members of req's sampling options that are
// set: temperature, top_p, and its stop sequences as the member named
// stop, each written by quote (none when stop is "": a protocol without
// them).
func AppendSampling(dst []byte, req *wire.Request, stop string, quote func(dst []byte, s string) []byte) []byte {
	if req.Temperature != nil {
		dst = append(dst, `,"temperature":`...)
		dst = strconv.AppendFloat(dst, *req.Temperature, 'g', -1, 64)
	}
	if req.TopP != nil {
		dst = append(dst, `,"top_p":`...)
		dst = strconv.AppendFloat(dst, *req.TopP, 'g', -1, 64)
	}
	if stop != "" && len(req.Stop) > 0 {
		dst = append(append(append(dst, `,"`...), stop...), `":[`...)
		for i, s := range req.Stop {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = quote(dst, s)
		}
		dst = append(dst, ']')
	}
	return dst
}

// ObjectArgs is a call's arguments as a protocol that takes only an
// object writes them (Gemini's args, Anthropic's input): the arguments
// when they are a JSON object, {} otherwise (arguments a model left
// unparsable carry nothing a tool read).
func ObjectArgs(args string) string {
	args = strings.TrimSpace(args)
	if gjson.Valid(args) && gjson.Parse(args).IsObject() {
		return args
	}
	return "{}"
}

// Texts is the text of m's text parts, joined by newlines: an
// instruction as a protocol whose instructions are one text writes it.
func Texts(m wire.Message) string {
	var texts []string
	for _, p := range m.Parts {
		if p.Kind == wire.Text && p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// AppendArray appends vals, raw JSON values, as an array.
func AppendArray(dst []byte, vals [][]byte) []byte {
	dst = append(dst, '[')
	for i, v := range vals {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, v...)
	}
	return append(dst, ']')
}

// AppendEach appends the array arr with each element as elem appends it.
func AppendEach(dst []byte, arr gjson.Result, elem func(dst []byte, v gjson.Result) []byte) []byte {
	dst = append(dst, '[')
	n := 0
	arr.ForEach(func(_, v gjson.Result) bool {
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = elem(dst, v)
		return true
	})
	return append(dst, ']')
}

// JoinArray returns vals, raw JSON values, as an array.
func JoinArray(vals []string) string {
	n := 2
	for _, v := range vals {
		n += len(v) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, v := range vals {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, v...)
	}
	return string(append(b, ']'))
}

// ID returns prefix followed by n random letters and digits, as the ids
// of the answers Recall mints look ("chatcmpl-…", "msg_…").
func ID(prefix string, n int) string {
	const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	var buf [64]byte
	b := buf[:0]
	if len(prefix)+n > len(buf) {
		b = make([]byte, 0, len(prefix)+n)
	}
	b = append(b, prefix...)
	b = b[:len(prefix)+n]
	_, _ = rand.Read(b[len(prefix):]) // never fails (crypto/rand)
	for i := len(prefix); i < len(b); i++ {
		b[i] = digits[int(b[i])%len(digits)]
	}
	return string(b)
}
