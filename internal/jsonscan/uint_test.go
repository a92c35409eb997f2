package jsonscan

import "testing"

// TestSmallUint: a whole number of one to nine digits is read and
// consumed; a sign, a leading zero, a fraction, an exponent, a tenth
// digit or no digit at all is not one.
func TestSmallUint(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		want     int
		ok       bool
		rest     string // what follows the number, when ok
	}{
		{"zero", `0`, 0, true, ""},
		{"one digit then a comma", `7,`, 7, true, ","},
		{"nine digits then a brace", `123456789}`, 123456789, true, "}"},
		{"ten digits", `1234567890`, 0, false, ""},
		{"leading zero", `05`, 0, false, ""},
		{"fraction", `1.5`, 0, false, ""},
		{"exponent", `1e3`, 0, false, ""},
		{"capital exponent", `1E3`, 0, false, ""},
		{"sign", `-1`, 0, false, ""},
		{"a string", `"1"`, 0, false, ""},
		{"nothing", ``, 0, false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := Scanner{B: []byte(tt.in)}
			n, ok := s.SmallUint()
			if n != tt.want || ok != tt.ok {
				t.Fatalf("SmallUint(%s): got %d, %v; want %d, %v", tt.in, n, ok, tt.want, tt.ok)
			}
			if ok && string(s.B[s.I:]) != tt.rest {
				t.Errorf("SmallUint(%s): left %q, want %q", tt.in, s.B[s.I:], tt.rest)
			}
		})
	}
}
