package history

import (
	"reflect"
	"strings"
	"testing"
)

// The report says which turns curation dropped, as seq ranges with the
// reason, and which tool results it cut, by how much.
func TestReportSaysWhatWasDroppedAndWhy(t *testing.T) {
	tests := []struct {
		name   string
		s      Strategy
		budget int
		cut    uint64 // the stored cut point
		want   []Dropped
	}{
		{"nothing dropped", Passthrough{}, 0, 0, nil},
		{"the turn cap", SlidingWindow{MaxTurns: 7}, 0, 0, []Dropped{{From: 1, To: 6, Reason: DroppedMaxTurns, Turns: 3}}},
		{"the budget", TokenBudget{}, 75, 0, []Dropped{{From: 1, To: 6, Reason: DroppedBudget, Turns: 3}}},
		{"behind the cut point", Passthrough{}, 0, 5, []Dropped{{From: 1, To: 4, Reason: DroppedBudget, Turns: 2}}},
		{"the cut point, then the turn cap", SlidingWindow{MaxTurns: 6}, 0, 3,
			[]Dropped{{From: 1, To: 2, Reason: DroppedBudget, Turns: 1}, {From: 3, To: 8, Reason: DroppedMaxTurns, Turns: 3}}},
		{"the turn cap, then the budget", Composed{SlidingWindow{MaxTurns: 8}, TokenBudget{}}, 55, 0,
			[]Dropped{{From: 1, To: 4, Reason: DroppedMaxTurns, Turns: 2}, {From: 5, To: 10, Reason: DroppedBudget, Turns: 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var msgs []Message
			for range 10 {
				msgs = append(msgs, Tok(User("q"), 5), Tok(Asst("a"), 5))
			}
			msgs = Number(msgs, 1)
			w := NewWindow(msgs[:18], msgs[18:], tt.cut, 9)
			w.Budget = tt.budget
			if _, err := Curate(w, tt.s); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(w.Report.Dropped, tt.want) {
				t.Errorf("got dropped %+v, want %+v", w.Report.Dropped, tt.want)
			}
			n := 0
			for _, d := range w.Report.Dropped {
				n += d.Turns
			}
			if n != w.Report.DroppedTurns {
				t.Errorf("the ranges hold %d turns, the count says %d", n, w.Report.DroppedTurns)
			}
		})
	}
}

func TestReportSaysWhichToolResultsWereCut(t *testing.T) {
	w, _ := toolWindow(3, strings.Repeat("é", 1600))
	if err := (ToolResultTruncator{MaxChars: 100}).Curate(w); err != nil {
		t.Fatal(err)
	}
	want := []CutResult{{Seq: 3, CharsBefore: 1600, CharsAfter: 100, MaxChars: 100}, {Seq: 7, CharsBefore: 1600, CharsAfter: 100, MaxChars: 100}}
	if !reflect.DeepEqual(w.Report.Cut, want) {
		t.Errorf("got cut %+v, want %+v", w.Report.Cut, want)
	}
	if w.Report.TruncatedToolResults != len(want) {
		t.Errorf("got count %d, want %d", w.Report.TruncatedToolResults, len(want))
	}
}

// Curating a window that drops and cuts nothing allocates nothing for
// the report's details.
func TestReportDetailsCostNothingWhenNothingIsDropped(t *testing.T) {
	var msgs []Message
	for range 10 {
		msgs = append(msgs, Tok(User("q"), 5), Tok(Asst("a"), 5))
	}
	msgs = Number(msgs, 1)
	s := Composed{SlidingWindow{MaxTurns: 20}, TokenBudget{}, ToolResultTruncator{MaxChars: 100}}
	var w Window
	allocs := testing.AllocsPerRun(100, func() {
		w = Window{Turns: w.Turns[:0], Budget: 1000}
		for i := 0; i < len(msgs); i += 2 {
			w.Turns = append(w.Turns, Turn{Messages: msgs[i : i+2 : i+2], Tokens: 10})
		}
		if err := s.Curate(&w); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 || w.Report.Dropped != nil || w.Report.Cut != nil {
		t.Errorf("got %.0f allocations, dropped %v, cut %v; want 0, nil, nil", allocs, w.Report.Dropped, w.Report.Cut)
	}
}
