package body

import (
	"testing"

	"github.com/tidwall/gjson"
)

// stringObjects are objects StringMembers reads, and documents it leaves
// to gjson.
var stringObjects = []string{
	`{"role":"user","content":"Hello"}`,
	` { "role" : "user" , "content" : "a \"quoted\" caf\u00e9 \ud83d\ude00 \ud800 line\nbreak" } `,
	`{"role":"user","content":"first","content":"second"}`,
	`{"type":"function_call","call_id":"c1","name":"f","arguments":"{\"a\":1}"}`,
	`{}`,
	`{"role":"user","content":[{"type":"text","text":"hi"}]}`,
	`{"role":"user","content":null}`,
	`{"r\u006fle":"user","content":"hi"}`,
	`{"role":"user","content":"unterminated}`,
	`{"role":"user"} trailing`,
	`[1,2]`,
	`"text"`,
	``,
	"{\"role\":\"user\",\"content\":\"bad \xff utf-8\"}",
}

// TestStringMembers: an object of string members reads as gjson reads
// each member (the first of duplicates); any other document is refused.
func TestStringMembers(t *testing.T) {
	for i, raw := range stringObjects {
		ms, ok := StringMembers(nil, []byte(raw))
		if want := i < 5; ok != want {
			t.Errorf("StringMembers(%s) ok = %v, want %v", raw, ok, want)
		}
		if ok {
			checkMembers(t, raw, ms)
		}
	}
}

// FuzzStringMembers checks the same of any bytes StringMembers reads.
func FuzzStringMembers(f *testing.F) {
	for _, raw := range stringObjects {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if ms, ok := StringMembers(nil, raw); ok {
			if !gjson.ValidBytes(raw) {
				t.Fatalf("StringMembers(%q) read invalid JSON", raw)
			}
			checkMembers(t, string(raw), ms)
		}
	})
}

// checkMembers checks that ms are raw's members as gjson reads them.
func checkMembers(t *testing.T, raw string, ms []Member) {
	t.Helper()
	n := 0
	gjson.Parse(raw).ForEach(func(k, v gjson.Result) bool {
		if n >= len(ms) || ms[n].Name != k.Str || v.Type != gjson.String || ms[n].Value != v.Str {
			t.Fatalf("StringMembers(%q) = %q, want member %d %s:%s", raw, ms, n, k.Raw, v.Raw)
		}
		n++
		return true
	})
	if n != len(ms) {
		t.Fatalf("StringMembers(%q) = %q, want %d members", raw, ms, n)
	}
	for _, m := range ms {
		if got, _ := Lookup(ms, m.Name); got != gjson.Get(raw, gjson.Escape(m.Name)).Str {
			t.Fatalf("Lookup(%q) = %q, want %q as gjson finds it", m.Name, got, gjson.Get(raw, gjson.Escape(m.Name)).Str)
		}
	}
}
