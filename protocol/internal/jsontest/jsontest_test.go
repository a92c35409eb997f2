package jsontest

import "testing"

func TestSame(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{`{"a":1,"b":[true,null]}`, ` { "b" : [ true , null ] , "a" : 1.0 } `, true},
		{`"\u00e9"`, `"é"`, true},
		{`{"a":1}`, `{"a":2}`, false},
		{`[1,2]`, `[2,1]`, false},
		{`{"a":1}`, `{"a":1,"b":null}`, false},
	}
	for _, tt := range tests {
		if got := Same(t, []byte(tt.a), []byte(tt.b)); got != tt.want {
			t.Errorf("Same(%s, %s): got %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
