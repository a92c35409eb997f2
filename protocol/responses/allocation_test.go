package responses

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/wire"
)

// completedStream is a short Responses stream: one message, two deltas.
const completedStream = "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"gpt-4o\",\"output\":[]}}\n\n" +
	"event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":1,\"output_index\":0,\"item\":{\"id\":\"msg_1\",\"type\":\"message\",\"status\":\"in_progress\",\"content\":[],\"role\":\"assistant\"}}\n\n" +
	"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":2,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hello \"}\n\n" +
	"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":3,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"there.\"}\n\n" +
	"event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"sequence_number\":4,\"output_index\":0,\"item\":{\"id\":\"msg_1\",\"type\":\"message\",\"status\":\"completed\",\"content\":[{\"type\":\"output_text\",\"annotations\":[],\"text\":\"Hello there.\"}],\"role\":\"assistant\"}}\n\n" +
	"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":5,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\",\"model\":\"gpt-4o\",\"service_tier\":\"default\"," +
	"\"output\":[{\"id\":\"msg_1\",\"type\":\"message\",\"status\":\"completed\",\"content\":[{\"type\":\"output_text\",\"annotations\":[],\"text\":\"Hello there.\"}],\"role\":\"assistant\"}]," +
	"\"usage\":{\"input_tokens\":9,\"output_tokens\":3}}}\n\n"

// TestAssemblerReadsTheAnswerOnce: the terminal event reads the final
// Response (for the Finish delta's stop and usage); Answer returns that
// answer again, without reading the Response a second time.
func TestAssemblerReadsTheAnswerOnce(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts mean nothing under the race detector")
	}
	asm := &Assembler{}
	er := chat.NewEventReader(bytes.NewReader([]byte(completedStream)), 0)
	var deltas []wire.Delta
	done := false
	for !done {
		ev, err := er.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if deltas, done, err = asm.Event(deltas[:0], ev.Name, ev.Data); err != nil {
			t.Fatal(err)
		}
	}
	if !done || len(deltas) != 1 || deltas[0].Kind != wire.Finish || deltas[0].Usage.OutputTokens != 3 {
		t.Fatalf("got done %v and deltas %+v, want the Finish delta with the usage", done, deltas)
	}
	a, err := asm.Answer()
	if err != nil || len(a.Stored) != 1 || a.Usage.InputTokens != 9 || a.Model != "gpt-4o" {
		t.Fatalf("got %+v (%v), want the completed answer", a, err)
	}
	if n := testing.AllocsPerRun(10, func() { asm.Answer() }); n != 0 {
		t.Errorf("Answer after the terminal event allocates %.0f times, want 0: it read the Response again", n)
	}
}

// TestResponseRendersIntoOneBuffer: a Response object is rendered into a
// buffer grown once, not grown member by member.
func TestResponseRendersIntoOneBuffer(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts mean nothing under the race detector")
	}
	req, err := Ingress{}.ParseRequest([]byte(`{"model":"gpt-4o","instructions":"You are a careful analyst. Answer briefly.","input":"hi","metadata":{"k":"v"}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.ResponseID, req.Created, req.Store = "resp_abc", 1700000000, true
	a := &wire.Answer{Protocol: wire.Responses, Model: "gpt-4o-2024", Completed: 1700000003, Usage: wire.Usage{InputTokens: 900, OutputTokens: 18},
		Settings: []byte(`{"service_tier":"default","temperature":1.0}`)}
	if n := testing.AllocsPerRun(10, func() { AppendStoredResponse(nil, req, a) }); n != 1 {
		t.Errorf("rendering a Response allocates %.0f times, want 1", n)
	}
}

// TestRelayKeepsNoCopyOfTheEnd: a relayed stream's terminal event is read
// for the answer in its pass (finish); the event's Response is not kept
// besides, as Answer returns what that pass read.
func TestRelayKeepsNoCopyOfTheEnd(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts mean nothing under the race detector")
	}
	var end []byte
	er := chat.NewEventReader(bytes.NewReader([]byte(completedStream)), 0)
	for {
		ev, err := er.Next()
		if err != nil {
			t.Fatal(err)
		}
		if string(ev.Name) == "response.completed" {
			end = bytes.Clone(ev.Data)
			break
		}
	}
	relayEnd := func() *Assembler {
		asm := &Assembler{}
		if fin, done, err := asm.Relay([]byte("response.completed"), end); !fin || !done || err != nil {
			t.Fatalf("Relay of the end: finished %v, done %v, error %v", fin, done, err)
		}
		return asm
	}
	a, err := relayEnd().Answer()
	if err != nil || len(a.Stored) != 1 || a.Usage.OutputTokens != 3 {
		t.Fatalf("got %+v (%v), want the completed answer", a, err)
	}
	// The assembler and what the answer holds (its settings, id, item,
	// the item's decoded text, its hash), none of it a copy of the
	// event's Response: 10 on 2026-12-06, 11 with the copy.
	if n := testing.AllocsPerRun(10, func() { relayEnd() }); n > 10 {
		t.Errorf("relaying the end allocates %.0f times, want at most 10", n)
	}
}
