package canonjson

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/tidwall/gjson"
)

func TestMembersSortedLastKeyWins(t *testing.T) {
	tests := []struct {
		name, obj, want string
	}{
		{"sorted", `{"b":1,"a":2,"c":3}`, `a=2 b=1 c=3`},
		{"last of a repeated key", `{"a":1,"b":2,"a":3}`, `a=3 b=2`},
		{"escaped key decodes", `{"\u0061":1,"b":2}`, `a=1 b=2`},
		{"escaped and plain spelling are one key", `{"a":1,"\u0061":2}`, `a=2`},
		{"lone surrogate as encoding/json", `{"\ud83d\u0041":1}`, "\ufffdA=1"},
		{"empty", `{}`, ``},
		{"more than the stack", `{"p":1,"o":1,"n":1,"m":1,"l":1,"k":1,"j":1,"i":1,"h":1,"g":1,"f":1,"e":1,"d":1,"c":1,"b":1,"a":1,"q":1}`,
			`a=1 b=1 c=1 d=1 e=1 f=1 g=1 h=1 i=1 j=1 k=1 l=1 m=1 n=1 o=1 p=1 q=1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stack [16]Member
			var got []string
			for _, m := range Members(stack[:0], gjson.Parse(tt.obj)) {
				got = append(got, m.Key+"="+m.Val.Raw)
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("got %q, want %q", g, tt.want)
			}
			// encoding/json agrees on which keys there are.
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tt.obj), &m); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(m) {
				t.Errorf("got %d members, encoding/json has %d", len(got), len(m))
			}
		})
	}
}

// object keeps every member, as the protocols' plain objects do.
func object(buf []byte, v gjson.Result) []byte {
	var stack [16]Member
	mark := len(buf)
	buf = append(buf, Object)
	for _, m := range Members(stack[:0], v) {
		at := len(buf)
		buf = AppendString(buf, m.Key)
		if out := AppendPruned(buf, m.Val, object); len(out) > len(buf) {
			buf = out
		} else {
			buf = buf[:at]
		}
	}
	if len(buf) == mark+1 {
		return buf[:mark]
	}
	return append(buf, End)
}

func TestAppendPruned(t *testing.T) {
	tests := []struct {
		name, a, b string
		same       bool
	}{
		{"null is nothing", `null`, `""`, true},
		{"empty containers are nothing", `{"a":[],"b":{},"c":null,"d":""}`, `null`, true},
		{"empty members dropped", `{"a":1,"b":null}`, `{"a":1}`, true},
		{"number spelling", `[1.0, 1e0]`, `[1, 1]`, true},
		{"string escapes", `"caf\u00e9"`, `"café"`, true},
		{"key order", `{"a":1,"b":2}`, `{"b":2,"a":1}`, true},
		{"an empty element keeps its place", `[null, 1]`, `[1]`, false},
		{"elements in order", `[1, 2]`, `[2, 1]`, false},
		{"true and false", `true`, `false`, false},
		{"string and number", `"1"`, `1`, false},
		{"concatenation", `["ab", "c"]`, `["a", "bc"]`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := AppendPruned(nil, gjson.Parse(tt.a), object)
			b := AppendPruned(nil, gjson.Parse(tt.b), object)
			if got := bytes.Equal(a, b); got != tt.same {
				t.Errorf("same form for %s and %s: got %v, want %v (%q, %q)", tt.a, tt.b, got, tt.same, a, b)
			}
		})
	}
}

func TestSum(t *testing.T) {
	v := gjson.Parse(`{"b":[1,null,"x"],"a":true}`)
	want := xxhash.Sum64(AppendPruned(nil, v, object))
	appendTo := func(buf []byte, v gjson.Result) []byte { return AppendPruned(buf, v, object) }
	if got := Sum(v, appendTo); got != want {
		t.Errorf("got %#x, want %#x", got, want)
	}
	Sum(v, appendTo) // warm the pool
	if got := testing.AllocsPerRun(100, func() { Sum(v, appendTo) }); got != 0 {
		t.Errorf("got %v allocations, want 0", got)
	}
}

// AppendStringValue takes gjson's parsed string where it can, and must
// write what AppendLiteral writes from the literal.
func TestAppendStringValueMatchesLiteral(t *testing.T) {
	for _, lit := range []string{`""`, `"plain"`, `"caf\u00e9"`, `"a\nb"`, `"\ud83d\u0041"`, `"\ud83d"`, `"é😀"`, "\"a\xffb\"", "\"a\xff\\nb\""} {
		v := gjson.Parse(`[` + lit + `]`).Array()[0]
		if got, want := AppendStringValue(nil, v), AppendLiteral(nil, lit); !bytes.Equal(got, want) {
			t.Errorf("%s: got %q, want %q", lit, got, want)
		}
	}
}
