package history

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/wire"
)

// describe renders msgs compactly: role, then the call ids an assistant
// asks for or the id a tool result answers ("u", "a[A,B]", "t:A").
func describe(msgs []Message) string {
	parts := make([]string, len(msgs))
	for i, m := range msgs {
		switch m.Role {
		case wire.RoleUser:
			parts[i] = "u"
		case wire.RoleTool:
			parts[i] = "t:" + strings.Join(results(nil, &m), ",")
		case wire.RoleAssistant:
			parts[i] = "a"
			if ids := calls(nil, &m); len(ids) > 0 {
				parts[i] += "[" + strings.Join(ids, ",") + "]"
			}
		default:
			parts[i] = m.Role
		}
	}
	return strings.Join(parts, " ")
}

func TestRepair(t *testing.T) {
	emptyParts := Msg(`{"role":"assistant","content":[],"tool_calls":[{"id":"A","type":"function","function":{"name":"f","arguments":"{}"}}]}`)
	tests := []struct {
		name     string
		in       []Message
		want     string
		repaired int
	}{
		{"nothing to repair", []Message{User("q"), Calls("", "A"), Tool("A", "r"), Asst("done")}, "u a[A] t:A a", 0},
		{"parallel calls answered in any order", []Message{User("q"), Calls("", "A", "B"), Tool("B", "r"), Tool("A", "r")}, "u a[A,B] t:B t:A", 0},
		{"orphan tool result first", []Message{Tool("A", "r"), User("q"), Asst("x")}, "u a", 1},
		{"orphan tool result after a plain answer", []Message{User("q"), Asst("x"), Tool("A", "r"), User("q2")}, "u a u", 1},
		{"unanswered call with text keeps the text", []Message{User("q"), Calls("let me look", "A"), User("q2")}, "u a u", 1},
		{"unanswered call without text is dropped", []Message{User("q"), Calls("", "A"), User("q2")}, "u u", 1},
		{"unanswered call with empty parts is dropped", []Message{User("q"), emptyParts, User("q2")}, "u u", 1},
		{"unanswered call at the end", []Message{User("q"), Calls("", "A")}, "u", 1},
		{"parallel calls partially answered", []Message{User("q"), Calls("", "A", "B", "C"), Tool("B", "r")}, "u a[B] t:B", 2},
		{"duplicate result", []Message{User("q"), Calls("", "A"), Tool("A", "r"), Tool("A", "again"), Asst("x")}, "u a[A] t:A a", 1},
		{"result separated from its call by a user message", []Message{User("q"), Calls("", "A"), User("q2"), Tool("A", "r")}, "u u", 2},
		{"result answering an earlier message's call", []Message{User("q"), Calls("", "A"), Tool("A", "r"), Calls("", "B"), Tool("A", "r"), Tool("B", "r")}, "u a[A] t:A a[B] t:B", 1},
		{"two call messages back to back", []Message{User("q"), Calls("", "A"), Calls("", "B"), Tool("B", "r")}, "u a[B] t:B", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := make([][]byte, len(tt.in))
			for i := range tt.in {
				before[i] = bytes.Clone(tt.in[i].Raw)
			}
			got, n := Repair(tt.in, func(m *Message) int { return 1000 + len(m.Raw) })
			if d := describe(got); d != tt.want {
				t.Errorf("got %q, want %q", d, tt.want)
			}
			if n != tt.repaired {
				t.Errorf("got %d repaired, want %d", n, tt.repaired)
			}
			for i := range tt.in {
				if !bytes.Equal(tt.in[i].Raw, before[i]) {
					t.Errorf("input message %d changed: got %s, want %s", i, tt.in[i].Raw, before[i])
				}
			}
			for _, m := range got {
				if !gjson.ValidBytes(m.Raw) {
					t.Errorf("got invalid JSON %s", m.Raw)
				}
				rewritten := !slices.ContainsFunc(tt.in, func(o Message) bool { return bytes.Equal(o.Raw, m.Raw) })
				if rewritten && m.Tokens != 1000+len(m.Raw) {
					t.Errorf("rewritten message %s: got %d tokens, want %d (recounted)", m.Raw, m.Tokens, 1000+len(m.Raw))
				}
			}
		})
	}
}

func TestRepairKeepsText(t *testing.T) {
	got, _ := Repair([]Message{User("q"), Calls("let me look", "A", "B"), Tool("A", "r")}, nil)
	if c := gjson.GetBytes(got[1].Raw, "content").String(); c != "let me look" {
		t.Errorf("got content %q, want %q", c, "let me look")
	}
	got, _ = Repair([]Message{User("q"), Calls("let me look", "A"), User("q2")}, nil)
	if gjson.GetBytes(got[1].Raw, "tool_calls").Exists() {
		t.Errorf("got %s, want no tool_calls left", got[1].Raw)
	}
}

// answeredWindow is a clean window with single and parallel tool calls.
func answeredWindow(turns int) []Message {
	var msgs []Message
	for i := range turns {
		id := "call_" + string(rune('a'+i%26))
		msgs = append(msgs, User("question"), Calls("", id+"1"), Tool(id+"1", "result"),
			Calls("", id+"2", id+"3"), Tool(id+"3", "r3"), Tool(id+"2", "r2"), Asst("answer"))
	}
	return msgs
}

func TestRepairFastPathAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("-race: sync.Pool drops the id buffers at random")
	}
	msgs := answeredWindow(10)
	got := testing.AllocsPerRun(100, func() {
		if _, n := Repair(msgs, nil); n != 0 {
			t.Fatalf("got %d repaired, want 0", n)
		}
	})
	if got != 0 {
		t.Errorf("got %.1f allocations, want 0", got)
	}
}

func BenchmarkRepair(b *testing.B) {
	b.Run("clean", func(b *testing.B) {
		msgs := answeredWindow(50)
		b.ReportAllocs()
		for b.Loop() {
			Repair(msgs, nil)
		}
	})
	b.Run("unanswered", func(b *testing.B) {
		msgs := append(answeredWindow(50), User("q"), Calls("", "x1", "x2"), Tool("x1", "r"))
		b.ReportAllocs()
		for b.Loop() {
			Repair(msgs, nil)
		}
	})
}
