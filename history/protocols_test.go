package history

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/recallproxy/recall/wire"
)

// fakeCodec is a protocol of this test only, registered twice: as one that
// stores calls as items (as the Responses API does), and as one that sends
// results in user messages (as Anthropic does). Its messages are
// {"r":role,"calls":[ids],"res":[ids],"t":text}: Repair must handle both
// shapes through the codec alone.
type fakeCodec struct {
	p     wire.Protocol
	items bool
}

type fakeMsg struct {
	R     string   `json:"r"`
	Calls []string `json:"calls,omitempty"`
	Res   []string `json:"res,omitempty"`
	T     string   `json:"t,omitempty"`
}

func (c fakeCodec) Protocol() wire.Protocol { return c.p }
func (c fakeCodec) Name() string            { return "fake" }
func (c fakeCodec) Itemized() bool          { return c.items }
func (c fakeCodec) read(raw []byte) fakeMsg {
	var m fakeMsg
	if err := json.Unmarshal(raw, &m); err != nil {
		panic(err)
	}
	return m
}
func (c fakeCodec) Role(raw []byte) string { return c.read(raw).R }
func (c fakeCodec) Text(dst, raw []byte) []byte {
	return wire.AppendText(dst, wire.Message{Parts: []wire.Part{{Kind: wire.Text, Text: c.read(raw).T}}})
}
func (c fakeCodec) Calls(dst []string, raw []byte) []string {
	return append(dst, c.read(raw).Calls...)
}
func (c fakeCodec) Results(dst []string, raw []byte) []string {
	return append(dst, c.read(raw).Res...)
}
func (c fakeCodec) KeepCalls(raw []byte, keep func(string) bool) ([]byte, bool) {
	m := c.read(raw)
	m.Calls = slices.DeleteFunc(m.Calls, func(id string) bool { return !keep(id) })
	m.Res = slices.DeleteFunc(m.Res, func(id string) bool { return !keep(id) })
	if len(m.Calls) == 0 && len(m.Res) == 0 && m.T == "" {
		return raw, false
	}
	out, _ := json.Marshal(m)
	return out, true
}
func (c fakeCodec) CutResults(raw []byte, _ int, _ func(int, int) string) ([]byte, bool) {
	return raw, false
}
func (c fakeCodec) Hash(raw []byte) uint64                                  { return uint64(len(raw)) }
func (c fakeCodec) WithoutCacheHints(raw []byte) []byte                     { return raw }
func (c fakeCodec) Decode([]byte) (wire.Message, error)                     { return wire.Message{}, nil }
func (c fakeCodec) Encode(dst [][]byte, _ []wire.Message) ([][]byte, error) { return dst, nil }

const (
	itemsProtocol   wire.Protocol = 250
	resultsProtocol wire.Protocol = 251
)

func init() {
	wire.Register(fakeCodec{p: itemsProtocol, items: true})
	wire.Register(fakeCodec{p: resultsProtocol})
}

func fake(p wire.Protocol, m fakeMsg) Message {
	raw, _ := json.Marshal(m)
	return Message{Role: m.R, Protocol: p, Raw: raw}
}

func TestRepairReadsEveryProtocolThroughItsCodec(t *testing.T) {
	I, R := itemsProtocol, resultsProtocol
	u := func(p wire.Protocol) Message { return fake(p, fakeMsg{R: "user", T: "q"}) }
	tests := []struct {
		name     string
		in       []Message
		want     string
		repaired int
	}{
		{"items: a run of calls answered after it", []Message{u(I),
			fake(I, fakeMsg{R: "assistant", T: "thinking"}), fake(I, fakeMsg{R: "assistant", Calls: []string{"A"}}),
			fake(I, fakeMsg{R: "assistant", Calls: []string{"B"}}),
			fake(I, fakeMsg{R: "tool", Res: []string{"A"}}), fake(I, fakeMsg{R: "tool", Res: []string{"B"}})},
			"u a a[A] a[B] t:A t:B", 0},
		{"items: an unanswered item call goes", []Message{u(I),
			fake(I, fakeMsg{R: "assistant", Calls: []string{"A"}}), fake(I, fakeMsg{R: "assistant", Calls: []string{"B"}}),
			fake(I, fakeMsg{R: "tool", Res: []string{"A"}}), u(I)},
			"u a[A] t:A u", 1},
		{"results in one message answer a message of calls", []Message{u(R),
			fake(R, fakeMsg{R: "assistant", Calls: []string{"A", "B"}}), fake(R, fakeMsg{R: "tool", Res: []string{"A", "B"}})},
			"u a[A,B] t:A,B", 0},
		{"a user message with results and text closes the group", []Message{u(R),
			fake(R, fakeMsg{R: "assistant", Calls: []string{"A"}}), fake(R, fakeMsg{R: "user", Res: []string{"A"}, T: "and also"})},
			"u a[A] u", 0},
		{"a duplicate result is cut out of its message", []Message{u(R),
			fake(R, fakeMsg{R: "assistant", Calls: []string{"A"}}), fake(R, fakeMsg{R: "tool", Res: []string{"A", "A", "X"}})},
			"u a[A] t:A", 2},
		{"orphan results leave a user message's text", []Message{
			fake(R, fakeMsg{R: "user", Res: []string{"X"}, T: "hi"}), fake(R, fakeMsg{R: "assistant", T: "x"})},
			"u a", 1},
		{"a non-itemized protocol's back-to-back calls are two groups", []Message{u(R),
			fake(R, fakeMsg{R: "assistant", Calls: []string{"A"}}), fake(R, fakeMsg{R: "assistant", Calls: []string{"B"}}),
			fake(R, fakeMsg{R: "tool", Res: []string{"B"}})},
			"u a[B] t:B", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, n := Repair(tt.in, nil)
			if d := describe(got); d != tt.want || n != tt.repaired {
				t.Errorf("got %q (%d repaired), want %q (%d)", d, n, tt.want, tt.repaired)
			}
			if again, n := Repair(got, nil); n != 0 || describe(again) != describe(got) {
				t.Errorf("repairing the repaired: got %q (%d repaired), want it unchanged", describe(again), n)
			}
		})
	}
}
