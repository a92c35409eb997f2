// Package jsontest holds the JSON checks the protocol packages' tests
// share.
package jsontest

import (
	"encoding/json"
	"reflect"
	"testing"
)

// Same reports whether a and b are the same JSON value, whatever their
// key order, white space and escapes; it fails t for a or b that is
// not JSON.
func Same(t testing.TB, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}
