package prototest

import (
	"testing"

	"github.com/recallproxy/recall/wire"
)

// RolesOwnNothing checks that the roles c reads from each of items (Role
// and Decode's) are not views of the item's bytes: the history cache
// keeps a message's role for as long as it keeps the message and
// compares it on every request, and roles of one length are compared
// byte by byte unless both are the same string (wire's constant), a
// memory load a message. Each item is overwritten after it is read; a
// role that points into it changes.
func RolesOwnNothing(t *testing.T, c wire.Codec, items []string) {
	t.Helper()
	for _, item := range items {
		want := c.Role([]byte(item))
		if want == "" {
			t.Fatalf("%s: no role", item)
		}
		raw := []byte(item)
		role := c.Role(raw)
		m, err := c.Decode(raw)
		if err != nil {
			t.Fatalf("%s: %v", item, err)
		}
		for i := range raw {
			raw[i] = 'x'
		}
		if role != want || m.Role != want {
			t.Errorf("%s: Role %q, Decode's role %q after the item was overwritten; want %q", item, role, m.Role, want)
		}
	}
}
