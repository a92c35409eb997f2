package canonjson

import (
	"encoding/json"
	"testing"
)

func TestAppendUnescapedMatchesEncodingJSON(t *testing.T) {
	tests := []struct {
		name string
		lit  string
	}{
		{"plain", `"hello"`},
		{"empty", `""`},
		{"simple escapes", `"a\"b\\c\/d\b\f\n\r\t"`},
		{"unicode escape", `"caf\u00e9 \u00E9"`},
		{"surrogate pair", `"\ud83d\ude00"`},
		{"lone high surrogate", `"\ud83dx"`},
		{"high surrogate then escape", `"\ud83d\u0041"`},
		{"lone low surrogate", `"\ude00"`},
		{"reversed pair", `"\ude00\ud83d"`},
		{"surrogate at end", `"a\udC00"`},
		{"nul", `"a\u0000b"`},
		{"raw utf-8", `"é😀"`},
		{"invalid utf-8, no escapes", "\"a\xffb\""},
		{"invalid utf-8 and an escape", "\"a\xff\\nb\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want string
			if err := json.Unmarshal([]byte(tt.lit), &want); err != nil {
				t.Fatal(err)
			}
			if got := string(AppendUnescaped(nil, tt.lit)); got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}
