package history

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/recallproxy/recall/wire"
)

// stored returns a complete snapshot of msgs, numbered from 1.
func stored(msgs ...Message) Snapshot {
	msgs = Number(slices.Clone(msgs), 1)
	snap := Snapshot{Tail: msgs, Complete: true, Meta: Meta{NextSeq: uint64(len(msgs)) + 1, Messages: len(msgs)}}
	if len(msgs) > 0 {
		snap.Meta.FirstHash = msgs[0].Hash
		snap.Meta.LastTurn = msgs[len(msgs)-1].Turn
	}
	return snap
}

func hashes(msgs []Message) []uint64 {
	out := make([]uint64, len(msgs))
	for i := range msgs {
		out[i] = msgs[i].Hash
	}
	return out
}

func TestMerge(t *testing.T) {
	u1, a1, u2, a2, u3 := User("q1"), Asst("a1"), User("q2"), Asst("a2"), User("q3")
	u2e := User("q2, edited")
	conv := stored(u1, a1, u2, a2)
	tests := []struct {
		name      string
		mode      Mode
		snap      Snapshot
		in        []Message
		wantHist  []Message
		wantNew   []Message
		supersede *Boundary
	}{
		{"auto, delta client", Auto, conv, []Message{u3}, conv.Tail, []Message{u3}, nil},
		{"auto, full resend", Auto, conv, []Message{u1, a1, u2, a2, u3}, conv.Tail, []Message{u3}, nil},
		{"auto, partial overlap", Auto, conv, []Message{u2, a2, u3}, conv.Tail, []Message{u3}, nil},
		{"auto, only known messages", Auto, conv, []Message{u2, a2}, conv.Tail, []Message{}, nil},
		{"auto, edit", Auto, conv, []Message{u1, a1, u2e}, conv.Tail[:2], []Message{u2e}, &Boundary{Seq: 2, Turn: 1}},
		{"auto, regeneration", Auto, conv, []Message{u1, a1, u2}, conv.Tail[:3], []Message{}, &Boundary{Seq: 3, Turn: 2}},
		{"auto, single message is never an edit", Auto, conv, []Message{u1}, conv.Tail, []Message{u1}, nil},
		{"auto, resend not from the first message is new", Auto, conv, []Message{a1, u2e}, conv.Tail, []Message{a1, u2e}, nil},
		{"auto, new conversation", Auto, stored(), []Message{u1, a1, u2}, nil, []Message{u1, a1, u2}, nil},
		// An agent restarted with the same opening message, or its title
		// call, shares no assistant message: nothing is superseded.
		{"auto, restart with the same opening message", Auto, conv, []Message{u1, u3}, conv.Tail, []Message{u1, u3}, nil},
		{"auto, title call", Auto, conv, []Message{u1, User("generate a title for this conversation")}, conv.Tail, []Message{u1, User("generate a title for this conversation")}, nil},
		// The stored opening message was a preamble (a user message
		// follows it): a restart's identical one is kept once.
		{"auto, restart sharing only user messages", Auto, stored(u1, u2, a2), []Message{u1, u2, a1, u3}, stored(u1, u2, a2).Tail, []Message{u2, a1, u3}, nil},
		{"auto, a restarted agent's preamble is kept once", Auto, stored(u1, u2, a2), []Message{u1, u3}, stored(u1, u2, a2).Tail, []Message{u3}, nil},
		// Codex's tool round in a later process: its preamble, then what
		// the stored end already holds (the turn's prompt and call).
		{"auto, a restarted agent's tool round after its preamble", Auto, stored(u1, u2, a2, u3, a1), []Message{u1, u3, a1, Tool("c1", "r1")}, stored(u1, u2, a2, u3, a1).Tail, []Message{Tool("c1", "r1")}, nil},
		// Kept once too when a summary covers the stored one or the cut
		// passed it: the caller sends it (Merged.Preamble), never stores
		// it again.
		{"auto, a preamble a summary covers is kept once", Auto, summarized(stored(u1, u2, a2), 1), []Message{u1, u3}, stored(u1, u2, a2).Tail, []Message{u3}, nil},
		{"auto, a preamble behind the cut is kept once", Auto, cutAt(stored(u1, u2, a2), 2), []Message{u1, u3}, stored(u1, u2, a2).Tail, []Message{u3}, nil},
		{"auto, opening assistant message is no evidence", Auto, stored(a1, u1, a2), []Message{a1, u2, a2}, stored(a1, u1, a2).Tail, []Message{a1, u2, a2}, nil},
		{"auto, restarted agent resends its own turns", Auto, stored(u1, a1, u2, a2, u1, u3, a1), []Message{u1, u3, a1, u2e}, stored(u1, a1, u2, a2, u1, u3, a1).Tail, []Message{u2e}, nil},
		{"auto, edit after the restart's first turn", Auto, stored(u1, a1, u2, a2, u1, u3, a1), []Message{u1, a1, u2e}, stored(u1, a1, u2, a2, u1, u3, a1).Tail[:2], []Message{u2e}, &Boundary{Seq: 2, Turn: 1}},
		{"sync, extends storage", Sync, conv, []Message{u1, a1, u2, a2, u3}, conv.Tail, []Message{u3}, nil},
		{"sync, diverges", Sync, conv, []Message{u1, a1, u3}, conv.Tail[:2], []Message{u3}, &Boundary{Seq: 2, Turn: 1}},
		{"sync, single message replaces everything", Sync, conv, []Message{u3}, conv.Tail[:0], []Message{u3}, &Boundary{}},
		{"sync, shorter resend", Sync, conv, []Message{u1, a1}, conv.Tail[:2], []Message{}, &Boundary{Seq: 2, Turn: 1}},
		{"append", Append, conv, []Message{u2, a2, u3}, conv.Tail, []Message{u2, a2, u3}, nil},
		{"off", Off, conv, []Message{u2, a2, u3}, conv.Tail, []Message{u2, a2, u3}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			head := func(int) ([]Message, error) { t.Fatal("head called for a complete snapshot"); return nil, nil }
			got, err := Merge(tt.mode, tt.in, tt.snap, head)
			if err != nil {
				t.Fatal(err)
			}
			checkMerged(t, got, tt.wantHist, tt.wantNew, tt.supersede)
		})
	}
}

