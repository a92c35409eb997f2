package messages

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/recallproxy/recall/wire"
)

func TestJoinResults(t *testing.T) {
	const (
		user  = `{"role":"user","content":"hi"}`
		calls = `{"role":"assistant","content":[{"type":"tool_use","id":"r","name":"search","input":{}},{"type":"tool_use","id":"w","name":"weather","input":{}}]}`
		resR  = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"r","content":"x"}]}`
		resW  = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"w","content":"y"}]}`
		resWT = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"w","content":"y"},{"type":"text","text":"note"}]}`
		both  = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"r","content":"x"},{"type":"tool_result","tool_use_id":"w","content":"y"}]}`
		resRx = `{"role":"user","content":[{"type":"tool\u005fresult","tool_use_id":"r","content":"x"}]}`
		resWx = `{"role":"user","content":[{"type":"tool_r\u0065sult","tool_use_id":"w","content":"y"}]}`
		bothT = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"r","content":"x"},{"type":"tool_result","tool_use_id":"w","content":"y"},{"type":"text","text":"note"}]}`
	)
	tests := []struct {
		name     string
		in       []string
		last     int
		want     []string
		wantLast int
	}{
		{"nothing to join", []string{user, calls, resR}, 1, []string{user, calls, resR}, 1},
		{"Recall's results then the client's", []string{user, calls, resR, resW}, 2, []string{user, calls, both}, 2},
		{"the client's results with text after", []string{user, calls, resR, resWT}, 3, []string{user, calls, bothT}, 2},
		{"a history mark after a join moves", []string{user, calls, resR, resW, `{"role":"assistant","content":"ok"}`, user}, 4,
			[]string{user, calls, both, `{"role":"assistant","content":"ok"}`, user}, 3},
		{"a text message is not joined", []string{user, calls, resR, user}, -1, []string{user, calls, resR, user}, -1},
		// A type spelled with an escape is still a tool result (the bytes
		// are scanned for "tool_result" before the messages are parsed).
		{"results whose type is escaped", []string{user, calls, resRx, resWx}, 3,
			[]string{user, calls, `{"role":"user","content":[{"type":"tool\u005fresult","tool_use_id":"r","content":"x"},{"type":"tool_r\u0065sult","tool_use_id":"w","content":"y"}]}`}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := make([][]byte, len(tt.in))
			for i, m := range tt.in {
				in[i] = []byte(m)
			}
			got, last := JoinResults(in, nil, tt.last)
			var gs []string
			for _, m := range got {
				gs = append(gs, string(m))
			}
			if strings.Join(gs, "\n") != strings.Join(tt.want, "\n") || last != tt.wantLast {
				t.Errorf("got %v (last %d), want %v (last %d)", gs, last, tt.want, tt.wantLast)
			}
		})
	}
}

// TestJoinResultsAnySequence checks JoinResults, which scans only some
// messages, against joining every pair of messages that both may hold a
// tool result and are joinable, over random sequences of messages.
func TestJoinResultsAnySequence(t *testing.T) {
	pool := []string{
		`{"role":"user","content":"hi"}`,
		`{"role":"user","content":"caf\u00e9"}`,
		`{"role":"assistant","content":[{"type":"tool_use","id":"r","name":"search","input":{}}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"r","content":"x"}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"w","content":"y"},{"type":"text","text":"note"}]}`,
		`{"role":"user","content":[{"type":"text","text":"first"},{"type":"tool_result","tool_use_id":"v","content":"z"}]}`,
		`{"role":"user","content":[{"type":"tool\u005fresult","tool_use_id":"e","content":"x"}]}`,
	}
	reference := func(msgs [][]byte, last int) ([][]byte, int) {
		var out [][]byte
		newLast := last
		for i, raw := range msgs {
			if i == 0 || !mayHoldToolResult(msgs[i-1]) || !mayHoldToolResult(raw) || !joinable(msgs[i-1], raw) {
				out = append(out, raw)
				continue
			}
			out[len(out)-1] = joined(out[len(out)-1], raw)
			if i <= last {
				newLast--
			}
		}
		return out, newLast
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		msgs := make([][]byte, rng.IntN(9))
		for i := range msgs {
			msgs[i] = []byte(pool[rng.IntN(len(pool))])
		}
		last := rng.IntN(len(msgs)+1) - 1
		// Some roles known (as a history window's are), some not.
		var roles []string
		if rng.IntN(2) == 0 {
			roles = make([]string, len(msgs))
			for i, m := range msgs {
				if rng.IntN(3) > 0 {
					roles[i] = Codec{}.Role(m)
				}
			}
		}
		got, gotLast := JoinResults(msgs, roles, last)
		want, wantLast := reference(msgs, last)
		if gotLast != wantLast || len(got) != len(want) {
			t.Fatalf("JoinResults(%q, %q, %d): got %q, %d, want %q, %d", msgs, roles, last, got, gotLast, want, wantLast)
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("JoinResults(%q, %q, %d): got %q, want %q", msgs, roles, last, got, want)
			}
		}
	}
}

// TestJoinResultsTakesKnownRoles: a message whose role the caller knows
// is taken at that role, its bytes not read (a history window's messages,
// whose roles the store keeps); one whose role is "" is read.
func TestJoinResultsTakesKnownRoles(t *testing.T) {
	const resR = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"r","content":"x"}]}`
	const resW = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"w","content":"y"}]}`
	msgs := [][]byte{[]byte(resR), []byte(resW)}
	for _, tt := range []struct {
		roles []string
		want  int
	}{
		{nil, 1},
		{[]string{"", ""}, 1},
		{[]string{wire.RoleTool, wire.RoleTool}, 1},
		{[]string{wire.RoleTool, ""}, 1},
		// Roles that say otherwise than the bytes: the roles are taken.
		{[]string{wire.RoleAssistant, ""}, 2},
		{[]string{"", wire.RoleAssistant}, 2},
		{[]string{wire.RoleUser, wire.RoleTool}, 2},
	} {
		if got, _ := JoinResults(msgs, tt.roles, -1); len(got) != tt.want {
			t.Errorf("JoinResults(roles %q): %d messages, want %d", tt.roles, len(got), tt.want)
		}
	}
}

// BenchmarkJoinResults joins the 100 messages of a request of 50 turns
// without tool calls: nothing to join, the path of most requests; read
// from their bytes, or with their roles known (a history window).
func BenchmarkJoinResults(b *testing.B) {
	msgs := make([][]byte, 100)
	for i := range msgs {
		msgs[i] = []byte(`{"role":"user","content":"could you look at the figures again and tell me whether the trend holds?"}`)
		if i&1 == 1 {
			msgs[i] = []byte(`{"role":"assistant","content":"` + strings.Repeat("The trend holds. ", 12) + `"}`)
		}
	}
	roles := make([]string, len(msgs))
	for i, m := range msgs {
		roles[i] = Codec{}.Role(m)
	}
	for _, bb := range []struct {
		name  string
		roles []string
	}{{"bytes", nil}, {"roles", roles}} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				JoinResults(msgs, bb.roles, 99)
			}
		})
	}
}
