package history

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/recallproxy/recall/wire"
)

// turnSizes returns the message count of each of w's turns.
func turnSizes(w *Window) []int {
	out := make([]int, len(w.Turns))
	for i := range w.Turns {
		out[i] = len(w.Turns[i].Messages)
	}
	return out
}

// turnSeqs returns the first Seq of each of w's turns.
func turnSeqs(w *Window) []uint64 {
	out := make([]uint64, len(w.Turns))
	for i := range w.Turns {
		out[i] = w.Turns[i].Seq()
	}
	return out
}

func TestNewWindow(t *testing.T) {
	tests := []struct {
		name        string
		hist, fresh []Message
		cut         uint64
		stored      int
		wantSizes   []int
		wantSeqs    []uint64
		wantStored  int
		wantDropped int
	}{
		{
			name:  "splits at user messages",
			hist:  []Message{User("q1"), Asst("a1"), User("q2"), Calls("", "A"), Tool("A", "r"), Asst("a2")},
			fresh: []Message{User("q3")}, stored: 2,
			wantSizes: []int{2, 4, 1}, wantSeqs: []uint64{1, 3, 7}, wantStored: 3,
		},
		{
			name:  "a tool result continues the last turn",
			hist:  []Message{User("q1"), Asst("a1"), User("q2"), Calls("", "A")},
			fresh: []Message{Tool("A", "r")}, stored: 2,
			wantSizes: []int{2, 3}, wantSeqs: []uint64{1, 3}, wantStored: 2,
		},
		{
			name:  "history starting without a user message",
			hist:  []Message{Asst("hello"), User("q1"), Asst("a1")},
			fresh: []Message{User("q2")}, stored: 2,
			wantSizes: []int{1, 2, 1}, wantSeqs: []uint64{1, 2, 4}, wantStored: 3,
		},
		{
			name:      "no history",
			fresh:     []Message{User("q1")},
			wantSizes: []int{1}, wantSeqs: []uint64{1}, wantStored: 1,
		},
		{
			name:      "regeneration: no new messages",
			hist:      []Message{User("q1"), Asst("a1"), User("q2")},
			stored:    2,
			wantSizes: []int{2, 1}, wantSeqs: []uint64{1, 3}, wantStored: 2,
		},
		{
			name:  "turns before the cut stay out",
			hist:  []Message{User("q1"), Asst("a1"), User("q2"), Asst("a2"), User("q3"), Asst("a3")},
			fresh: []Message{User("q4")}, cut: 5, stored: 3,
			wantSizes: []int{2, 1}, wantSeqs: []uint64{5, 7}, wantStored: 4, wantDropped: 2,
		},
		{
			name:  "a cut past everything keeps the current turn",
			hist:  []Message{User("q1"), Asst("a1")},
			fresh: []Message{User("q2")}, cut: 99, stored: 1,
			wantSizes: []int{1}, wantSeqs: []uint64{3}, wantStored: 2, wantDropped: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			all := Number(append(slices.Clone(tt.hist), tt.fresh...), 1)
			hist, fresh := all[:len(tt.hist)], all[len(tt.hist):]
			w := NewWindow(hist, fresh, tt.cut, tt.stored)
			if got := turnSizes(w); !slices.Equal(got, tt.wantSizes) {
				t.Errorf("got turn sizes %v, want %v", got, tt.wantSizes)
			}
			if got := turnSeqs(w); !slices.Equal(got, tt.wantSeqs) {
				t.Errorf("got turn seqs %v, want %v", got, tt.wantSeqs)
			}
			if w.Report.StoredTurns != tt.wantStored {
				t.Errorf("got StoredTurns %d, want %d", w.Report.StoredTurns, tt.wantStored)
			}
			if w.Report.DroppedTurns != tt.wantDropped {
				t.Errorf("got DroppedTurns %d, want %d", w.Report.DroppedTurns, tt.wantDropped)
			}
			if w.Cut != tt.cut {
				t.Errorf("got Cut %d, want %d", w.Cut, tt.cut)
			}
			want := 0
			for _, m := range all {
				if m.Seq >= w.Turns[0].Seq() {
					want += m.Tokens
				}
			}
			if got := w.Tokens(); got != want {
				t.Errorf("got %d tokens, want %d", got, want)
			}
		})
	}
}

