package responses

import (
	"strings"
	"testing"

	"github.com/recallproxy/recall/wire"
)

// TestTextDeltaEvents: an output_text delta reads the same whatever its
// spelling: escapes, members in any order, white space, the first of
// duplicate members, an index spelled oddly, the event type missing
// (the SSE name then); invalid JSON is an error, and changes no part.
func TestTextDeltaEvents(t *testing.T) {
	const name = "response.output_text.delta"
	tests := []struct {
		name, data string
		index      int
		text       string
		err        bool
	}{
		{"plain", `{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi ","logprobs":[]}`, 0, "Hi ", false},
		{"escaped", `{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"a\n\"q\" \u00e9\\ \ud83d\ude00"}`, 0, "a\n\"q\" é\\ 😀", false},
		{"reordered, spaced", " {\n \"delta\" : \"x\" , \"content_index\" : 1 ,\t\"logprobs\":[{\"token\":\"x\",\"bytes\":[120]}], \"output_index\":0, \"type\" : \"response.output_text.delta\" } ", 1, "x", false},
		{"first of duplicates", `{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"first","delta":"second","content_index":1}`, 0, "first", false},
		{"odd index", `{"type":"response.output_text.delta","output_index":0.0,"content_index":1e0,"delta":"y"}`, 1, "y", false},
		{"no delta", `{"type":"response.output_text.delta","output_index":0,"content_index":0}`, 0, "", false},
		{"delta not a string", `{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":7}`, 0, "", false},
		{"typed by its name", `{"output_index":0,"content_index":0,"delta":"z"}`, 0, "z", false},
		{"utf-8", `{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"日本語"}`, 0, "日本語", false},
		{"cut", `{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"a"`, 0, "", true},
		{"trailing garbage", `{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"a"}x`, 0, "", true},
		{"bad escape", `{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"\x"}`, 0, "", true},
		{"control byte", "{\"type\":\"response.output_text.delta\",\"output_index\":0,\"content_index\":0,\"delta\":\"a\x01\"}", 0, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asm := &Assembler{}
			// Part (0, 0) first, so that (0, 1) is the second.
			first := `{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":""}`
			if _, _, err := asm.Event(nil, []byte(name), []byte(first)); err != nil {
				t.Fatal(err)
			}
			data := []byte(tt.data)
			deltas, done, err := asm.Event(nil, []byte(name), data)
			if tt.err {
				if err == nil || len(deltas) != 0 || len(asm.texts) != 1 {
					t.Fatalf("got %+v, %v and parts %v, want an error and no new part", deltas, err, asm.texts)
				}
				return
			}
			if err != nil || done {
				t.Fatalf("got done %v, error %v", done, err)
			}
			want := []wire.Delta{{Kind: wire.TextDelta, Index: tt.index, Text: tt.text}}
			if len(deltas) != 1 || deltas[0].Kind != want[0].Kind || deltas[0].Index != want[0].Index || deltas[0].Text != want[0].Text {
				t.Fatalf("got %+v, want %+v", deltas, want)
			}
			// The text is the delta's own, not the event's bytes.
			for i := range data {
				data[i] = '#'
			}
			if deltas[0].Text != tt.text || strings.Contains(deltas[0].Text, "#") {
				t.Errorf("the delta's text changed with the event's bytes: %q", deltas[0].Text)
			}
		})
	}
}

// TestEventsReadForTheirValidity: the events the Assembler takes nothing
// from (the in-progress Response, the done events of a part) are
// checked all the same: valid, they add nothing and change no state;
// invalid anywhere, even deep in the Response, they are an error.
func TestEventsReadForTheirValidity(t *testing.T) {
	created := `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[],` +
		`"tools":[{"type":"function","name":"f","parameters":{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"}}}}}],"metadata":{"k":"v\"w"}}}`
	tests := []struct {
		name, data string
		err        bool
	}{
		{"created", created, false},
		{"type last", `{"sequence_number":1,"response":{"status":"in_progress","output":[]},"type":"response.in_progress"}`, false},
		{"part done", `{"type":"response.content_part.done","item_id":"m","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":"a\nb"}}`, false},
		{"text done", `{"type":"response.output_text.done","output_index":0,"content_index":0,"text":"x","logprobs":[]}`, false},
		{"created cut", created[:len(created)-2], true},
		{"deep bad literal", `{"type":"response.created","response":{"tools":[{"parameters":{"x":[tru]}}]}}`, true},
		{"bad number", `{"type":"response.in_progress","sequence_number":01}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asm := &Assembler{}
			deltas, done, err := asm.Event(nil, nil, []byte(tt.data))
			if tt.err != (err != nil) || done || len(deltas) != 0 {
				t.Fatalf("got %+v, done %v, error %v; want no deltas, error %v", deltas, done, err, tt.err)
			}
			if asm.texts != nil || asm.calls != nil || asm.itemDone != nil || asm.final != nil {
				t.Errorf("the event changed the assembler: %+v", asm)
			}
		})
	}
}

// TestTextDeltaDecidesInOnePass: the one pass reads a
// response.output_text.delta event whose indices are whole numbers, each
// (output_index, content_index) pair a text of its own; an index written
// otherwise (a fraction, an exponent, a leading zero) leaves the event to
// Event, which reads every other.
func TestTextDeltaDecidesInOnePass(t *testing.T) {
	a := &Assembler{}
	for _, tt := range []struct {
		name, event string
		ok          bool
		index       int // of the text, when ok
		text        string
	}{
		{"the first text", `{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hel","sequence_number":4}`, true, 0, "Hel"},
		{"the same text", `{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"lo"}`, true, 0, "lo"},
		{"another output's text", `{"type":"response.output_text.delta","output_index":12,"content_index":0,"delta":"x"}`, true, 1, "x"},
		{"a fraction", `{"type":"response.output_text.delta","output_index":1.0,"content_index":0,"delta":"x"}`, false, 0, ""},
		{"an exponent", `{"type":"response.output_text.delta","output_index":0,"content_index":1e0,"delta":"x"}`, false, 0, ""},
		{"a leading zero", `{"type":"response.output_text.delta","output_index":01,"content_index":0,"delta":"x"}`, false, 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := a.textDelta(nil, []byte(tt.event))
			if ok != tt.ok {
				t.Fatalf("got decided %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if len(got) != 1 || got[0].Kind != wire.TextDelta || got[0].Index != tt.index || got[0].Text != tt.text {
				t.Errorf("got %+v, want one text delta %q of text %d", got, tt.text, tt.index)
			}
		})
	}
}
