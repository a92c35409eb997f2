package body

import (
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/wire"
)

// Turns is how an API with two roles in its conversation (Anthropic's
// messages, Gemini's contents) takes canonical messages: consecutive
// messages of one API role are one message on the wire (so a run of
// canonical tool messages becomes one user message, right after the
// assistant's calls), tool results come first in it, a message left with
// no part is not written, and a system or developer message is written
// apart, as an instruction. What a message, a part and an instruction
// look like stay in the protocol's package.
type Turns struct {
	// Package prefixes the error for a role the API has no place for
	// ("messages", "gemini").
	Package string
	// Assistant is the API's role of the assistant's messages; every
	// other message but an instruction is "user".
	Assistant string
	// Instruction appends system or developer message m as an instruction.
	Instruction func(dst []byte, m wire.Message) []byte
	// Part returns part p of a message of API role role, nil for a part
	// that is not written, and whether it is a tool result.
	Part func(role string, p wire.Part) (b []byte, result bool, err error)
	// Member is the message's member that holds its parts ("content",
	// "parts"): see AppendMessage.
	Member string
	// End, if set, is called whenever a message ends (written or not), to
	// forget what Part kept for the message's parts.
	End func()
}

// Encode appends msgs to dst as t describes.
func (t Turns) Encode(dst [][]byte, msgs []wire.Message) ([][]byte, error) {
	var (
		role          string   // API role of the message being built
		results, rest []string // its parts: tool results first
	)
	flush := func() {
		if role != "" && len(results)+len(rest) > 0 {
			dst = append(dst, AppendMessage(nil, role, t.Member, append(results, rest...)))
		}
		role, results, rest = "", nil, nil
		if t.End != nil {
			t.End()
		}
	}
	for _, m := range msgs {
		switch m.Role {
		case wire.RoleSystem, wire.RoleDeveloper:
			flush()
			dst = append(dst, t.Instruction(nil, m))
			continue
		case wire.RoleUser, wire.RoleTool, wire.RoleAssistant:
		default:
			return dst, fmt.Errorf("%s: encode: unknown role %q", t.Package, m.Role)
		}
		r := "user"
		if m.Role == wire.RoleAssistant {
			r = t.Assistant
		}
		if r != role {
			flush()
			role = r
		}
		for _, p := range m.Parts {
			b, result, err := t.Part(r, p)
			switch {
			case err != nil:
				return dst, err
			case b == nil:
			case result:
				results = append(results, string(b))
			default:
				rest = append(rest, string(b))
			}
		}
	}
	flush()
	return dst, nil
}

// AppendMessage appends {"role":role,<member>:[parts]}, a message of a
// two-role API whose parts (raw JSON values) member holds.
func AppendMessage(b []byte, role, member string, parts []string) []byte {
	return AppendMessageRaw(b, role, member, JoinArray(parts))
}

// AppendMessageRaw appends {"role":role,<member>:parts}, parts a JSON
// array as it came.
func AppendMessageRaw(b []byte, role, member, parts string) []byte {
	b = append(b, `{"role":`...)
	b = gjson.AppendJSONString(b, role)
	b = append(append(append(b, ',', '"'), member...), '"', ':')
	b = append(b, parts...)
	return append(b, '}')
}
