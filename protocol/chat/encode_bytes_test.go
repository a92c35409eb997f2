package chat

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/sjson"

	"github.com/recallproxy/recall/wire"
)

// encodeWithSJSON is Encode as it was written with sjson, one edit a
// member: the reference the one-pass Encode must match byte for byte
// (what goes upstream, and the exchange records rendered again, are
// compared as bytes).
func encodeWithSJSON(dst [][]byte, msgs []wire.Message) ([][]byte, error) {
	msgs = joinAssistant(msgs)
	for _, m := range msgs {
		var results, calls []wire.Part
		var parts [][]byte
		var text strings.Builder
		onlyText, refusal := true, ""
		for _, p := range m.Parts {
			switch p.Kind {
			case wire.Text:
				parts = append(parts, appendObj(nil, "type", "text", "text", p.Text))
				text.WriteString(p.Text)
			case wire.Image:
				part := []byte(`{"type":"image_url","image_url":{}}`)
				part, _ = sjson.SetBytes(part, "image_url.url", p.URL)
				parts = append(parts, part)
				onlyText = false
			case wire.Refusal:
				refusal += p.Text
			case wire.File:
				part, err := appendFile(nil, p)
				if err != nil {
					return nil, err
				}
				parts = append(parts, part)
				onlyText = false
			case wire.ToolCall:
				calls = append(calls, p)
			case wire.ToolResult:
				results = append(results, p)
			case wire.Opaque:
				if p.Origin == wire.ChatCompletions {
					parts = append(parts, p.Raw)
					onlyText = false
				}
			}
		}
		for _, r := range results {
			dst = append(dst, appendObj(nil, "role", RoleTool, "tool_call_id", r.CallID, "content", r.Text))
		}
		if len(parts) == 0 && len(calls) == 0 && refusal == "" {
			continue
		}
		role := m.Role
		if role == RoleTool {
			role = RoleUser
		}
		out := appendObj(nil, "role", role)
		switch {
		case len(parts) == 0 && role == RoleAssistant:
			out, _ = sjson.SetRawBytes(out, "content", []byte("null"))
		case len(parts) == 0:
			out, _ = sjson.SetBytes(out, "content", "")
		case onlyText && len(parts) == 1:
			out, _ = sjson.SetBytes(out, "content", text.String())
		default:
			out, _ = sjson.SetRawBytes(out, "content", append(append([]byte("["), bytes.Join(parts, []byte(","))...), ']'))
		}
		if refusal != "" {
			out, _ = sjson.SetBytes(out, "refusal", refusal)
		}
		if len(calls) > 0 {
			tcs := make([][]byte, len(calls))
			for i, c := range calls {
				tc := appendObj(nil, "id", c.CallID, "type", "function")
				args := c.Arguments
				if args == "" {
					args = "{}"
				}
				tc, _ = sjson.SetBytes(tc, "function", map[string]string{"name": c.Name, "arguments": args})
				tcs[i] = tc
			}
			out, _ = sjson.SetRawBytes(out, "tool_calls", append(append([]byte("["), bytes.Join(tcs, []byte(","))...), ']'))
		}
		dst = append(dst, out)
	}
	return dst, nil
}

// awkward are strings every escape rule meets: HTML characters,
// control characters (\b and \f among them), quotes and backslashes,
// non-ASCII, the line and paragraph separators, invalid UTF-8.
var awkward = []string{
	"", "plain text", "a <b> & c", "tab\there\nline\rreturn", "\b\f\x00\x1f\x7f", `quote " and \ backslash`,
	"café ☕ 日本", "sep\u2028par\u2029", "bad \xff\xfe utf-8", "<script>alert('x')</script>", `{"a":[1,2]}`,
}

