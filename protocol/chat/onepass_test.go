package chat

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// escapeFree stops at the first byte appendEscaped writes otherwise than
// as it is, wherever it falls in the eight-byte steps, and nowhere else.
func TestEscapeFreeStopsAtEachEscapedByte(t *testing.T) {
	escaped := func(c byte, marshal bool) bool {
		return c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || marshal && (c == '<' || c == '>' || c == '&')
	}
	for _, marshal := range []bool{false, true} {
		for c := range 256 {
			for n := 1; n <= 20; n++ {
				for at := range n {
					b := bytes.Repeat([]byte{'a'}, n)
					b[at] = byte(c)
					// Bytes after it that a borrow could flag.
					if at+1 < n {
						b[at+1] = 0x01 + byte(c)&0x7f
					}
					for from := 0; from <= n; from++ {
						want := n
						for i := from; i < n; i++ {
							if escaped(b[i], marshal) {
								want = i
								break
							}
						}
						if got := escapeFree(string(b), from, marshal); got != want {
							t.Fatalf("escapeFree(%q, %d, %v) = %d, want %d", b, from, marshal, got, want)
						}
					}
				}
			}
		}
	}
}

// appendQuoted and appendMarshaled escape what encoding/json escapes in
// prose long enough for the eight-byte steps, each escaped byte at every
// offset of a step.
func TestAppendEscapedLongProse(t *testing.T) {
	for _, c := range []string{"\n", `"`, `\`, "<", ">", "&", "\x00", "\x1f", "é", "\u2028", "\xff"} {
		for at := range 17 {
			s := strings.Repeat("x", at) + c + strings.Repeat("the quick brown fox ", 3) + c
			want, _ := json.Marshal(s)
			if got := appendMarshaled(nil, s); !bytes.Equal(got, want) {
				t.Errorf("appendMarshaled(%q): got %s, want %s", s, got, want)
			}
			var back string
			if err := json.Unmarshal(appendQuoted(nil, s), &back); err != nil || back != strings.ToValidUTF8(s, "\ufffd") {
				t.Errorf("appendQuoted(%q) reads back as %q (%v)", s, back, err)
			}
		}
	}
}

// Decode and Text read a message of string members in one pass
// (decodeStrings) exactly as they read it through gjson.
func FuzzDecodeStringsAsTree(f *testing.F) {
	for _, s := range []string{
		`{"role":"user","content":"hello"}`,
		`{"role":"assistant","content":"a\nb \"q\" \u00e9","refusal":"no"}`,
		`{"role":"tool","tool_call_id":"c1","content":"result"}`,
		`{"role":"tool","content":"result"}`,
		`{"role":"function","name":"f","content":"x"}`,
		`{"role":"assistant","content":"x","tool_calls":"y"}`,
		`{"role":"user","content":"first","content":"second"}`,
		`{"role":"user"}`,
		`{"role":"nobody","content":"x"}`,
		`{"content":"x","role":"system","name":"n"}`,
		` {"role":"developer","content":""} `,
		`{"role":"user","content":"bad \xff"}`,
		`{"role":"user","content":[{"type":"text","text":"x"}]}`,
		`{"role":"user","content":"x"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, gotErr := Codec{}.Decode(raw)
		want, wantErr := decodeTree(raw)
		if (gotErr == nil) != (wantErr == nil) || got.Role != want.Role || len(got.Parts) != len(want.Parts) ||
			len(got.Parts) > 0 && !reflect.DeepEqual(got.Parts, want.Parts) {
			t.Errorf("Decode(%s): got %+v, %v; the tree reads %+v, %v", raw, got, gotErr, want, wantErr)
		}
		if got, want := (Codec{}).Text(nil, raw), textTree(nil, raw); !bytes.Equal(got, want) {
			t.Errorf("Text(%s): got %q; the tree reads %q", raw, got, want)
		}
	})
}

// A stored text message decodes without copying its text: one
// allocation, the parts.
func TestDecodeTextMessageInOnePass(t *testing.T) {
	raw := []byte(`{"role":"user","content":"` + strings.Repeat("the quick brown fox jumps over the lazy dog ", 28) + `"}`)
	m, err := Codec{}.Decode(raw)
	if err != nil || m.Role != RoleUser || len(m.Parts) != 1 || len(m.Parts[0].Text) != 28*44 {
		t.Fatalf("Decode: %+v, %v", m, err)
	}
	if n := testing.AllocsPerRun(100, func() { Codec{}.Decode(raw) }); n > 1 {
		t.Errorf("Decode of a text message: %.0f allocations, want 1", n)
	}
}
