package history

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/wire"
)

func TestStrategiesAlone(t *testing.T) {
	tests := []struct {
		name      string
		s         Strategy
		turns     int
		budget    int
		wantTurns int
	}{
		{"passthrough", Passthrough{}, 10, 0, 10},
		{"sliding window under the cap", SlidingWindow{MaxTurns: 10}, 10, 0, 10},
		{"sliding window over the cap", SlidingWindow{MaxTurns: 4}, 10, 0, 4},
		{"sliding window steps to its low-water mark", SlidingWindow{MaxTurns: 8, LowWater: 0.5}, 9, 0, 4},
		{"sliding window low-water keeps the current turn", SlidingWindow{MaxTurns: 1, LowWater: 0.1}, 3, 0, 1},
		{"sliding window without a cap", SlidingWindow{}, 10, 0, 10},
		{"token budget fits", TokenBudget{LowWater: 0.5}, 10, 100, 10},
		{"token budget drops just enough", TokenBudget{}, 10, 95, 9},
		{"token budget steps to its low-water mark", TokenBudget{LowWater: 0.5}, 10, 95, 4},
		{"token budget with an out-of-range low-water mark", TokenBudget{LowWater: 3}, 10, 95, 9},
		{"token budget low-water out of reach drops just enough", TokenBudget{LowWater: 0.05}, 10, 95, 9},
		{"token budget without a budget", TokenBudget{LowWater: 0.5}, 10, 0, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := window(tt.turns, 10)
			w.Budget = tt.budget
			if err := tt.s.Curate(w); err != nil {
				t.Fatal(err)
			}
			if len(w.Turns) != tt.wantTurns {
				t.Errorf("got %d turns, want %d", len(w.Turns), tt.wantTurns)
			}
			wantCut := uint64(0)
			if tt.wantTurns < tt.turns {
				wantCut = uint64(2*(tt.turns-tt.wantTurns) + 1)
			}
			if w.Cut != wantCut {
				t.Errorf("got Cut %d, want %d", w.Cut, wantCut)
			}
		})
	}
}

// toolWindow builds a window of turns, each asking one tool call whose
// result is long, with a 10-tokens-per-message count.
func toolWindow(turns int, result string) (*Window, []Message) {
	var msgs []Message
	for i := range turns {
		id := "c" + string(rune('a'+i))
		msgs = append(msgs, Tok(User("q"), 10), Tok(Calls("", id), 10), Tok(Tool(id, result), 400), Tok(Asst("a"), 10))
	}
	msgs = Number(msgs, 1)
	w := NewWindow(msgs[:len(msgs)-4], msgs[len(msgs)-4:], 0, turns-1)
	return w, msgs
}

func TestToolResultTruncator(t *testing.T) {
	long := strings.Repeat("é", 1600)
	tests := []struct {
		name       string
		count      func(*Message) int
		wantTokens int // of each cut result
	}{
		{"with a counter", func(m *Message) int { return len(m.Raw) }, -1},
		{"estimated without a counter", nil, 400*100/utf8.RuneCount(Tool("ca", long).Raw) + 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, msgs := toolWindow(3, long)
			w.Count = tt.count
			before := make([][]byte, len(msgs))
			for i := range msgs {
				before[i] = bytes.Clone(msgs[i].Raw)
			}
			if err := (ToolResultTruncator{MaxChars: 100}).Curate(w); err != nil {
				t.Fatal(err)
			}
			for i := range msgs {
				if !bytes.Equal(msgs[i].Raw, before[i]) || msgs[i].Tokens != map[bool]int{true: 400, false: 10}[msgs[i].Role == wire.RoleTool] {
					t.Errorf("caller's message %d changed: got %s (%d tokens)", i, msgs[i].Raw, msgs[i].Tokens)
				}
			}
			for ti, turn := range w.Turns {
				res := turn.Messages[2]
				content := gjson.GetBytes(res.Raw, "content").String()
				current := ti == len(w.Turns)-1
				if current {
					if content != long || res.Tokens != 400 {
						t.Errorf("current turn's result was cut: got %d chars, %d tokens", len([]rune(content)), res.Tokens)
					}
					continue
				}
				want := strings.Repeat("é", 100) + "\n[truncated for context: 100 of 1600 characters]"
				if content != want {
					t.Errorf("turn %d: got content %q, want %q", ti, content, want)
				}
				wantTokens := tt.wantTokens
				if tt.count != nil {
					wantTokens = len(res.Raw)
				}
				if res.Tokens != wantTokens {
					t.Errorf("turn %d: got %d tokens, want %d", ti, res.Tokens, wantTokens)
				}
				if turn.Tokens != 30+wantTokens {
					t.Errorf("turn %d: got turn tokens %d, want %d", ti, turn.Tokens, 30+wantTokens)
				}
			}
			if w.Report.TruncatedToolResults != 2 {
				t.Errorf("got TruncatedToolResults %d, want 2", w.Report.TruncatedToolResults)
			}
		})
	}
}

