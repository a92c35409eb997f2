package gemini

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/protocol/internal/body"
	"github.com/recallproxy/recall/wire"
)

// ErrIncomplete is returned (wrapped) by Assembler.Answer for a stream
// that ended before a chunk with a finishReason.
var ErrIncomplete = errors.New("gemini: stream incomplete")

// NewAssembler returns an Assembler for one streamed answer.
func (Upstream) NewAssembler() wire.Assembler { return &Assembler{} }

// Assembler builds an answer from :streamGenerateContent?alt=sse events,
// each a GenerateContentResponse holding the next parts of the first
// candidate. Consecutive text parts (and consecutive thought parts) are
// joined into one part, a thoughtSignature kept on the part it came with
// (one that comes on an empty text part goes to the text before it);
// function calls, which Gemini streams whole, are parts of their own. The
// answer is done at the chunk that carries a finishReason.
type Assembler struct {
	id, model string
	done      bool
	parts     []part
	texts     int // text parts so far
	thinks    int // thought parts so far
	calls     counter
	ncalls    int
	finish    string
	usage     usage
}

// part is one part of the answer being built: a text or thought part
// (text), or any other part as it came (raw).
type part struct {
	thought bool
	ordinal int
	text    strings.Builder
	sig     string // the signature's JSON string, "" for none
	raw     string
}

var _ wire.Assembler = (*Assembler)(nil)

// Event reads one chunk. An error chunk ({"error": …}) wraps ErrUpstream,
// a chunk that is not JSON ErrBadAnswer. Events after the finishing one
// are ignored.
func (a *Assembler) Event(dst []wire.Delta, _, data []byte) ([]wire.Delta, bool, error) {
	if a.done {
		return dst, true, nil
	}
	if chat.CheckDepth(data) != nil || !gjson.ValidBytes(data) {
		return dst, false, fmt.Errorf("gemini: stream event: %w", ErrBadAnswer)
	}
	ev := parse(data)
	if e := ev.Get("error"); e.Exists() {
		return dst, false, fmt.Errorf("gemini: stream event: %w: %s: %s", ErrUpstream, e.Get("status").Str, e.Get("message").Str)
	}
	if a.id == "" {
		a.id = strings.Clone(get(ev, "responseId").Str)
	}
	if m := get(ev, "modelVersion").Str; m != "" && a.model == "" {
		a.model = strings.Clone(m)
	}
	a.usage.read(get(ev, "usageMetadata"))
	cand := ev.Get("candidates.0")
	cand.Get("content.parts").ForEach(func(_, p gjson.Result) bool {
		dst = a.add(dst, p)
		return true
	})
	if reason := get(cand, "finishReason").Str; reason != "" {
		a.finish, a.done = reason, true
		dst = append(dst, wire.Delta{Kind: wire.Finish, Text: canonicalStop(reason, a.message()), Usage: a.usage.canonical()})
	}
	return dst, a.done, nil
}

// add adds one streamed part and appends its deltas.
func (a *Assembler) add(dst []wire.Delta, p gjson.Result) []wire.Delta {
	sig := ""
	if s := get(p, keySignature); s.Type == gjson.String && s.Str != "" {
		sig = s.Raw
	}
	t := p.Get(keyText)
	if t.Type != gjson.String {
		if fn := get(p, keyFunctionCall); fn.IsObject() {
			id := partID(fn, &a.calls)
			args := strings.TrimSpace(fn.Get("args").Raw)
			if args == "" {
				args = "{}"
			}
			dst = append(dst, wire.Delta{Kind: wire.ToolCallStart, Index: a.ncalls, CallID: strings.Clone(id), Name: strings.Clone(fn.Get("name").Str)},
				wire.Delta{Kind: wire.ArgumentsDelta, Index: a.ncalls, Text: strings.Clone(args)})
			a.ncalls++
		}
		a.parts = append(a.parts, part{raw: strings.Clone(p.Raw)})
		return dst
	}
	thought := get(p, keyThought).Bool()
	last := len(a.parts) - 1
	joins := last >= 0 && a.parts[last].raw == "" && a.parts[last].thought == thought && a.parts[last].sig == ""
	if !joins && t.Str == "" && sig != "" && last >= 0 && a.parts[last].raw == "" && a.parts[last].sig == "" {
		a.parts[last].sig = strings.Clone(sig) // a signature after its text
		return dst
	}
	if !joins {
		np := part{thought: thought}
		if thought {
			np.ordinal, a.thinks = a.thinks, a.thinks+1
		} else {
			np.ordinal, a.texts = a.texts, a.texts+1
		}
		a.parts = append(a.parts, np)
		last++
	}
	cur := &a.parts[last]
	cur.text.WriteString(t.Str)
	if sig != "" {
		cur.sig = strings.Clone(sig)
	}
	if t.Str != "" {
		kind := wire.TextDelta
		if thought {
			kind = wire.ReasoningDelta
		}
		dst = append(dst, wire.Delta{Kind: kind, Index: cur.ordinal, Text: strings.Clone(t.Str)})
	}
	return dst
}

// stored is the answer so far as a stored content.
func (a *Assembler) stored() []byte {
	parts := make([]string, 0, len(a.parts))
	for i := range a.parts {
		p := &a.parts[i]
		if p.raw != "" {
			parts = append(parts, p.raw)
			continue
		}
		b := append([]byte(`{"text":`), gjson.AppendJSONString(nil, p.text.String())...)
		if p.thought {
			b = append(b, `,"thought":true`...)
		}
		if p.sig != "" {
			b = append(append(b, `,"thoughtSignature":`...), p.sig...)
		}
		parts = append(parts, string(append(b, '}')))
	}
	if len(parts) == 0 {
		parts = append(parts, `{"text":""}`)
	}
	return body.AppendMessage(nil, roleModel, "parts", parts)
}

// message is the answer so far in the canonical model.
func (a *Assembler) message() wire.Message {
	m, _ := Codec{}.Decode(a.stored())
	return m
}

// Answer returns the whole answer once a chunk carried its finishReason.
func (a *Assembler) Answer() (wire.Answer, error) {
	if !a.done {
		return wire.Answer{}, fmt.Errorf("gemini: assemble: %w", ErrIncomplete)
	}
	stored := a.stored()
	msg, err := Codec{}.Decode(stored)
	if err != nil {
		return wire.Answer{}, fmt.Errorf("gemini: assemble: %w", err)
	}
	return wire.Answer{ID: a.id, Model: a.model, Stored: [][]byte{stored}, Protocol: wire.Gemini, Message: msg,
		Stop: canonicalStop(a.finish, msg), Usage: a.usage.canonical()}, nil
}
