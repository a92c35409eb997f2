package pipeline

import (
	"bytes"
	"math/rand/v2"
	"runtime"
	"slices"
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

// joiners are the upstreams whose codecs are wire.Separable, the ones the
// memo serves.
var joiners = func() []wire.Protocol {
	var ps []wire.Protocol
	for _, p := range []wire.Protocol{wire.ChatCompletions, wire.Responses, wire.Messages, wire.Gemini} {
		if _, ok := wire.For(p).(wire.Separable); ok {
			ps = append(ps, p)
		}
	}
	return ps
}()

// reference is msgs through the canonical model and up's codec, all at
// once: what the memo must give.
func reference(t *testing.T, up wire.Protocol, msgs []plan.Message) [][]byte {
	t.Helper()
	var canon []wire.Message
	for _, m := range msgs {
		cm, err := wire.For(m.Protocol).Decode(m.Raw)
		if err != nil {
			t.Fatal(err)
		}
		canon = append(canon, cm)
	}
	out, err := wire.For(up).Encode(nil, canon)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// encodeCounting is appendEncoded of msgs to up and the messages it
// decoded to do it.
func encodeCounting(t *testing.T, up wire.Protocol, msgs []plan.Message) ([][]byte, uint64) {
	t.Helper()
	before := translationCalls.Load()
	out, asStored, err := appendEncoded(nil, up, msgs)
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

// TestTranslationsMemo: to each upstream whose codec is Separable, a
// bridged context is decoded once; the next request that sends it (with
// the answer and a new question) decodes only those two, the one after
// nothing; and every request's encoding is what encoding the whole
// context at once gives (a run of assistant items joined to chat
// completions, the assistant's and the user's runs to Anthropic).
func TestTranslationsMemo(t *testing.T) {
	for _, up := range joiners {
		t.Run(up.String(), func(t *testing.T) {
			msgs := bridgedContext("memo-" + up.String())
			out, decoded := encodeCounting(t, up, msgs)
			sameMessages(t, out, reference(t, up, msgs))
			if decoded != uint64(len(msgs)) {
				t.Errorf("first request: got %d decodes, want %d", decoded, len(msgs))
			}

			next := append(msgs,
				plan.Message{Kind: plan.History, Protocol: wire.Messages, Raw: []byte(`{"role":"assistant","content":[{"type":"text","text":"you are welcome ` + up.String() + `"}]}`)},
				plan.Message{Kind: plan.New, Protocol: wire.Messages, Raw: []byte(`{"role":"user","content":"and tomorrow ` + up.String() + `"}`)})
			out, decoded = encodeCounting(t, up, next)
			sameMessages(t, out, reference(t, up, next))
			if decoded != 2 {
				t.Errorf("next request: got %d decodes, want 2 (the answer and the new message)", decoded)
			}
			out, decoded = encodeCounting(t, up, next)
			sameMessages(t, out, reference(t, up, next))
			if decoded != 0 {
				t.Errorf("the same request again: got %d decodes, want 0", decoded)
			}
		})
	}
}

// TestTranslationsJoinedRuns: for every upstream whose codec is Separable,
// sequences of messages of every role from every protocol, in random
// orders, encode through the memo as the codec encodes them whole: the
// codec's Joins names exactly the runs its Encode joins. Each sequence is
// encoded twice, the second time from the memo.
func TestTranslationsJoinedRuns(t *testing.T) {
	pool := append(bridgedContext("runs"),
		plan.Message{Kind: plan.History, Protocol: wire.ChatCompletions, Raw: []byte(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_r1","type":"function","function":{"name":"ls","arguments":"{\"d\":1}"}}]}`)},
		plan.Message{Kind: plan.History, Protocol: wire.ChatCompletions, Raw: []byte(`{"role":"tool","tool_call_id":"call_r1","content":"a b c"}`)},
		plan.Message{Kind: plan.History, Protocol: wire.ChatCompletions, Raw: []byte(`{"role":"developer","content":"be brief"}`)},
		plan.Message{Kind: plan.History, Protocol: wire.ChatCompletions, Raw: []byte(`{"role":"user","content":[{"type":"text","text":"look"},{"type":"text","text":"again"}]}`)},
		plan.Message{Kind: plan.History, Protocol: wire.Messages, Raw: []byte(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_r2","content":"done"},{"type":"text","text":"and then?"}]}`)},
		plan.Message{Kind: plan.History, Protocol: wire.Messages, Raw: []byte(`{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"tool_use","id":"toolu_r2","name":"ls","input":{}}]}`)},
		plan.Message{Kind: plan.History, Protocol: wire.Messages, Raw: []byte(`{"role":"assistant","content":""}`)},
		plan.Message{Kind: plan.History, Protocol: wire.Responses, Raw: []byte(`{"type":"reasoning","id":"rs_1","summary":[]}`)},
		plan.Message{Kind: plan.History, Protocol: wire.Gemini, Raw: []byte(`{"role":"model","parts":[{"text":"from gemini"}]}`)},
		plan.Message{Kind: plan.History, Protocol: wire.Gemini, Raw: []byte(`{"role":"user","parts":[{"text":"to gemini"}]}`)},
	)
	pool = slices.DeleteFunc(pool, func(m plan.Message) bool { return bytes.Contains(m.Raw, []byte(`"role":"system"`)) })
	rng := rand.New(rand.NewPCG(50, 1))
	for _, up := range joiners {
		for range 300 {
			msgs := make([]plan.Message, 1+rng.IntN(10))
			for i := range msgs {
				msgs[i] = pool[rng.IntN(len(pool))]
			}
			if !slices.ContainsFunc(msgs, func(m plan.Message) bool { return m.Protocol != up }) {
				continue // it goes as stored
			}
			want := reference(t, up, msgs)
			for pass := range 2 {
				out, _ := encodeCounting(t, up, msgs)
				if !slices.EqualFunc(out, want, bytes.Equal) {
					var roles []string
					for _, m := range msgs {
						roles = append(roles, string(m.Raw))
					}
					t.Fatalf("to %s, pass %d, of\n%s\ngot\n%s\nwant\n%s", up, pass,
						strings.Join(roles, "\n"), bytes.Join(out, []byte("\n")), bytes.Join(want, []byte("\n")))
				}
			}
		}
	}
}