// encodeCases are canonical messages of every shape Encode writes.
func encodeCases() [][]wire.Message {
	var cases [][]wire.Message
	for _, s := range awkward {
		cases = append(cases,
			[]wire.Message{{Role: RoleUser, Parts: []wire.Part{{Kind: wire.Text, Text: s}}}},
			[]wire.Message{{Role: RoleAssistant, Parts: []wire.Part{{Kind: wire.Text, Text: s}, {Kind: wire.Text, Text: s + "!"}}}},
			[]wire.Message{{Role: RoleUser, Parts: []wire.Part{{Kind: wire.Text, Text: s}, {Kind: wire.Image, URL: "https://x/" + s}}}},
			[]wire.Message{{Role: RoleAssistant, Parts: []wire.Part{{Kind: wire.Refusal, Text: s}}}},
			[]wire.Message{{Role: RoleAssistant, Parts: []wire.Part{{Kind: wire.Text, Text: s}, {Kind: wire.Refusal, Text: s}, {Kind: wire.Refusal, Text: "again"}}}},
			[]wire.Message{{Role: RoleAssistant, Parts: []wire.Part{
				{Kind: wire.ToolCall, CallID: "call_" + s, Name: "f" + s, Arguments: `{"q":"` + s + `"}`},
				{Kind: wire.ToolCall, CallID: "c2", Name: "g"}}}},
			[]wire.Message{{Role: RoleTool, Parts: []wire.Part{
				{Kind: wire.ToolResult, CallID: "c1", Text: s}, {Kind: wire.ToolResult, CallID: "c2", Text: "two"}}}},
			[]wire.Message{{Role: RoleTool, Parts: []wire.Part{{Kind: wire.ToolResult, CallID: "c1", Text: s}, {Kind: wire.Text, Text: s}}}},
			[]wire.Message{{Role: RoleSystem, Parts: []wire.Part{{Kind: wire.Text, Text: s}}}},
		)
	}
	cases = append(cases,
		[]wire.Message{{Role: RoleAssistant}},
		[]wire.Message{{Role: RoleUser, Parts: []wire.Part{{Kind: wire.Image, URL: "https://x/a.png"}}}},
		[]wire.Message{{Role: RoleAssistant, Parts: []wire.Part{{Kind: wire.ToolCall, CallID: "c1", Name: "f", Arguments: "{}"}}}},
		[]wire.Message{{Role: RoleUser, Parts: []wire.Part{{Kind: wire.Opaque, Origin: wire.ChatCompletions, Raw: []byte(`{"type":"input_audio","input_audio":{}}`)}}}},
		[]wire.Message{{Role: RoleUser, Parts: []wire.Part{{Kind: wire.Opaque, Origin: wire.Messages, Raw: []byte(`{"type":"x"}`)}}}},
		[]wire.Message{{Role: RoleUser, Parts: []wire.Part{{Kind: wire.Text, Text: "see"}, {Kind: wire.File, Name: "a.pdf", URL: "data:application/pdf;base64,AAAA"}}}},
		[]wire.Message{{Role: RoleUser, Parts: []wire.Part{{Kind: wire.File, URL: "https://x/a.pdf"}}}},
		// Responses items: a message, then its calls, one chat message.
		[]wire.Message{
			{Role: RoleUser, Parts: []wire.Part{{Kind: wire.Text, Text: "q"}}},
			{Role: RoleAssistant, Parts: []wire.Part{{Kind: wire.Text, Text: "let me look"}}},
			{Role: RoleAssistant, Parts: []wire.Part{{Kind: wire.ToolCall, CallID: "c1", Name: "f", Arguments: `{"a":1}`}}},
			{Role: RoleTool, Parts: []wire.Part{{Kind: wire.ToolResult, CallID: "c1", Text: "r"}}},
		},
	)
	return cases
}

// Encode writes what it wrote with sjson, byte for byte, and refuses
// what it refused.
func TestEncodeMatchesTheSJSONEncoding(t *testing.T) {
	for i, msgs := range encodeCases() {
		want, wantErr := encodeWithSJSON(nil, msgs)
		got, err := Codec{}.Encode(nil, msgs)
		if (err != nil) != (wantErr != nil) || err != nil && err.Error() != wantErr.Error() {
			t.Fatalf("case %d: got error %v, want %v", i, err, wantErr)
		}
		if !slices.EqualFunc(got, want, bytes.Equal) {
			t.Errorf("case %d: got\n%s\nwant\n%s", i, bytes.Join(got, []byte("\n")), bytes.Join(want, []byte("\n")))
		}
		for _, m := range got {
			if !json.Valid(m) {
				t.Errorf("case %d: %s is not JSON", i, m)
			}
		}
	}
}

func FuzzEncodeMatchesTheSJSONEncoding(f *testing.F) {
	for _, s := range awkward {
		f.Add(s, "f", `{"a":"`+s+`"}`)
	}
	f.Fuzz(func(t *testing.T, text, name, args string) {
		msgs := []wire.Message{
			{Role: RoleUser, Parts: []wire.Part{{Kind: wire.Text, Text: text}}},
			{Role: RoleAssistant, Parts: []wire.Part{{Kind: wire.Text, Text: text}, {Kind: wire.Refusal, Text: text},
				{Kind: wire.ToolCall, CallID: text, Name: name, Arguments: args}}},
			{Role: RoleTool, Parts: []wire.Part{{Kind: wire.ToolResult, CallID: text, Text: args}, {Kind: wire.Image, URL: text}}},
		}
		want, _ := encodeWithSJSON(nil, msgs)
		got, _ := Codec{}.Encode(nil, msgs)
		if !slices.EqualFunc(got, want, bytes.Equal) {
			t.Errorf("got\n%s\nwant\n%s", bytes.Join(got, []byte("\n")), bytes.Join(want, []byte("\n")))
		}
	})
}

// appendMarshaled is encoding/json's string, escapes and all.
func FuzzAppendMarshaled(f *testing.F) {
	for _, s := range awkward {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendMarshaled(nil, s); !bytes.Equal(got, want) {
			t.Errorf("appendMarshaled(%q): got %s, want %s", s, got, want)
		}
	})
}

// Encode writes a text message in one allocation.
func TestEncodeAllocations(t *testing.T) {
	msgs := []wire.Message{{Role: RoleUser, Parts: []wire.Part{{Kind: wire.Text, Text: "The trend holds. The trend holds."}}}}
	dst := make([][]byte, 0, 1)
	if n := testing.AllocsPerRun(100, func() { Codec{}.Encode(dst[:0], msgs) }); n > 1 {
		t.Errorf("Encode of a text message: got %.0f allocations, want 1", n)
	}
}