func TestMergeHead(t *testing.T) {
	all := Number([]Message{User("q1"), Asst("a1"), User("q2"), Asst("a2"), User("q3"), Asst("a3")}, 1)
	full := stored(all...)
	snap := full
	snap.Tail, snap.Complete = all[4:], false // a tail load that stopped early
	edit := []Message{all[0], all[1], User("q2, edited")}

	var asked []int
	head := func(n int) ([]Message, error) {
		asked = append(asked, n)
		return all[:min(n, len(all))], nil
	}
	got, err := Merge(Auto, edit, snap, head)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(asked, []int{3}) {
		t.Errorf("got head calls %v, want [3]", asked)
	}
	want, _ := Merge(Auto, edit, full, nil)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v (as from a complete snapshot)", got, want)
	}
	if got.Supersede == nil || got.Supersede.Seq != 2 {
		t.Errorf("got supersede %+v, want after seq 2", got.Supersede)
	}

	// An agent restart has no assistant message to share: the head is
	// read for its first two messages only, to see whether the opening
	// message was a preamble (it was answered: it was not).
	asked = nil
	restart := []Message{all[0], User("new question")}
	if got, err = Merge(Auto, restart, snap, head); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(asked, []int{2}) || got.Supersede != nil || len(got.New) != 2 {
		t.Errorf("restart: got head calls %v, %d new, supersede %+v; want [2], 2, nil", asked, len(got.New), got.Supersede)
	}
	// A resend that shares only the opening message with the head reads
	// it, finds no evidence, and keeps the loaded tail as history.
	asked = nil
	diverged := []Message{all[0], User("other"), Asst("other answer"), User("q")}
	if got, err = Merge(Auto, diverged, snap, head); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(asked, []int{4}) || got.Supersede != nil || len(got.New) != 4 || !slices.Equal(hashes(got.History), hashes(snap.Tail)) {
		t.Errorf("no evidence: got head calls %v, %d new, history %v, supersede %+v; want [4], 4, the tail, nil",
			asked, len(got.New), describe(got.History), got.Supersede)
	}

	boom := errors.New("boom")
	if _, err := Merge(Sync, edit, snap, func(int) ([]Message, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("got error %v, want %v", err, boom)
	}
}

func TestParseMode(t *testing.T) {
	for _, m := range []Mode{Auto, Append, Sync, Off} {
		if got, err := ParseMode(string(m)); got != m || err != nil {
			t.Errorf("ParseMode(%q): got %q %v, want %q", m, got, err, m)
		}
	}
	if _, err := ParseMode("AUTO"); err == nil {
		t.Error("ParseMode(AUTO): got no error, want one")
	}
}