func TestNewWindowTurnsDoNotShareCapacity(t *testing.T) {
	all := Number([]Message{User("q1"), Asst("a1"), User("q2")}, 1)
	w := NewWindow(all[:2], all[2:], 0, 1)
	w.Turns[0].Messages = append(w.Turns[0].Messages, Asst("intruder"))
	if got := w.Turns[1].Messages[0].Role; got != wire.RoleUser {
		t.Errorf("appending to turn 0 overwrote turn 1: got role %q, want %q", got, wire.RoleUser)
	}
}

// window builds a window of n turns of tokens tokens each (one user and one
// assistant message per turn), the last being the current one.
func window(n, tokens int) *Window {
	var msgs []Message
	for range n {
		msgs = append(msgs, Tok(User("q"), tokens/2), Tok(Asst("a"), tokens-tokens/2))
	}
	msgs = Number(msgs, 1)
	return NewWindow(msgs[:len(msgs)-2], msgs[len(msgs)-2:], 0, n-1)
}

func TestDrop(t *testing.T) {
	tests := []struct {
		name      string
		turns, n  int
		wantTurns int
		wantCut   uint64
	}{
		{"none", 5, 0, 5, 0},
		{"negative", 5, -1, 5, 0},
		{"two oldest", 5, 2, 3, 5},
		{"all but the current turn", 5, 4, 1, 9},
		{"more than there are", 5, 10, 1, 9},
		{"only the current turn", 1, 1, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := window(tt.turns, 10)
			w.Drop(tt.n, DroppedBudget)
			if len(w.Turns) != tt.wantTurns {
				t.Errorf("got %d turns, want %d", len(w.Turns), tt.wantTurns)
			}
			if w.Cut != tt.wantCut {
				t.Errorf("got Cut %d, want %d", w.Cut, tt.wantCut)
			}
			dropped := tt.turns - tt.wantTurns
			if w.Report.DroppedTurns != dropped || w.Report.SavedTokens != 10*dropped {
				t.Errorf("got DroppedTurns %d SavedTokens %d, want %d and %d", w.Report.DroppedTurns, w.Report.SavedTokens, dropped, 10*dropped)
			}
			if last := w.Turns[len(w.Turns)-1].Seq(); last != uint64(2*tt.turns-1) {
				t.Errorf("got current turn at seq %d, want %d", last, 2*tt.turns-1)
			}
		})
	}
}

func TestCurateBudget(t *testing.T) {
	tests := []struct {
		name       string
		turns      int
		budget     int
		fixed      int
		strategy   Strategy
		wantTurns  int
		wantTokens int
		wantErr    error
	}{
		{"no budget", 10, 0, 5, nil, 10, 105, nil},
		{"fits", 10, 105, 5, Passthrough{}, 10, 105, nil},
		{"invariant drops just enough without a strategy", 10, 100, 5, nil, 9, 95, nil},
		{"invariant after a strategy that ignores the budget", 10, 64, 0, SlidingWindow{MaxTurns: 8}, 6, 60, nil},
		{"fixed part counts", 10, 50, 25, Passthrough{}, 2, 45, nil},
		{"current turn alone over the budget, window unknown: sent alone", 3, 14, 5, nil, 1, 15, nil},
		{"current turn exactly fits", 3, 15, 5, nil, 1, 15, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := window(tt.turns, 10)
			w.Budget, w.Fixed = tt.budget, tt.fixed
			out, err := Curate(w, tt.strategy)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("got error %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if w.Report.IncludedTurns != tt.wantTurns {
				t.Errorf("got %d turns, want %d", w.Report.IncludedTurns, tt.wantTurns)
			}
			if w.Report.Tokens != tt.wantTokens {
				t.Errorf("got %d tokens, want %d", w.Report.Tokens, tt.wantTokens)
			}
			if len(out) != 2*tt.wantTurns {
				t.Errorf("got %d messages, want %d", len(out), 2*tt.wantTurns)
			}
			if over := tt.budget > 0 && w.Report.Tokens > tt.budget; over != w.Report.OverBudget {
				t.Errorf("got %d tokens for a budget of %d, OverBudget %v", w.Report.Tokens, tt.budget, w.Report.OverBudget)
			}
			if got, want := out[len(out)-1].Seq, uint64(2*tt.turns); got != want {
				t.Errorf("got last seq %d, want %d (the current turn)", got, want)
			}
		})
	}
}

