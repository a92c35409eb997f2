package chat

import (
	"testing"
)

func TestAppendQuoted(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "hi", `"hi"`},
		{"escapes", "a\"b\\c\n\r\t", `"a\"b\\c\n\r\t"`},
		{"control", "\x00\x1f", `"\u0000\u001f"`},
		{"html kept", "<&>", `"<&>"`},
		{"line separators", "\u2028\u2029", `"\u2028\u2029"`},
		{"invalid utf-8", "a\xffb", `"a\ufffdb"`},
		{"multibyte", "é😀", `"é😀"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(appendQuoted(nil, tt.in)); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}
