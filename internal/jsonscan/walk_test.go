package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// members walks b as an object with Object, skipping each value, and
// returns its members as name=value, what follows the object, and ok.
func members(b string) (got []string, rest string, ok bool) {
	s := Scanner{B: []byte(b)}
	ok = s.Object(func(name []byte) bool {
		start := s.I
		_, ok := s.Value(8)
		got = append(got, string(name)+"="+string(s.B[start:s.I]))
		return ok
	})
	return got, string(s.B[min(s.I, len(s.B)):]), ok
}

func TestObjectWalksEachMember(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string // name=value, in order
		rest     string   // what follows the object
	}{
		{"empty", `{}`, nil, ""},
		{"empty with space", " {\n\t} ", nil, " "},
		{"members in order", `{"b":1,"a":[true,{"x":null}],"c":"s"}`, []string{`b=1`, `a=[true,{"x":null}]`, `c="s"`}, ""},
		{"white space everywhere", " { \"a\" :\n1 , \"b\"\t:\r\"x\" } tail", []string{`a=1`, `b="x"`}, " tail"},
		{"a repeated name is walked twice", `{"a":1,"a":2}`, []string{`a=1`, `a=2`}, ""},
		{"an empty name", `{"":0}`, []string{`=0`}, ""},
		{"unicode in a name", `{"é✓":0}`, []string{`é✓=0`}, ""},
		{"stops after the object", `{"a":1}{"b":2}`, []string{`a=1`}, `{"b":2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rest, ok := members(tt.in)
			if !ok {
				t.Fatalf("got not ok, want members %q", tt.want)
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("got members %q, want %q", got, tt.want)
			}
			if rest != tt.rest {
				t.Errorf("got %q after the object, want %q", rest, tt.rest)
			}
		})
	}
}

func TestObjectRefuses(t *testing.T) {
	for _, in := range []string{
		``, ` `, `[]`, `"a"`, `null`, `{`, `{"a"`, `{"a":`, `{"a":1`, `{"a":1,`, `{"a":1,}`,
		`{,}`, `{"a" 1}`, `{"a":1 "b":2}`, `{"a":1;"b":2}`, `{a:1}`, `{'a':1}`, `{1:1}`,
		`{"a":1]`, `{"a":}`, `{"a":1,"b"}`, `{"a` + "\x01" + `":1}`, `{"` + "\xff" + `":1}`,
		// A name with an escape: a one-pass check cannot read it.
		`{"\u0061":1}`, `{"a\"b":1}`, `{"a":1,"b\\":2}`,
	} {
		if got, _, ok := members(in); ok {
			t.Errorf("%q: got ok with members %q, want not ok", in, got)
		}
	}
}

// TestObjectStopsWhereMemberDoes: the walk ends at the first member
// whose callback reports false, and reports false; a callback that
// does not consume its value fails the walk at the next separator.
func TestObjectStopsWhereMemberDoes(t *testing.T) {
	s := Scanner{B: []byte(`{"a":1,"stop":2,"c":3}`)}
	var seen []string
	if s.Object(func(name []byte) bool {
		seen = append(seen, string(name))
		_, ok := s.Value(1)
		return ok && string(name) != "stop"
	}) {
		t.Error("got ok, want false from the member that stopped")
	}
	if strings.Join(seen, ",") != "a,stop" {
		t.Errorf("got members %q walked, want a,stop", seen)
	}
	s = Scanner{B: []byte(`{"a":1,"b":2}`)}
	if s.Object(func([]byte) bool { return true }) {
		t.Error("a member left unconsumed: got ok, want false")
	}
}

// elements walks b as an array with Array, skipping each element, and
// returns them, the count Array reports, and ok.
func elements(b string) (got []string, n int, ok bool) {
	s := Scanner{B: []byte(b)}
	n, ok = s.Array(func(i int) bool {
		if i != len(got) {
			return false
		}
		start := s.I
		_, ok := s.Value(8)
		got = append(got, string(s.B[start:s.I]))
		return ok
	})
	return got, n, ok
}

func TestArrayWalksEachElement(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"empty", `[]`, nil},
		{"empty with space", " [ \n ]", nil},
		{"one", `[1]`, []string{`1`}},
		{"each kind", `["a",-1.5e3,true,false,null,{"k":[]},[[]]]`, []string{`"a"`, `-1.5e3`, `true`, `false`, `null`, `{"k":[]}`, `[[]]`}},
		{"white space everywhere", " [ 1 ,\n\"x\"\t, {} ] ", []string{`1`, `"x"`, `{}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, n, ok := elements(tt.in)
			if !ok {
				t.Fatalf("got not ok, want elements %q", tt.want)
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") || n != len(tt.want) {
				t.Errorf("got elements %q (n %d), want %q (n %d)", got, n, tt.want, len(tt.want))
			}
		})
	}
}

func TestArrayRefuses(t *testing.T) {
	for _, in := range []string{
		``, `{}`, `"a"`, `[`, `[1`, `[1,`, `[1,]`, `[,]`, `[,1]`, `[1 2]`, `[1;2]`, `[1}`, `[tru]`,
	} {
		if got, n, ok := elements(in); ok || n != 0 {
			t.Errorf("%q: got ok %v, n %d, elements %q, want not ok and n 0", in, ok, n, got)
		}
	}
	s := Scanner{B: []byte(`[1,2,3]`)}
	seen := 0
	if _, ok := s.Array(func(i int) bool {
		seen++
		_, ok := s.Value(0)
		return ok && i < 1
	}); ok || seen != 2 {
		t.Errorf("an element that stops the walk: got ok %v after %d elements, want false after 2", ok, seen)
	}
}

func TestPlain(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{`"user"`, "user", true},
		{`""`, "", true},
		{`"é✓"`, "é✓", true},
		{`"us\u0065r"`, "", false},
		{`"a\nb"`, "", false},
		{`null`, "", false},
		{` "user"`, "", false}, // white space is the walk's to skip
		{`"open`, "", false},
	}
	for _, tt := range tests {
		s := Scanner{B: []byte(tt.in)}
		got, ok := s.Plain()
		if ok != tt.ok || string(got) != tt.want {
			t.Errorf("Plain(%q): got %q, %v, want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// TestWalkDoesNotAllocate: a walk of nested objects and arrays, its
// closures and the values it skips cost no allocation.
func TestWalkDoesNotAllocate(t *testing.T) {
	b := []byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","content":"é \"q\""}],"x":{"y":[1,2.5,true,null]}}`)
	var roles, parts int
	allocs := testing.AllocsPerRun(100, func() {
		s := Scanner{B: b}
		ok := s.Object(func(name []byte) bool {
			if string(name) != "messages" {
				_, ok := s.Value(8)
				return ok
			}
			_, ok := s.Array(func(int) bool {
				return s.Object(func(name []byte) bool {
					switch string(name) {
					case "role":
						roles++
						_, ok := s.Plain()
						return ok
					case "content":
						if s.At('[') {
							n, ok := s.Array(func(int) bool { _, ok := s.Value(4); return ok })
							parts += n
							return ok
						}
					}
					_, ok := s.Value(4)
					return ok
				})
			})
			return ok
		})
		if !ok {
			t.Fatal("walk failed")
		}
	})
	if allocs != 0 {
		t.Errorf("got %v allocations a walk, want 0", allocs)
	}
	if roles == 0 || parts == 0 {
		t.Errorf("got %d roles and %d parts walked, want some of each", roles, parts)
	}
}

// FuzzWalk checks Value, Object and Array against encoding/json: Value
// accepts a document exactly when it is valid UTF-8 JSON nested no
// deeper than its bound, and a walk of a valid array or object sees the
// elements or members encoding/json decodes, in order.
func FuzzWalk(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `{"a":[1,{"b":null}],"c":"\u00e9"}`, `[1,"x",true,false,null,-0.5e+3]`,
		`{"\u0061":1}`, `{"a":1,"a":2}`, `[[[[[[[[[[]]]]]]]]]]`, `{"a":1,}`, `[1,]`, `"\ud800"`, "\"\xff\"",
		` { "a" : [ ] } `, `01`, `1.`, `-`, `tru`,
	} {
		f.Add([]byte(s))
	}
	const depth = 8
	f.Fuzz(func(t *testing.T, b []byte) {
		s := Scanner{B: b}
		kind, ok := s.Value(depth)
		s.Space()
		ok = ok && s.I == len(b)
		d, valid := nesting(b)
		want := valid && utf8.Valid(b) && d <= depth
		if ok != want {
			t.Fatalf("%q: Value got ok %v, want %v (encoding/json: valid %v, nesting %d)", b, ok, want, valid, d)
		}
		if !ok {
			return
		}
		switch kind {
		case KindArray:
			var want []json.RawMessage
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			s := Scanner{B: b}
			var got [][]byte
			n, ok := s.Array(func(int) bool {
				start := s.I
				_, ok := s.Value(depth)
				got = append(got, s.B[start:s.I])
				return ok
			})
			if !ok || n != len(want) || n != len(got) {
				t.Fatalf("%q: Array got %d elements, ok %v, want %d", b, n, ok, len(want))
			}
			for i := range got {
				if !bytes.Equal(got[i], bytes.TrimSpace(want[i])) {
					t.Fatalf("%q: element %d got %q, want %q", b, i, got[i], want[i])
				}
			}
		case KindObject:
			want := objectNames(t, b)
			s := Scanner{B: b}
			var got []string
			escaped := false
			ok := s.object(true, func(name []byte) bool {
				escaped = escaped || bytes.IndexByte(name, '\\') >= 0
				var dec string
				if err := json.Unmarshal(append(append([]byte{'"'}, name...), '"'), &dec); err != nil {
					t.Fatalf("%q: name %q does not decode: %v", b, name, err)
				}
				got = append(got, dec)
				_, ok := s.Value(depth)
				return ok
			})
			if !ok || strings.Join(got, "\x00") != strings.Join(want, "\x00") {
				t.Fatalf("%q: object got names %q, ok %v, want %q", b, got, ok, want)
			}
			s = Scanner{B: b}
			if plain := s.Object(func([]byte) bool { _, ok := s.Value(depth); return ok }); plain == escaped {
				t.Fatalf("%q: Object got ok %v with a name escaped: %v", b, plain, escaped)
			}
		}
	})
}

// nesting reports whether b is one valid JSON value for encoding/json,
// and if so how deep its arrays and objects nest.
func nesting(b []byte) (depth int, valid bool) {
	if !json.Valid(b) {
		return 0, false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	cur := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return depth, true
		}
		switch tok {
		case json.Delim('['), json.Delim('{'):
			cur++
			depth = max(depth, cur)
		case json.Delim(']'), json.Delim('}'):
			cur--
		}
	}
}

// objectNames returns the names of the object b's members, in order and
// decoded, as encoding/json reads them.
func objectNames(t *testing.T, b []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%q: not an object for encoding/json: %v %v", b, tok, err)
	}
	var names []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// TestKnown: Known reads the members it is given the names of, once
// each, skips the others, and fails on a name given twice.
func TestKnown(t *testing.T) {
	names := []string{"a", "b", "c"}
	var got []string
	s := Scanner{B: []byte(`{"x":[1,{"y":2}],"b":"B","a":"A","z":null}`)}
	seen, ok := s.Known(names, 2, func(i int) bool {
		v, ok := s.Plain()
		got = append(got, names[i]+"="+string(v))
		return ok
	})
	if !ok || seen != 3 || strings.Join(got, ",") != "b=B,a=A" || s.I != len(s.B) {
		t.Errorf("got seen %b ok %v read %q at %d, want 11 true b=B,a=A at the end", seen, ok, got, s.I)
	}
	for _, b := range []string{`{"a":"1","a":"2"}`, `{"x":[[1]]}`, `{"a":"1"`} {
		s := Scanner{B: []byte(b)}
		if _, ok := s.Known(names, 1, func(int) bool { _, ok := s.Plain(); return ok }); ok {
			t.Errorf("Known(%s) ok, want it refused", b)
		}
	}
}