func TestCurateRepairs(t *testing.T) {
	msgs := Number([]Message{User("q1"), Calls("", "A"), User("q2"), Calls("", "B", "C"), Tool("B", "r")}, 1)
	w := NewWindow(msgs[:4], msgs[4:], 0, 2)
	out, err := Curate(w, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := describe(out), "u u a[B] t:B"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if w.Report.RepairedCalls != 2 {
		t.Errorf("got RepairedCalls %d, want 2", w.Report.RepairedCalls)
	}
}

func BenchmarkCurate(b *testing.B) {
	msgs := Number(answeredWindow(50), 1) // 50 turns, 7 messages each, with tool calls
	hist, fresh := msgs[:len(msgs)-7], msgs[len(msgs)-7:]
	s := Composed{ToolResultTruncator{MaxChars: 2000}, TokenBudget{LowWater: 0.7}}
	total := 0
	for _, m := range msgs {
		total += m.Tokens
	}
	for _, bc := range []struct {
		name   string
		budget int
	}{{"fits", total + 100}, {"over budget", total / 2}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w := NewWindow(hist, fresh, 0, 49)
				w.Budget, w.Fixed = bc.budget, 100
				if _, err := Curate(w, s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A current turn over the budget is sent alone when the model's window
// takes it; over the window it is a ContextLengthError in OpenAI's words.
func TestCurrentTurnOverTheWindow(t *testing.T) {
	tests := []struct {
		name               string
		window, completion int
		wantErr            bool
		wantMessage        string
	}{
		{name: "fits the window", window: 40},
		{name: "fits only without the completion", window: 20, completion: 10, wantErr: true,
			wantMessage: "This model's maximum context length is 20 tokens. However, you requested 25 tokens (15 in the messages, 10 in the completion). Please reduce the length of the messages or completion."},
		{name: "over the window", window: 12, wantErr: true,
			wantMessage: "This model's maximum context length is 12 tokens. However, your messages resulted in 15 tokens. Please reduce the length of the messages."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := window(3, 10) // three turns of 10 tokens
			w.Budget, w.Fixed, w.Window, w.Completion = 14, 5, tt.window, tt.completion
			out, err := Curate(w, nil)
			if !tt.wantErr {
				if err != nil || !w.Report.OverBudget || len(out) != 2 {
					t.Fatalf("got %d messages, OverBudget %v, error %v; want the current turn alone", len(out), w.Report.OverBudget, err)
				}
				return
			}
			var cle *ContextLengthError
			if !errors.As(err, &cle) || !errors.Is(err, ErrContextLength) {
				t.Fatalf("got %v, want a ContextLengthError", err)
			}
			if got := cle.Message(); got != tt.wantMessage {
				t.Errorf("got message %q, want %q", got, tt.wantMessage)
			}
		})
	}
}

// Curate sends the window's own array while its turns still lie in it
// back to back (whole turns dropped from the front at most), capped so
// that a caller's append cannot write into it; a strategy that gives a
// turn a copy of its own gets a new slice with that copy in it.
func TestCurateSendsTheWindowsArrayInPlace(t *testing.T) {
	// Each case: a strategy, whether the turns it leaves are in place,
	// and how many it leaves of toolWindow's 4.
	cases := map[string]struct {
		s         Strategy
		inPlace   bool
		wantTurns int
	}{
		"nothing dropped":                 {nil, true, 4},
		"oldest turns dropped":            {SlidingWindow{MaxTurns: 2}, true, 2},
		"a result cut into a turn's copy": {ToolResultTruncator{MaxChars: 10}, false, 4},
	}
	for name, tt := range cases {
		t.Run(name, func(t *testing.T) {
			w, msgs := toolWindow(4, strings.Repeat("x", 200))
			out, err := Curate(w, tt.s)
			if err != nil {
				t.Fatal(err)
			}
			if len(out) != 4*tt.wantTurns {
				t.Fatalf("got %d messages, want %d", len(out), 4*tt.wantTurns)
			}
			if cap(out) != len(out) {
				t.Errorf("got cap %d, want %d (an append must copy)", cap(out), len(out))
			}
			if got := &out[0] == &w.all[len(w.all)-len(out)]; got != tt.inPlace {
				t.Errorf("got in place %v, want %v", got, tt.inPlace)
			}
			sent := msgs[len(msgs)-len(out):]
			for i := range out {
				if out[i].Seq != sent[i].Seq {
					t.Fatalf("message %d: got seq %d, want %d", i, out[i].Seq, sent[i].Seq)
				}
				cut := tt.s != nil && !tt.inPlace && out[i].Role == wire.RoleTool && i < len(out)-4
				if same := string(out[i].Raw) == string(sent[i].Raw); same == cut {
					t.Errorf("message %d: got %s, cut %v", i, out[i].Raw, cut)
				}
			}
		})
	}
}

// Release empties the window's arrays (the pool keeps no message's bytes
// alive) and gives them back: a later window lays its messages and its
// turns out in them.
func TestReleasedWindowArrayIsReused(t *testing.T) {
	_, msgs := toolWindow(3, "result")
	hist, fresh := msgs[:len(msgs)-4], msgs[len(msgs)-4:]
	reused, reusedTurns := false, false
	// sync.Pool may drop what it is given (it does at random under the
	// race detector): a few tries.
	for range 100 {
		w := NewWindow(hist, fresh, 0, 2)
		all, turns := w.all[:cap(w.all)], w.Turns[:cap(w.Turns)]
		w.Release()
		for i := range all {
			if all[i].Raw != nil || all[i].Seq != 0 {
				t.Fatalf("after Release: message %d still holds %s (seq %d)", i, all[i].Raw, all[i].Seq)
			}
		}
		for i := range turns {
			if turns[i].Messages != nil || turns[i].Tokens != 0 {
				t.Fatalf("after Release: turn %d still holds %d messages (%d tokens)", i, len(turns[i].Messages), turns[i].Tokens)
			}
		}
		next := NewWindow(hist, fresh, 0, 2)
		out, err := Curate(next, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != len(msgs) {
			t.Fatalf("got %d messages, want %d", len(out), len(msgs))
		}
		for i := range out {
			if out[i].Seq != msgs[i].Seq || string(out[i].Raw) != string(msgs[i].Raw) {
				t.Fatalf("message %d: got seq %d %s, want seq %d %s", i, out[i].Seq, out[i].Raw, msgs[i].Seq, msgs[i].Raw)
			}
		}
		reused = reused || &next.all[0] == &all[0]
		reusedTurns = reusedTurns || &next.Turns[0] == &turns[0]
		next.Release()
		if reused && reusedTurns {
			break
		}
	}
	if !reused {
		t.Error("no window reused a released array in 100 tries")
	}
	if !reusedTurns {
		t.Error("no window reused a released array of turns in 100 tries")
	}
}

// A second Release gives nothing back again: two later windows never
// share an array.
func TestWindowReleasedTwiceGivesBackOnce(t *testing.T) {
	_, msgs := toolWindow(2, "result")
	w := NewWindow(msgs[:4], msgs[4:], 0, 1)
	w.Release()
	w.Release()
	a, b := NewWindow(msgs[:4], msgs[4:], 0, 1), NewWindow(msgs[:4], msgs[4:], 0, 1)
	if &a.all[0] == &b.all[0] {
		t.Error("two windows share one array")
	}
}
