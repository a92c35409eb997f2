package respstate

import (
	"strings"
	"testing"
)

func TestCompactionRefRoundTrip(t *testing.T) {
	for _, r := range []CompactionRef{
		{Conversation: "c1", Incarnation: 1},
		{Conversation: "conv_0123456789abcdef01234567", Incarnation: ^uint64(0), Through: 42},
		{Conversation: "__", Incarnation: 0x9e3779b97f4a7c15, Through: 7}, // base64url of it holds '_'
	} {
		s := r.Content()
		got, ok := ParseCompaction(s)
		if !ok || got != r {
			t.Errorf("ParseCompaction(%q): got %+v, %v; want %+v", s, got, ok, r)
		}
		if strings.Contains(s, r.Conversation) && len(r.Conversation) > 2 {
			t.Errorf("%q holds the conversation id as it is, want it encoded", s)
		}
	}
}

func TestCompactionRefRefusesOthers(t *testing.T) {
	good := CompactionRef{Conversation: "c1", Incarnation: 10, Through: 3}.Content()
	for _, s := range []string{
		"", "gAAAAABpM0Yj-opaque=", "recall_cmp_", "recall_cmp_YzE_a", good + "_1", good + "x",
		strings.Replace(good, "_a_", "_A_", 1),  // upper-case hex
		strings.Replace(good, "_a_", "_0a_", 1), // a leading zero
		"recall_cmp_YzE=_a_3",                   // padding
		"recall_cmp_" + strings.Repeat("Y", 600) + "_a_3",
	} {
		if r, ok := ParseCompaction(s); ok {
			t.Errorf("ParseCompaction(%q): got %+v, want it refused", s, r)
		}
	}
}
