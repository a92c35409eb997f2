package messages

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// hinted is a body whose top-level cache_control (Anthropic's automatic
// caching) takes one of the MaxBreakpoints slots, and whose system, tools
// and last message take three more: no slot is left for Recall's.
const hinted = `{"model":"claude","max_tokens":100,"cache_control":{"type":"ephemeral"},` +
	`"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],` +
	`"tools":[{"name":"f","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}],` +
	`"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},` +
	`{"role":"user","content":[{"type":"text","text":"c","cache_control":{"type":"ephemeral"}}]}]}`

// TestBreakpointsCountTopLevelCacheControl: the slots a request uses are
// its top-level cache_control and every block's in system, tools and
// messages; a null hint takes none, nor does the name in a string or in
// another member.
func TestBreakpointsCountTopLevelCacheControl(t *testing.T) {
	const cc = `"cache_control":{"type":"ephemeral"}`
	tests := []struct {
		name, body string
		want       int
	}{
		{"none", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, 0},
		{"top level only", `{"model":"m",` + cc + `,"messages":[{"role":"user","content":"hi"}]}`, 1},
		{"top level last", `{"model":"m","messages":[{"role":"user","content":"hi"}],` + cc + `}`, 1},
		{"top level null", `{"model":"m","cache_control":null,"messages":[{"role":"user","content":"hi"}]}`, 0},
		{"top level and three blocks", hinted, 4},
		{"blocks at depth", `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"r",` + cc + `}]}]}],"system":[{"type":"text","text":"s",` + cc + `}]}`, 2},
		{"named, not used", `{"metadata":{"user_id":"cache_control"},"x":{` + cc + `},"messages":[{"role":"user","content":"\"cache_control\":{}"}]}`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Breakpoints(gjson.Parse(tt.body)); got != tt.want {
				t.Errorf("got %d slots, want %d", got, tt.want)
			}
		})
	}
}

// TestMarkHistoryEndLeavesTheLastSlot: with the top-level cache_control
// and three block hints the request uses all MaxBreakpoints slots and
// goes unmarked, counted without an allocation; with one block hint
// fewer, Recall's takes the last slot.
func TestMarkHistoryEndLeavesTheLastSlot(t *testing.T) {
	full := []byte(hinted)
	if got := MarkHistoryEnd(full, 1); string(got) != hinted {
		t.Errorf("got %s, want the body unchanged", got)
	}
	if n := testing.AllocsPerRun(20, func() { MarkHistoryEnd(full, 1) }); n != 0 {
		t.Errorf("got %.0f allocations for a request with no slot left, want 0", n)
	}
	three := strings.Replace(hinted, `"text":"c","cache_control":{"type":"ephemeral"}`, `"text":"c"`, 1)
	got := MarkHistoryEnd([]byte(three), 1)
	if n := Breakpoints(gjson.ParseBytes(got)); n != MaxBreakpoints {
		t.Errorf("got %d slots, want %d", n, MaxBreakpoints)
	}
	if !gjson.GetBytes(got, "messages.1.content.0.cache_control").Exists() {
		t.Errorf("got %s, want the history's last message marked", gjson.GetBytes(got, "messages.1").Raw)
	}
}

// BenchmarkMarkHistoryEnd marks a request of 40 messages with no hint of
// the client's (the common case: the name never occurs, and one pass of
// bytes.Count decides), and a request whose slots are all taken (the
// body is parsed to count them).
func BenchmarkMarkHistoryEnd(b *testing.B) {
	bodies := map[string][]byte{"no-hints": agentBody(40), "slots-taken": []byte(hinted)}
	for _, name := range []string{"no-hints", "slots-taken"} {
		body := bodies[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				MarkHistoryEnd(body[:len(body):len(body)], 1) // no room: never in place
			}
		})
	}
}

