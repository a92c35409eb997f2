package pipeline

import (
	"bytes"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/wire"
)

// bridgedContext is a stored context of Responses items and Anthropic
// messages, the assistant's items a run that chat completions joins into
// one message, tagged with tag so that no other test's messages share
// the memo's entries.
func bridgedContext(tag string) []plan.Message {
	raw := func(p wire.Protocol, s string) plan.Message {
		return plan.Message{Kind: plan.History, Protocol: p, Raw: []byte(strings.ReplaceAll(s, "TAG", tag))}
	}
	return []plan.Message{
		raw(wire.ChatCompletions, `{"role":"system","content":"summary TAG"}`),
		raw(wire.Responses, `{"role":"user","content":"what is the weather TAG"}`),
		raw(wire.Responses, `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"let me look TAG"}]}`),
		raw(wire.Responses, `{"type":"function_call","call_id":"call_TAG","name":"weather","arguments":"{}"}`),
		raw(wire.Responses, `{"type":"function_call_output","call_id":"call_TAG","output":"sunny TAG"}`),
		raw(wire.Messages, `{"role":"assistant","content":[{"type":"text","text":"it is sunny TAG"}]}`),
		raw(wire.Messages, `{"role":"user","content":"thanks TAG"}`),
	}
}

// reference is msgs through the canonical model and chat's codec, all at
// once: what the memo must give.
func reference(t *testing.T, msgs []plan.Message) [][]byte {
	t.Helper()
	var canon []wire.Message
	for _, m := range msgs {
		cm, err := wire.For(m.Protocol).Decode(m.Raw)
		if err != nil {
			t.Fatal(err)
		}
		canon = append(canon, cm)
	}
	out, err := wire.For(wire.ChatCompletions).Encode(nil, canon)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// encodeCounting is appendEncoded of msgs to chat completions and the
// messages it decoded to do it.
func encodeCounting(t *testing.T, msgs []plan.Message) ([][]byte, uint64) {
	t.Helper()
	before := translationCalls.Load()
	out, asStored, err := appendEncoded(nil, wire.ChatCompletions, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if asStored {
		t.Fatal("a bridged context went as stored")
	}
	return out, translationCalls.Load() - before
}

func sameMessages(t *testing.T, got, want [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d messages, want %d:\n%s\nwant\n%s", len(got), len(want), bytes.Join(got, []byte("\n")), bytes.Join(want, []byte("\n")))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("message %d: got %s, want %s", i, got[i], want[i])
		}
	}
}

// TestTranslationsMemo: a bridged context is decoded once; the next
// request that sends it (with a new message) decodes only the new one,
// and every request's encoding is what encoding the whole context at
// once gives (a run of assistant items joined).
func TestTranslationsMemo(t *testing.T) {
	msgs := bridgedContext("memo")
	out, decoded := encodeCounting(t, msgs)
	sameMessages(t, out, reference(t, msgs))
	if decoded != uint64(len(msgs)) {
		t.Errorf("first request: got %d decodes, want %d", decoded, len(msgs))
	}

	next := append(msgs, plan.Message{Kind: plan.New, Protocol: wire.Messages, Raw: []byte(`{"role":"user","content":"and tomorrow memo"}`)})
	out, decoded = encodeCounting(t, next)
	sameMessages(t, out, reference(t, next))
	if decoded != 1 {
		t.Errorf("next request: got %d decodes, want 1 (the new message)", decoded)
	}
}

// TestTranslationsEditedMessage: a message edited or erased after it was
// translated (its text replaced, here by one of the same length) is
// translated again: its old text never comes back from the memo.
func TestTranslationsEditedMessage(t *testing.T) {
	msgs := bridgedContext("erase")
	encodeCounting(t, msgs)

	edited := append([]plan.Message(nil), msgs...)
	edited[5].Raw = bytes.ReplaceAll(edited[5].Raw, []byte("it is sunny"), []byte("[forgotten]"))
	if len(edited[5].Raw) != len(msgs[5].Raw) {
		t.Fatal("the edit changed the length")
	}
	out, decoded := encodeCounting(t, edited)
	sameMessages(t, out, reference(t, edited))
	if bytes.Contains(bytes.Join(out, nil), []byte("it is sunny")) {
		t.Errorf("the erased text came back: %s", bytes.Join(out, []byte("\n")))
	}
	if decoded != 1 {
		t.Errorf("got %d decodes, want 1 (the edited message)", decoded)
	}
}

// TestTranslationsShared: the translations the memo gives out are
// capped, so that two requests appending to the same message (a cache
// mark, say) each get their own copy instead of writing into the same
// memory.
func TestTranslationsShared(t *testing.T) {
	msgs := bridgedContext("capped")
	encodeCounting(t, msgs)
	a, _ := encodeCounting(t, msgs)
	b, _ := encodeCounting(t, msgs)
	for i := range a {
		x := append(a[i], 'A')
		y := append(b[i], 'B')
		if x[len(x)-1] != 'A' || y[len(y)-1] != 'B' {
			t.Fatalf("message %d: appends share memory: got %q and %q", i, x[len(x)-1], y[len(y)-1])
		}
	}
	sameMessages(t, a, reference(t, msgs))
}

// A window whose translations the memo holds costs its own slice of
// translations and nothing a message more: appendChat used to make a
// slice of decoded messages too, about 60 bytes a message.
func TestMemoizedWindowAllocatesLittle(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts under -race differ")
	}
	// Turns of Anthropic messages, as the bridged rows store them, each in
	// a slot of its own: the memo is direct-mapped under hashes seeded
	// per process, and two of them in one slot would take turns there,
	// each translated anew on every call.
	var msgs []plan.Message
	slots := map[*atomic.Pointer[translation]]bool{}
	add := func(raw string) bool {
		m := plan.Message{Kind: plan.History, Protocol: wire.Messages, Raw: []byte(raw)}
		slot, _, _ := translationKey(&m, wire.ChatCompletions)
		if slots[slot] {
			return false
		}
		slots[slot] = true
		msgs = append(msgs, m)
		return true
	}
	for i := 0; len(msgs) < 100; i++ {
		if !add(`{"role":"user","content":"question ` + strings.Repeat("q", i) + `"}`) {
			continue
		}
		for j := 0; !add(`{"role":"assistant","content":[{"type":"text","text":"answer ` + strings.Repeat("a", i) + strings.Repeat(" a", j) + `"}]}`); j++ {
		}
	}
	dst := make([][]byte, 0, 4*len(msgs))
	if _, err := appendChat(dst, msgs); err != nil { // fills the memo
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const runs = 20
	for range runs {
		if _, err := appendChat(dst[:0], msgs); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	perMessage := float64(after.TotalAlloc-before.TotalAlloc) / runs / float64(len(msgs))
	if perMessage > 16 {
		t.Errorf("appendChat of %d memoized messages: %.0f bytes a message, want at most 16 (a pointer each)", len(msgs), perMessage)
	}
}