// A Codex day: every process opens with the same environment preamble.
// Once a summary covers the stored one (and the tail is read from where
// the summary ends), a later process's copy is still recognised: it is
// not stored again, and the merge hands the stored one back so that the
// context carries it once.
func TestMergePreambleSummarized(t *testing.T) {
	env, q1, a1, q2, a2, q3 := User("<environment_context>"), User("q1"), Asst("a1"), User("q2"), Asst("a2"), User("q3")
	all := stored(env, q1, a1, q2, a2)
	snap := summarized(all, 3) // env, q1 and a1 folded into the summary
	snap.Tail, snap.Complete = all.Tail[3:], false
	head := func(n int) ([]Message, error) { return all.Tail[:min(n, len(all.Tail))], nil }
	for _, tt := range []struct {
		name    string
		in      []Message
		wantNew []Message
	}{
		{"a later process", []Message{env, q3}, []Message{q3}},
		{"its tool round", []Message{env, q2, a2, Tool("c1", "r1")}, []Message{Tool("c1", "r1")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Merge(Auto, tt.in, snap, head)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(hashes(got.New), hashes(tt.wantNew)) {
				t.Errorf("got new %v, want %v (the preamble is stored already)", describe(got.New), describe(tt.wantNew))
			}
			if got.Preamble == nil || got.Preamble.Seq != 1 || got.Preamble.Hash != env.Hash {
				t.Errorf("got preamble %+v, want the stored one (seq 1), for the caller to send", got.Preamble)
			}
		})
	}
}

// summarized is snap with a summary through seq.
func summarized(snap Snapshot, through uint64) Snapshot {
	snap.Meta.Summary = &Summary{Text: "s", Through: through, Turns: 1}
	return snap
}

// cutAt is snap with its cache-stable cut at seq.
func cutAt(snap Snapshot, seq uint64) Snapshot {
	snap.Meta.Cut = seq
	return snap
}

// seqOf makes test messages whose hashes are hs.
func seqOf(hs []uint64) []Message {
	out := make([]Message, len(hs))
	for i, h := range hs {
		out[i] = Message{Hash: h, Role: wire.RoleUser}
	}
	return out
}

// bruteOverlap is the longest k with in[:k] == tail[len(tail)-k:].
func bruteOverlap(in, tail []uint64) int {
	for k := min(len(in), len(tail)); k > 0; k-- {
		if slices.Equal(in[:k], tail[len(tail)-k:]) {
			return k
		}
	}
	return 0
}

func TestOverlapMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	random := func() []uint64 {
		s := make([]uint64, r.IntN(12))
		for i := range s {
			s[i] = uint64(r.IntN(3)) // a small alphabet makes repeats likely
		}
		return s
	}
	for range 20000 {
		in, tail := random(), random()
		if got, want := overlap(seqOf(in), seqOf(tail)), bruteOverlap(in, tail); got != want {
			t.Fatalf("overlap(%v, %v): got %d, want %d", in, tail, got, want)
		}
	}
}

