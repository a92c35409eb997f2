// Package gemini is Google's Gemini API (generativelanguage v1beta,
// https://ai.google.dev/api/generate-content) as a Recall wire protocol:
// the Codec of its stored messages, the Upstream that sends a curated
// context to a gemini upstream and reads its answer (streamed or not),
// and the Ingress that reads a client's generateContent request and
// renders answers and streams in Gemini's shapes, whatever protocol the
// upstream spoke.
//
// A stored message is one element of a request's "contents", exactly as
// it arrived: {"role":"user"|"model","parts":[…]}. A part holds one of
// text, inlineData, fileData, functionCall, functionResponse,
// executableCode or codeExecutionResult; a text part with "thought":true
// is the model's thought summary, and any part may carry the
// thoughtSignature the model asks to be sent back. The API reads its
// JSON in lowerCamelCase and snake_case alike (it is protobuf JSON), and
// so does this package.
//
// Instructions (the request's systemInstruction, never stored) are
// carried on the seam as a message of their own, {"role":"system",
// "parts":[…]}. The same shape is what Encode writes for a canonical
// system or developer message, and what AppendBody moves into
// systemInstruction.
//
// # Pairing calls and results
//
// A functionCall and its functionResponse share an id when the model gave
// the call one (the Gemini API may; Recall's own answers always carry
// the upstream's); the client is expected to echo it, as the SDKs do.
// Without ids Gemini pairs them by name and order, and so does the Codec:
// a call or response with no id has the id SyntheticID(name, k), k being
// how many parts of that name came before it in its message. Those ids
// are stable (they depend on the message alone), are what Calls, Results
// and Decode report, and are never written back to Gemini: Encode leaves
// out an id equal to the synthetic one of its place. A call with an id
// answered by a response without one (or the reverse) does not pair,
// and curation repairs it away as an unanswered call.
package gemini

import (
	"strconv"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/wire"
)

// init registers the protocol, and the gemini kind of upstream: every
// request goes to it as Gemini.
func init() {
	wire.Register(Codec{})
	wire.RegisterUpstream(wire.Gemini, Upstream{}, wire.UpstreamKind{Name: wire.UpstreamGemini, Sends: wire.Gemini})
}

// Roles of the Gemini API's contents, and the seam's role of
// instructions.
const (
	roleUser   = "user"
	roleModel  = "model"
	roleSystem = "system"
)

// Part members of the Gemini API, in lowerCamelCase.
const (
	keyText             = "text"
	keyThought          = "thought"
	keySignature        = "thoughtSignature"
	keyFunctionCall     = "functionCall"
	keyFunctionResponse = "functionResponse"
	keyInlineData       = "inlineData"
	keyFileData         = "fileData"
)

// str returns b as a string without copying; the string must not outlive
// b's contents.
func str(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// parse returns raw parsed, without copying.
func parse(raw []byte) gjson.Result { return gjson.Parse(str(raw)) }

// get returns member key of obj, a lowerCamelCase name, or its
// snake_case spelling when the camel one is absent; a dotted key is a
// path of such names. A spelling whose bytes are not in obj (and no
// \u escape that could spell them) is not looked for: gjson's Get reads
// the object through to the end to miss, and most members asked for are
// missing from most parts (a text part has no functionCall), which read
// a part's whole text twice.
func get(obj gjson.Result, key string) gjson.Result {
	if i := strings.IndexByte(key, '.'); i >= 0 {
		return get(get(obj, key[:i]), key[i+1:])
	}
	esc := strings.Contains(obj.Raw, `\u`)
	if esc || strings.Contains(obj.Raw, key) {
		if v := obj.Get(key); v.Exists() {
			return v
		}
	}
	if s := snakeOf(key); s != key && (esc || strings.Contains(obj.Raw, s)) {
		return obj.Get(s)
	}
	return gjson.Result{}
}

// mayHold reports whether raw may hold a member named key (in either
// spelling): false when neither spelling is in its bytes, nor a \u
// escape that could spell one.
func mayHold(raw []byte, key string) bool {
	s := str(raw)
	return strings.Contains(s, key) || strings.Contains(s, snakeOf(key)) || strings.Contains(s, `\u`)
}

// snakes are the part members' snake_case spellings, made once.
var snakes = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{keyText, keyThought, keySignature, keyFunctionCall, keyFunctionResponse, keyInlineData, keyFileData} {
		m[k] = snake(k)
	}
	return m
}()

// snakeOf is snake(key), without making it again for a part member.
func snakeOf(key string) string {
	if s, ok := snakes[key]; ok {
		return s
	}
	return snake(key)
}

// snake is a lowerCamelCase name in snake_case ("thoughtSignature":
// "thought_signature").
func snake(key string) string {
	n := 0
	for i := 0; i < len(key); i++ {
		if 'A' <= key[i] && key[i] <= 'Z' {
			n++
		}
	}
	if n == 0 {
		return key
	}
	b := make([]byte, 0, len(key)+n)
	for i := 0; i < len(key); i++ {
		if c := key[i]; 'A' <= c && c <= 'Z' {
			b = append(b, '_', c+'a'-'A')
		} else {
			b = append(b, c)
		}
	}
	return string(b)
}

// camel is a snake_case name in lowerCamelCase (names without '_' are
// returned as they are).
func camel(key string) string {
	up, b := false, []byte(nil)
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c == '_' && i > 0 {
			if b == nil {
				b = append(make([]byte, 0, len(key)), key[:i]...)
			}
			up = true
			continue
		}
		if b != nil {
			if up && 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			b = append(b, c)
		}
		up = false
	}
	if b == nil {
		return key
	}
	return string(b)
}

// SyntheticID is the id of the k-th (from 0) function call or response
// named name in its message when it has none of its own (see the package
// doc). It holds only letters, digits, '_' and '-', as every protocol's
// call ids may.
func SyntheticID(name string, k int) string {
	b := make([]byte, 0, len(name)+16)
	b = append(b, "gemini-"...)
	for i := 0; i < len(name) && i < 48; i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			c = '_'
		}
		b = append(b, c)
	}
	b = append(b, '-')
	return string(strconv.AppendInt(b, int64(k), 10))
}

// counter counts the parts of each name seen so far in a message, to
// give the next one its place (SyntheticID's k).
type counter struct{ names []string }

// next returns how many parts named name came before this one.
func (c *counter) next(name string) int {
	k := 0
	for _, n := range c.names {
		if n == name {
			k++
		}
	}
	c.names = append(c.names, name)
	return k
}

// partID returns the id of a functionCall or functionResponse object fn,
// its own or the synthetic one of its place.
func partID(fn gjson.Result, c *counter) string {
	name := fn.Get("name").Str
	k := c.next(name)
	if id := fn.Get("id"); id.Type == gjson.String && id.Str != "" {
		return id.Str
	}
	return SyntheticID(name, k)
}
