package respstate

import (
	"strings"
	"testing"

	"github.com/recallproxy/recall/history"
)

// A fork's id names the conversation it was made under, and nothing
// else reads as a fork's.
func TestForkRoot(t *testing.T) {
	tests := []struct {
		name, id, want string
	}{
		{"a fork", "named:fork-0123456789abcdef", "named"},
		{"a fork of a name holding the separator", "a:fork-b:fork-0123456789abcdef", "a:fork-b"},
		{"a name", "named", "named"},
		{"short suffix", "named:fork-0123", "named:fork-0123"},
		{"upper-case hex", "named:fork-0123456789ABCDEF", "named:fork-0123456789ABCDEF"},
		{"not hex", "named:fork-0123456789abcdeg", "named:fork-0123456789abcdeg"},
		{"no name", ":fork-0123456789abcdef", ":fork-0123456789abcdef"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ForkRoot(tt.id); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	id := forkID("named")
	if ForkRoot(id) != "named" || !history.ValidID(id) {
		t.Errorf("forkID(named) = %q: root %q", id, ForkRoot(id))
	}
	if long := forkID(strings.Repeat("n", 120)); !strings.HasPrefix(long, "conv_") {
		t.Errorf("forkID of a 120-character name = %q, want a conv_ id", long)
	}
}
