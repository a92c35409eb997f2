package history

import (
	"slices"
	"testing"

	"github.com/recallproxy/recall/wire"
)

// internal returns m flagged as Recall's own (a history tool's call or
// result).
func internal(m Message) Message {
	m.Flags |= Internal
	return m
}

// toolResult is an internal tool result.
func toolResult(text string) Message {
	m := internal(User(text))
	m.Role = wire.RoleTool
	return m
}

// TestMergeSkipsInternal: Recall's history-tool rounds, stored between
// what the client saw, are invisible to the comparison with a client's
// resent history: a full-resend client is neither doubled nor taken for
// an edit, and an edit keeps the rounds of the kept prefix.
func TestMergeSkipsInternal(t *testing.T) {
	u1, a1, u2, a2, u3 := User("q1"), Asst("a1"), User("q2"), Asst("a2"), User("q3")
	call, result := internal(Asst("calls search_conversations")), toolResult("search result")
	u2e := User("q2, edited")
	conv := stored(u1, call, result, a1, u2, call, result, a2)
	tests := []struct {
		name      string
		mode      Mode
		in        []Message
		wantHist  []Message
		wantNew   []Message
		supersede *Boundary
	}{
		{"auto, delta client", Auto, []Message{u3}, conv.Tail, []Message{u3}, nil},
		{"auto, full resend", Auto, []Message{u1, a1, u2, a2, u3}, conv.Tail, []Message{u3}, nil},
		{"auto, full resend of known messages", Auto, []Message{u1, a1, u2, a2}, conv.Tail, []Message{}, nil},
		{"auto, edit keeps the prefix's rounds", Auto, []Message{u1, a1, u2e}, conv.Tail[:4], []Message{u2e}, &Boundary{Seq: 4, Turn: 1}},
		{"sync, extends storage", Sync, []Message{u1, a1, u2, a2, u3}, conv.Tail, []Message{u3}, nil},
		{"sync, diverges after a round", Sync, []Message{u1, u3}, conv.Tail[:3], []Message{u3}, &Boundary{Seq: 3, Turn: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Merge(tt.mode, tt.in, conv, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkMerged(t, got, tt.wantHist, tt.wantNew, tt.supersede)
		})
	}
}

// TestMergeHeadSkipsInternal: a resend compared with the head reads
// enough of it to hold as many messages the client saw as it sent.
func TestMergeHeadSkipsInternal(t *testing.T) {
	call, result := internal(Asst("call")), toolResult("result")
	all := Number([]Message{User("q1"), call, result, call, result, Asst("a1"), User("q2"), Asst("a2")}, 1)
	snap := stored(all...)
	snap.Tail, snap.Complete = all[6:], false
	head := func(n int) ([]Message, error) { return all[:min(n, len(all))], nil }
	in := []Message{all[0], all[5], User("q2, edited")}
	got, err := Merge(Auto, in, snap, head)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.History) != 6 || !slices.Equal(hashes(got.New), hashes(in[2:])) || got.Supersede == nil || got.Supersede.Seq != 6 {
		t.Errorf("got history %v new %v supersede %+v, want the first 6 kept and the edit new", describe(got.History), describe(got.New), got.Supersede)
	}
}