func FuzzMerge(f *testing.F) {
	f.Add(uint8(0), []byte{1, 2, 3, 4}, []byte{3, 4, 5}, uint8(4))
	f.Add(uint8(0), []byte{1, 2, 3, 4}, []byte{1, 2, 7}, uint8(2))
	f.Add(uint8(1), []byte{1, 2, 1, 2}, []byte{1, 2, 1}, uint8(3))
	f.Add(uint8(2), []byte{1, 2, 3}, []byte{1, 9}, uint8(0))
	f.Add(uint8(3), []byte{}, []byte{1}, uint8(0))
	f.Add(uint8(0), []byte{1, 10, 2, 11}, []byte{1, 3}, uint8(2))       // a restart: only the opening message shared
	f.Add(uint8(0), []byte{1, 2, 11, 3}, []byte{1, 2, 12, 4}, uint8(0)) // only user messages shared
	modes := []Mode{Auto, Sync, Append, Off}
	f.Fuzz(func(t *testing.T, mode uint8, st, inb []byte, tailLen uint8) {
		if len(st) > 64 || len(inb) > 64 {
			return
		}
		toMsgs := func(b []byte) []Message {
			out := make([]Message, len(b))
			for i, c := range b {
				out[i] = Message{Hash: uint64(c % 8), Role: []string{wire.RoleUser, wire.RoleAssistant}[c/8%2]}
			}
			return out
		}
		m := modes[int(mode)%len(modes)]
		full := stored(toMsgs(st)...)
		in := toMsgs(inb)

		// A tail load as a Store does it: at least len(in) messages.
		snap := full
		if n := max(len(in), int(tailLen)); n < len(full.Tail) {
			snap.Tail, snap.Complete = full.Tail[len(full.Tail)-n:], false
		}
		head := func(n int) ([]Message, error) { return full.Tail[:min(n, len(full.Tail))], nil }

		got, err := Merge(m, in, snap, head)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.New) > len(in) || !slices.Equal(hashes(got.New), hashes(in[len(in)-len(got.New):])) {
			t.Fatalf("got new %v, want a suffix of %v", hashes(got.New), hashes(in))
		}
		sent := append(hashes(got.History), hashes(got.New)...)
		tailWant := in
		if got.Preamble != nil && (len(in) == 0 || got.Preamble.Hash != in[0].Hash || got.Preamble.Seq != full.Tail[0].Seq) {
			t.Fatalf("got preamble %+v, want none or the stored first message, which in opens with", got.Preamble)
		}
		if pre, _ := RepeatedPreamble(in, snap, head); m == Auto && pre != nil {
			// A restarted agent's preamble is the stored one, first.
			if snap.Complete && (len(got.History) == 0 || got.History[0].Hash != in[0].Hash) {
				t.Fatalf("a repeated preamble: got history %v, want it to open with %d", hashes(got.History), in[0].Hash)
			}
			tailWant = in[1:]
		}
		if len(sent) < len(tailWant) || !slices.Equal(sent[len(sent)-len(tailWant):], hashes(tailWant)) {
			t.Fatalf("got history+new %v, want it to end with %v", sent, hashes(tailWant))
		}
		if m == Sync && !slices.Equal(sent, hashes(in)) {
			t.Fatalf("sync: got history+new %v, want %v", sent, hashes(in))
		}
		if b := got.Supersede; b != nil {
			if len(got.History) > 0 && b.Seq != got.History[len(got.History)-1].Seq || len(got.History) == 0 && b.Seq != 0 {
				t.Fatalf("got supersede after %d, want after the last kept message", b.Seq)
			}
			if !slices.Equal(hashes(got.History), hashes(full.Tail[:len(got.History)])) {
				t.Fatalf("got kept history %v, want a prefix of storage %v", hashes(got.History), hashes(full.Tail))
			}
			if m == Auto && (len(got.History) < 2 || !hasAssistant(got.History[1:])) {
				t.Fatalf("auto superseded after %v, want evidence: a stored assistant message after the first", describe(got.History))
			}
		}
		want, err := Merge(m, in, full, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(hashes(got.History), hashes(want.History)) && got.Supersede != nil ||
			!slices.Equal(hashes(got.New), hashes(want.New)) || !reflect.DeepEqual(got.Supersede, want.Supersede) {
			t.Fatalf("tail snapshot: got %v %v %+v, complete snapshot: %v %v %+v",
				hashes(got.History), hashes(got.New), got.Supersede, hashes(want.History), hashes(want.New), want.Supersede)
		}
	})
}

func BenchmarkMergeFullResend(b *testing.B) {
	var msgs []Message
	for i := range 50 {
		msgs = append(msgs, User("question "+string(rune('a'+i%26))), Asst("answer"))
	}
	snap := stored(msgs...)
	in := append(slices.Clone(snap.Tail), User("new question"))
	in = in[len(in)-100:] // a client resending its last 100 messages
	b.ReportAllocs()
	for b.Loop() {
		m, _ := Merge(Auto, in, snap, nil)
		if len(m.New) != 1 {
			b.Fatalf("got %d new, want 1", len(m.New))
		}
	}
}

// checkMerged fails t unless Merge's result holds wantHist as its
// history, wantNew as what is new and supersede as its boundary.
func checkMerged(t *testing.T, got Merged, wantHist, wantNew []Message, supersede *Boundary) {
	t.Helper()
	if !slices.Equal(hashes(got.History), hashes(wantHist)) {
		t.Errorf("got history %v, want %v", describe(got.History), describe(wantHist))
	}
	if !slices.Equal(hashes(got.New), hashes(wantNew)) {
		t.Errorf("got new %v, want %v", describe(got.New), describe(wantNew))
	}
	if !reflect.DeepEqual(got.Supersede, supersede) {
		t.Errorf("got supersede %+v, want %+v", got.Supersede, supersede)
	}
}
