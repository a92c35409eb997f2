package chat

import (
	"testing"

	"github.com/recallproxy/recall/wire"
)

// textHashCorpus holds texts whose JSON is written in each way Encode
// writes strings: plain, escaped, HTML characters, separators, other
// scripts, invalid UTF-8.
var textHashCorpus = []string{
	"", "hi", "The trend holds. The trend holds.", `"quoted" \ back`, "tab\tnew\nline\r",
	"<b>&amp;</b>", "line\u2028para\u2029", "café 日本語 😀", "\x00\x01\x1f\x7f", "bad \xff\xfe utf-8",
}

// TestTextHash: TextHash, and so CanonicalHash of a message of one text
// part, is the hash of the message's encoding, so a message hashed
// without being written hashes as its chat rendition does.
func TestTextHash(t *testing.T) {
	for _, role := range []string{wire.RoleUser, wire.RoleAssistant, wire.RoleSystem, "developer", ""} {
		for _, text := range textHashCorpus {
			want, ok := encodedHash(wire.Message{Role: role, Parts: []wire.Part{{Kind: wire.Text, Text: text}}})
			if !ok {
				t.Fatalf("CanonicalHash(%s %q) has no chat rendering", role, text)
			}
			if got := TextHash(role, text); got != want {
				t.Errorf("TextHash(%s, %q) = %x, want %x", role, text, got, want)
			}
			if got, _ := CanonicalHash(wire.Message{Role: role, Parts: []wire.Part{{Kind: wire.Text, Text: text}}}); got != want {
				t.Errorf("CanonicalHash(%s %q) = %x, want %x", role, text, got, want)
			}
		}
	}
}

// FuzzTextHash checks the same of any text.
func FuzzTextHash(f *testing.F) {
	for _, text := range textHashCorpus {
		f.Add(text, uint8(0))
	}
	roles := []string{wire.RoleUser, wire.RoleAssistant, wire.RoleSystem, "developer", ""}
	f.Fuzz(func(t *testing.T, text string, r uint8) {
		role := roles[int(r)%len(roles)]
		want, _ := encodedHash(wire.Message{Role: role, Parts: []wire.Part{{Kind: wire.Text, Text: text}}})
		if got := TextHash(role, text); got != want {
			t.Fatalf("TextHash(%s, %q) = %x, want %x", role, text, got, want)
		}
		if got, _ := CanonicalHash(wire.Message{Role: role, Parts: []wire.Part{{Kind: wire.Text, Text: text}}}); got != want {
			t.Fatalf("CanonicalHash(%s %q) = %x, want %x", role, text, got, want)
		}
	})
}
