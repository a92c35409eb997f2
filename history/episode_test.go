package history

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/recallproxy/recall/wire"
)

// A seal closes the open episode and opens the next; messages carry their
// episode; a summary's title names its episode and becomes the
// conversation's; only the newest MaxEpisodes are kept.
func TestEpisodes(t *testing.T) {
	m, w := Apply(Meta{}, Change{Append: []Message{User("q1"), Asst("a1")}, Now: 1}, nil)
	if m.Episode != 1 || m.EpisodeFrom != 1 || w[0].Episode != 1 {
		t.Fatalf("new conversation: got episode %d from %d, message episode %d; want 1, 1, 1", m.Episode, m.EpisodeFrom, w[0].Episode)
	}
	m, _ = Apply(m, Change{Seal: true, Now: 2}, nil) // an explicit end
	if m.Status != StatusEnded || m.Episode != 2 || m.EpisodeFrom != 3 || len(m.Episodes) != 1 ||
		m.Episodes[0] != (Episode{N: 1, From: 1, To: 2, SealedAt: 2}) {
		t.Fatalf("after end: got status %s, episode %d from %d, sealed %+v", m.Status, m.Episode, m.EpisodeFrom, m.Episodes)
	}
	m, _ = Apply(m, Change{Seal: true, Now: 3}, nil) // nothing in the open episode: nothing to seal
	if m.Episode != 2 || len(m.Episodes) != 1 {
		t.Fatalf("sealing an empty episode: got episode %d, sealed %d", m.Episode, len(m.Episodes))
	}
	m, w = Apply(m, Change{Append: []Message{User("q2")}, Now: 4}, nil)
	if m.Status != StatusActive || w[0].Episode != 2 {
		t.Fatalf("next message: got status %s, episode %d; want active, 2", m.Status, w[0].Episode)
	}
	m, _ = Apply(m, Change{Summary: &SummaryChange{Incarnation: m.Incarnation, Summary: Summary{Text: "s", Through: 2}, Episode: 1, Title: "Planning a trip to Lisbon"}}, nil)
	if m.Title != "Planning a trip to Lisbon" || m.Episodes[0].Title != m.Title {
		t.Fatalf("got title %q, episodes %+v", m.Title, m.Episodes)
	}
	for i := range MaxEpisodes + 3 {
		m, _ = Apply(m, Change{Seal: true, Append: []Message{User("more")}, Now: int64(10 + i)}, nil)
	}
	if len(m.Episodes) != MaxEpisodes || m.Episodes[len(m.Episodes)-1].N != m.Episode-1 {
		t.Errorf("got %d sealed episodes ending with %d, want %d ending with %d", len(m.Episodes), m.Episodes[len(m.Episodes)-1].N, MaxEpisodes, m.Episode-1)
	}
}

// The codec reads the records of version 1 (no episode: episode 1) and
// round-trips version 2.
func TestCodecVersions(t *testing.T) {
	in := Message{Role: wire.RoleAssistant, Turn: 7, Episode: 3, Tokens: 42, Hash: 99, Flags: Superseded,
		CreatedAt: time.Unix(0, 1234), Raw: []byte(`{"role":"assistant","content":"x"}`)}
	got, err := DecodeMessage(AppendMessage(nil, &in), 5)
	if err != nil {
		t.Fatal(err)
	}
	in.Seq = 5
	if got.Seq != in.Seq || got.Turn != in.Turn || got.Episode != in.Episode || got.Tokens != in.Tokens ||
		got.Hash != in.Hash || got.Flags != in.Flags || !got.CreatedAt.Equal(in.CreatedAt) || string(got.Raw) != string(in.Raw) {
		t.Fatalf("round trip: got %+v, want %+v", got, in)
	}
	// A version 1 record, as v0.1 wrote it.
	v1 := []byte{1, 0, roleCode(wire.RoleUser)}
	v1 = binary.AppendUvarint(v1, 4)   // turn
	v1 = binary.AppendUvarint(v1, 12)  // tokens
	v1 = binary.AppendVarint(v1, 5678) // created
	v1 = binary.LittleEndian.AppendUint64(v1, 7)
	v1 = append(v1, `{"role":"user","content":"old"}`...)
	old, err := DecodeMessage(v1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if old.Turn != 4 || old.Episode != 1 || old.Tokens != 12 || old.Hash != 7 || string(old.Raw) != `{"role":"user","content":"old"}` {
		t.Errorf("version 1: got %+v", old)
	}
	if _, err := DecodeMessage([]byte{3, 0, 0, 0}, 1); err == nil {
		t.Error("a record of an unknown version decoded, want an error")
	}
}

// A supersede of messages a summary covers (a client edited an early
// message) drops the summary; one after it keeps it.
func TestSupersedeInsideTheSummaryDropsIt(t *testing.T) {
	m, _ := Apply(Meta{}, Change{Append: []Message{User("q1"), Asst("a1"), User("q2"), Asst("a2"), User("q3"), Asst("a3")}, Now: 1}, nil)
	m, _ = Apply(m, Change{Summary: &SummaryChange{Incarnation: m.Incarnation, Summary: Summary{Text: "s", Through: 4, Turns: 2}}}, nil)
	kept, _ := Apply(m, Change{Version: m.Version, Supersede: &Boundary{Seq: 4, Turn: 2}, Append: []Message{User("q3'")}, Now: 2}, nil)
	if kept.Summary == nil {
		t.Error("a supersede after the summary dropped it")
	}
	edited, _ := Apply(m, Change{Version: m.Version, Supersede: &Boundary{Seq: 2, Turn: 1}, Append: []Message{User("q2'")}, Now: 2}, nil)
	if edited.Summary != nil {
		t.Errorf("a supersede inside the summary kept it: %+v", edited.Summary)
	}
}
