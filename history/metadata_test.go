package history

import "testing"

// A change's Metadata replaces the conversation's; a change without it
// (a chat commit) keeps it; an empty conversation can be created with
// metadata alone (POST /v1/conversations with no items).
func TestApplyMetadata(t *testing.T) {
	set := func(s string) *string { return &s }
	m, writes := Apply(Meta{}, Change{Metadata: set(`{"topic":"demo"}`), Now: 1}, nil)
	if len(writes) != 0 || m.NextSeq != 1 || m.Version != 1 || m.Incarnation == 0 {
		t.Fatalf("created with metadata alone: got next seq %d version %d incarnation %d, %d writes; want 1, 1, random, 0",
			m.NextSeq, m.Version, m.Incarnation, len(writes))
	}
	if m.Metadata != `{"topic":"demo"}` {
		t.Errorf("metadata: got %q, want the change's", m.Metadata)
	}
	m, _ = Apply(m, Change{Version: 1, Append: []Message{User("q")}, Now: 2}, nil)
	if m.Metadata != `{"topic":"demo"}` {
		t.Errorf("metadata after a commit without it: got %q, want it kept", m.Metadata)
	}
	m, _ = Apply(m, Change{Version: 2, Metadata: set(`{}`), Now: 3}, nil)
	if m.Metadata != `{}` {
		t.Errorf("metadata replaced: got %q, want {}", m.Metadata)
	}
}