func TestToolResultTruncatorLeavesShortAndPartsAlone(t *testing.T) {
	parts := Tok(Msg(`{"role":"tool","tool_call_id":"A","content":[{"type":"text","text":"`+strings.Repeat("x", 500)+`"}]}`), 400)
	msgs := Number([]Message{User("q"), Calls("", "A"), parts, Calls("", "B"), Tool("B", "short"), User("q2")}, 1)
	w := NewWindow(msgs[:5], msgs[5:], 0, 1)
	if err := (ToolResultTruncator{MaxChars: 100}).Curate(w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(w.Turns[0].Messages, msgs[:5]) {
		t.Errorf("got %s, want the turn unchanged", describe(w.Turns[0].Messages))
	}
	if w.Report.TruncatedToolResults != 0 {
		t.Errorf("got TruncatedToolResults %d, want 0", w.Report.TruncatedToolResults)
	}
}

func TestComposedOrder(t *testing.T) {
	// Truncating old results first makes room: the budget then keeps more.
	tests := []struct {
		name      string
		s         Composed
		wantTurns int
	}{
		{"truncate then budget", Composed{ToolResultTruncator{MaxChars: 10}, TokenBudget{}}, 4},
		{"budget then truncate", Composed{TokenBudget{}, ToolResultTruncator{MaxChars: 10}}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, _ := toolWindow(4, strings.Repeat("x", 200))
			w.Count = func(*Message) int { return 10 }
			w.Budget = 3*40 + 430 // fits 4 turns only once three results are cut
			out, err := Curate(w, tt.s)
			if err != nil {
				t.Fatal(err)
			}
			if w.Report.IncludedTurns != tt.wantTurns {
				t.Errorf("got %d turns, want %d", w.Report.IncludedTurns, tt.wantTurns)
			}
			if len(out) != 4*tt.wantTurns {
				t.Errorf("got %d messages, want %d", len(out), 4*tt.wantTurns)
			}
		})
	}
}

type failing struct{ ran *int }

func (f failing) Curate(*Window) error { *f.ran++; return errors.New("boom") }

func TestComposedStopsAtFirstError(t *testing.T) {
	ran := 0
	w := window(3, 10)
	_, err := Curate(w, Composed{failing{&ran}, failing{&ran}})
	if err == nil || ran != 1 {
		t.Errorf("got error %v after %d strategies, want boom after 1", err, ran)
	}
}

func TestBuild(t *testing.T) {
	p := Policy{
		Strategies: []string{NameToolResultTruncator, NameSlidingWindow, NameTokenBudget, NamePassthrough},
		MaxTurns:   20, LowWater: 0.7, OldToolResultChars: 2000,
	}
	got, err := Build(p)
	if err != nil {
		t.Fatal(err)
	}
	want := Composed{ToolResultTruncator{MaxChars: 2000}, SlidingWindow{MaxTurns: 20, LowWater: 0.7}, TokenBudget{LowWater: 0.7}, Passthrough{}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
	if _, err := Build(Policy{Strategies: []string{"summarise"}}); err == nil || !strings.HasPrefix(err.Error(), "history: ") {
		t.Errorf("got error %v, want a history: error for an unknown strategy", err)
	}
}
