package history_test

import (
	"strings"
	"testing"

	"github.com/recallproxy/recall/history"
)

func TestValidID(t *testing.T) {
	tests := []struct {
		name, id string
		want     bool
	}{
		{"letters and digits", "Conv42", true},
		{"every punctuation allowed", "a.b_c:d@e-f", true},
		{"128 characters", strings.Repeat("a", 128), true},
		{"dots inside", "a..b", true},
		{"three dots", "...", true},
		{"leading dot", ".hidden", true},
		{"empty", "", false},
		{"129 characters", strings.Repeat("a", 129), false},
		{"dot", ".", false},
		{"dot-dot", "..", false},
		{"slash", "a/b", false},
		{"space", "a b", false},
		{"percent", "%2e%2e", false},
		{"non-ascii", "café", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := history.ValidID(tt.id); got != tt.want {
				t.Errorf("ValidID(%q): got %v, want %v", tt.id, got, tt.want)
			}
		})
	}
}

func TestValidIDDoesNotAllocate(t *testing.T) {
	ids := []string{"conversation-1", "..", ".", strings.Repeat("x", 128), "bad id"}
	allocs := testing.AllocsPerRun(100, func() {
		for _, id := range ids {
			history.ValidID(id)
		}
	})
	if allocs != 0 {
		t.Errorf("got %v allocations per run, want 0", allocs)
	}
}
