package history

import (
	"slices"
	"testing"
)

// MergeRestart supersedes the stored messages of the context the client
// restarted, from where it began, and keeps what came before; read from
// the head of that context when the loaded tail does not reach it.
func TestMergeRestart(t *testing.T) {
	u1, a1, u2, a2, u3, a3 := User("q1"), Asst("a1"), User("q2"), Asst("a2"), User("q3"), Asst("a3")
	r, u4 := User("restarted from the summary of q2 and q3"), User("q4")
	conv := stored(u1, a1, u2, a2, u3, a3) // the context began at q2 (seq 3)
	s := Session{From: 3, Before: Boundary{Seq: 2, Turn: 1}, Messages: 2}
	// head reads the context's first messages, from seq 3.
	head := func(n int) ([]Message, error) { return conv.Tail[2:min(2+n, len(conv.Tail))], nil }
	short := conv
	short.Tail, short.Complete = conv.Tail[4:], false // q3, a3: the read stopped inside the context
	for _, tc := range []struct {
		name      string
		snap      Snapshot
		in        []Message
		wantHist  []Message
		wantNew   []Message
		supersede *Boundary
	}{
		{"the restart", conv, []Message{r, a3, u4}, conv.Tail[:2], []Message{r, a3, u4}, &Boundary{Seq: 2, Turn: 1}},
		{"the restart, the tail inside the context", short, []Message{r, a3, u4}, nil, []Message{r, a3, u4}, &Boundary{Seq: 2, Turn: 1}},
		{"a resend of the context", conv, []Message{u2, a2, u3, a3, u4}, conv.Tail, []Message{u4}, nil},
		{"a resend of the context, the tail inside it", short, []Message{u2, a2, u3, a3, u4}, conv.Tail[2:], []Message{u4}, nil},
		{"a resend of part of the context", conv, []Message{u2, a2, u4}, conv.Tail[:4], []Message{u4}, &Boundary{Seq: 4, Turn: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := MergeRestart(tc.in, tc.snap, s, head)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(hashes(m.History), hashes(tc.wantHist)) || !slices.Equal(hashes(m.New), hashes(tc.wantNew)) {
				t.Errorf("got history %d and new %d messages, want %d and %d", len(m.History), len(m.New), len(tc.wantHist), len(tc.wantNew))
			}
			if (m.Supersede == nil) != (tc.supersede == nil) || m.Supersede != nil && *m.Supersede != *tc.supersede {
				t.Errorf("got supersede %+v, want %+v", m.Supersede, tc.supersede)
			}
		})
	}
}