// A body with room for the hint is marked in place, without an
// allocation, to the bytes a copy gets: the messages after the mark
// moved, not lost.
func TestMarkHistoryEndInPlace(t *testing.T) {
	for _, body := range []string{
		`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}],"stream":true}`,
		`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"text","text":"b"},{"type":"tool_use","id":"t","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r"}]}]}`,
	} {
		want := MarkHistoryEnd([]byte(body)[:len(body):len(body)], 1)
		if string(want) == body {
			t.Fatalf("%s: not marked", body)
		}
		buf := make([]byte, len(body), len(body)+128)
		copy(buf, body)
		got := MarkHistoryEnd(buf, 1)
		if string(got) != string(want) {
			t.Errorf("in place: got %s, want %s", got, want)
		}
		if &got[0] != &buf[0] {
			t.Errorf("%s: a body with room was copied", body)
		}
		if n := testing.AllocsPerRun(20, func() {
			copy(buf[:len(body)], body)
			MarkHistoryEnd(buf[:len(body)], 1)
		}); n != 0 {
			t.Errorf("in place: got %.0f allocations, want 0", n)
		}
	}
}

// TestMarkedEndIsTheMarkInTheBody: MarkedEnd marks one message as
// MarkHistoryEnd marks it in a body (a string content becomes a hinted
// text block, the last block that can carry a hint gets it, thinking
// and empty text never), leaves a message that takes none or has one
// as it is, and never writes into its argument.
func TestMarkedEndIsTheMarkInTheBody(t *testing.T) {
	for _, raw := range []string{
		`{"role":"user","content":"hi"}`,
		`{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"tool_use","id":"t","name":"f","input":{}}]}`,
		`{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"thinking","thinking":"x","signature":"s"}]}`,
		`{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":""}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r"}]}`,
		`{"role":"user","content":[{"type":"text","text":"c","cache_control":{"type":"ephemeral"}}]}`,
		`{"role":"user","content":""}`,
	} {
		body := `{"model":"m","messages":[` + raw + `]}`
		want := gjson.Get(string(MarkHistoryEnd([]byte(body), 0)), "messages.0").Raw
		in := make([]byte, len(raw), len(raw)+200) // room a careless splice would write into
		copy(in, raw)
		if got := string(Codec{}.MarkedEnd(in)); got != want {
			t.Errorf("MarkedEnd(%s) = %s, want %s", raw, got, want)
		}
		if string(in[:cap(in)][:len(raw)]) != raw || strings.Contains(string(in[len(raw):cap(in)]), "cache") {
			t.Errorf("MarkedEnd(%s) wrote into its argument", raw)
		}
	}
	if got := string(Codec{}.MarkedEnd([]byte(`{"role":"user","content":"hi"}`))); !strings.Contains(got, `"cache_control":{"type":"ephemeral"}`) {
		t.Errorf("a user's string: got %s, want it hinted", got)
	}
}

// TestHintMentionsCountsAsCount: hintMentions, which searches from the
// underscore, counts what bytes.Count counts, over random texts made of
// the hint's pieces and prose.
func TestHintMentionsCountsAsCount(t *testing.T) {
	pieces := []string{"cache_control", "cache", "_control", "_", "c", "ca", "che", "control", " the cat ", `\u005f`, `"`, "cache_contro", "ache_control"}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		body := []byte(b.String())
		if got, want := hintMentions(body), bytes.Count(body, []byte("cache_control")); got != want {
			t.Fatalf("hintMentions(%q) = %d, want %d", body, got, want)
		}
	}
}

// BenchmarkHintMentions counts the hints of a 60 KB request body of
// prose with one mark, against bytes.Count.
func BenchmarkHintMentions(b *testing.B) {
	body := []byte(strings.Repeat(`{"role":"user","content":"could you look at the figures again and tell me whether the trend holds? The cache of facts, in each case."},`, 480) +
		`{"role":"user","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}]}`)
	b.Run("Count", func(b *testing.B) {
		for b.Loop() {
			bytes.Count(body, []byte("cache_control"))
		}
	})
	b.Run("hintMentions", func(b *testing.B) {
		for b.Loop() {
			hintMentions(body)
		}
	})
}
