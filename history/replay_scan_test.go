package history

import (
	"bytes"
	"testing"

	_ "github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/wire"
)

// A commit learns what each message it appends lacks (tool calls, tool
// results, cache hints), so that requests replaying it need not scan it.
func TestCommitLearnsWhatMessagesLack(t *testing.T) {
	msgs := []struct {
		name                  string
		role, raw             string
		calls, results, hints bool
	}{
		{"plain", wire.RoleUser, `{"role":"user","content":"hello"}`, false, false, false},
		{"tool calls", wire.RoleAssistant, `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`, true, false, false},
		{"tool result", wire.RoleTool, `{"role":"tool","tool_call_id":"c1","content":"42"}`, false, true, false},
		{"cache hint", wire.RoleUser, `{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}`, false, false, true},
		{"a hint only named", wire.RoleUser, `{"role":"user","content":"what is cache_control?"}`, false, false, false},
	}
	var c Change
	for _, m := range msgs {
		c.Append = append(c.Append, Message{Role: m.role, Raw: []byte(m.raw)})
	}
	_, writes := Apply(Meta{}, c, nil)
	for i, m := range msgs {
		w := &writes[i]
		for _, f := range []struct {
			what string
			bit  absent
			has  bool
		}{{"calls", noCalls, m.calls}, {"results", noResults, m.results}, {"hints", noHints, m.hints}} {
			if got := w.lacks(f.bit); got == f.has {
				t.Errorf("%s: lacks %s %v, want %v", m.name, f.what, got, !f.has)
			}
		}
	}
}

// What a message is known to lack is not looked for again; a Raw
// replaced by one of another length (an edit, a cut) is read afresh.
func TestReplayTrustsWhatAMessageLacks(t *testing.T) {
	plain := []byte(`{"role":"assistant","content":"a plain answer of some length, padded to match"}`)
	rich := []byte(`{"role":"assistant","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}],"tool_calls":[{"id":"c9","type":"function","function":{"name":"f","arguments":"{}"}}]}`)
	m := Message{Role: wire.RoleAssistant, Raw: plain}
	m.learn()
	if !m.lacks(noCalls | noResults | noHints) {
		t.Fatal("a plain message: not known to lack calls, results and hints")
	}

	// The same length, and so taken for the Raw learned from: what it
	// lacks is trusted, never scanned for.
	same := m
	same.Raw = append(rich[:0:0], rich...)
	same.absentLen = uint32(len(same.Raw))
	if got := calls(nil, &same); len(got) != 0 {
		t.Errorf("calls of a message known to have none: got %v, want none looked for", got)
	}
	if got := same.WithoutCacheHints(); !bytes.Equal(got, same.Raw) {
		t.Errorf("hints of a message known to have none: got %s, want Raw as it is", got)
	}

	// Another Raw: read afresh.
	edited := m
	edited.Raw = rich
	if got := calls(nil, &edited); len(got) != 1 || got[0] != "c9" {
		t.Errorf("calls of an edited message: got %v, want [c9]", got)
	}
	if got := edited.WithoutCacheHints(); bytes.Contains(got, []byte("cache_control")) {
		t.Errorf("hints of an edited message: got %s, want them left out", got)
	}
}