// TestTranslationsEditedMessage: a message edited or erased after it was
// translated (its text replaced, here by one of the same length) is
// translated again: its old text never comes back from the memo.
func TestTranslationsEditedMessage(t *testing.T) {
	msgs := bridgedContext("erase")
	encodeCounting(t, wire.ChatCompletions, msgs)

	edited := append([]plan.Message(nil), msgs...)
	edited[5].Raw = bytes.ReplaceAll(edited[5].Raw, []byte("it is sunny"), []byte("[forgotten]"))
	if len(edited[5].Raw) != len(msgs[5].Raw) {
		t.Fatal("the edit changed the length")
	}
	out, decoded := encodeCounting(t, wire.ChatCompletions, edited)
	sameMessages(t, out, reference(t, wire.ChatCompletions, edited))
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
	encodeCounting(t, wire.ChatCompletions, msgs)
	a, _ := encodeCounting(t, wire.ChatCompletions, msgs)
	b, _ := encodeCounting(t, wire.ChatCompletions, msgs)
	for i := range a {
		x := append(a[i], 'A')
		y := append(b[i], 'B')
		if x[len(x)-1] != 'A' || y[len(y)-1] != 'B' {
			t.Fatalf("message %d: appends share memory: got %q and %q", i, x[len(x)-1], y[len(y)-1])
		}
	}
	sameMessages(t, a, reference(t, wire.ChatCompletions, msgs))
}

// A window whose translations the memo holds costs its own slice of
// translations and nothing a message more: the memo used to make a
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
		slot, _ := translationKey(&m, wire.ChatCompletions)
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
	chat := wire.For(wire.ChatCompletions).(wire.Separable)
	if _, err := appendJoined(dst, wire.ChatCompletions, chat, msgs); err != nil { // fills the memo
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const runs = 20
	for range runs {
		if _, err := appendJoined(dst[:0], wire.ChatCompletions, chat, msgs); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	perMessage := float64(after.TotalAlloc-before.TotalAlloc) / runs / float64(len(msgs))
	if perMessage > 16 {
		t.Errorf("appendJoined of %d memoized messages: %.0f bytes a message, want at most 16 (a pointer each)", len(msgs), perMessage)
	}
}

// TestTranslationsBudget: the memo keeps entries only while their bytes
// stay within its budget; once full it still takes an entry into a slot
// whose entry is as large or larger, and a replaced entry's bytes are
// freed.
func TestTranslationsBudget(t *testing.T) {
	var slots [8]atomic.Pointer[translation]
	entry := func(n int) *translation {
		return newTranslation(memoKey{h1: uint64(n)}, wire.RoleUser, [][]byte{bytes.Repeat([]byte{'x'}, n)})
	}
	before := translatedBytes.Load()
	budget := before + 3*entry(100).bytes
	for i := range 4 {
		keep(&slots[i], entry(100), budget)
	}
	if slots[3].Load() != nil {
		t.Error("a fourth entry was kept past a budget of three")
	}
	if got := translatedBytes.Load() - before; got != 3*entry(100).bytes {
		t.Errorf("kept %d bytes, want %d", got, 3*entry(100).bytes)
	}

	small := entry(40)
	keep(&slots[0], small, budget)
	if slots[0].Load() != small {
		t.Error("a smaller entry did not replace a slot's entry in a full memo")
	}
	larger := entry(200)
	keep(&slots[1], larger, budget)
	if slots[1].Load() == larger {
		t.Error("a larger entry replaced a slot's entry past the budget")
	}
	if got, want := translatedBytes.Load()-before, 2*entry(100).bytes+small.bytes; got != want {
		t.Errorf("after the replacement: kept %d bytes, want %d", got, want)
	}
	huge := entry(maxTranslationBytes + 1)
	keep(&slots[4], huge, translatedBytes.Load()+huge.bytes)
	if slots[4].Load() != nil {
		t.Error("an encoding over maxTranslationBytes was kept")
	}
	for i := range slots { // give the package's memo its budget back
		if e := slots[i].Swap(nil); e != nil {
			translatedBytes.Add(-e.bytes)
		}
	}
}
