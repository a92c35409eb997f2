package responses

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// sseEvent is one SSE event of type typ, numbered seq (-1: no
// sequence_number), fields its members after those.
func sseEvent(typ string, seq int, fields string) string {
	n := ""
	if seq >= 0 {
		n = fmt.Sprintf(`,"sequence_number":%d`, seq)
	}
	return "event: " + typ + "\ndata: {\"type\":\"" + typ + "\"" + n + fields + "}\n\n"
}

// TestRelayedEventsAreTheUpstreams: a Responses upstream's events reach
// a Responses client as they came, members Recall does not know and
// events it would not render included, with only Recall's sequence
// numbers (added where the upstream sent none) and Recall's ids on the
// message and the function call (a reasoning item keeps the upstream's);
// Recall's own response.created and response.in_progress stand for the
// upstream's, and End's response.completed for the upstream's; a ping
// is dropped and an event of several data lines goes out on one.
func TestRelayedEventsAreTheUpstreams(t *testing.T) {
	req := benchRequestOf(t)
	inProgress := `,"response":{"id":"resp_up","object":"response","status":"in_progress","model":"gpt-4o","output":[]}`
	reasoning := `{"id":"rs_up","type":"reasoning","summary":[{"type":"summary_text","text":"think"}],"encrypted_content":"enc"}`
	message := `{"id":"msg_up","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"Hi"}],"role":"assistant"}`
	call := `{"id":"fc_up","type":"function_call","status":"completed","arguments":"{}","call_id":"call_1","name":"get_time"}`
	msgRef := func(id string) string { return `,"item_id":"` + id + `","output_index":1,"content_index":0` }
	up := []string{
		sseEvent("response.created", 0, inProgress),
		sseEvent("response.in_progress", 1, inProgress),
		sseEvent("response.output_item.added", 2, `,"output_index":0,"item":{"id":"rs_up","type":"reasoning","summary":[]}`),
		sseEvent("response.reasoning_summary_text.delta", 3, `,"item_id":"rs_up","output_index":0,"summary_index":0,"delta":"think"`),
		sseEvent("response.output_item.done", 4, `,"output_index":0,"item":`+reasoning),
		": ping\n\n",
		sseEvent("response.output_item.added", 5, `,"output_index":1,"item":{"id":"msg_up","type":"message","status":"in_progress","content":[],"role":"assistant"}`),
		sseEvent("response.content_part.added", 6, msgRef("msg_up")+`,"part":{"type":"output_text","annotations":[],"text":""}`),
		"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":7" + msgRef("msg_up") + ",\ndata: \"delta\":\"Hi\",\"obfuscation\":\"x1\"}\n\n",
		sseEvent("response.output_text.annotation.added", -1, msgRef("msg_up")+`,"annotation_index":0,"annotation":{"type":"url_citation"}`),
		sseEvent("response.output_text.done", 9, msgRef("msg_up")+`,"text":"Hi"`),
		sseEvent("response.output_item.done", 10, `,"output_index":1,"item":`+message),
		sseEvent("response.output_item.added", 11, `,"output_index":2,"item":{"id":"fc_up","type":"function_call","status":"in_progress","arguments":"","call_id":"call_1","name":"get_time"}`),
		sseEvent("response.function_call_arguments.delta", 12, `,"item_id":"fc_up","output_index":2,"delta":"{}"`),
		sseEvent("response.output_item.done", 13, `,"output_index":2,"item":`+call),
		sseEvent("response.completed", 14, `,"response":{"id":"resp_up","object":"response","status":"completed","model":"gpt-4o","output":[`+
			reasoning+","+message+","+call+`],"usage":{"input_tokens":5,"output_tokens":2}}`),
	}
	got := string(relayThrough(t, nil, req, []byte(strings.Join(up, ""))))

	msgID, fcID := itemID("msg", req.ResponseID, 1), itemID("fc", req.ResponseID, 2)
	var ren Renderer
	ren.req, ren.cur = req, -1
	want := string(ren.start(nil)) + strings.Join([]string{
		sseEvent("response.output_item.added", 2, `,"output_index":0,"item":{"id":"rs_up","type":"reasoning","summary":[]}`),
		sseEvent("response.reasoning_summary_text.delta", 3, `,"item_id":"rs_up","output_index":0,"summary_index":0,"delta":"think"`),
		sseEvent("response.output_item.done", 4, `,"output_index":0,"item":`+reasoning),
		sseEvent("response.output_item.added", 5, `,"output_index":1,"item":{"id":"`+msgID+`","type":"message","status":"in_progress","content":[],"role":"assistant"}`),
		sseEvent("response.content_part.added", 6, msgRef(msgID)+`,"part":{"type":"output_text","annotations":[],"text":""}`),
		sseEvent("response.output_text.delta", 7, msgRef(msgID)+`, "delta":"Hi","obfuscation":"x1"`),
		sseEvent("response.output_text.annotation.added", 8, msgRef(msgID)+`,"annotation_index":0,"annotation":{"type":"url_citation"}`),
		sseEvent("response.output_text.done", 9, msgRef(msgID)+`,"text":"Hi"`),
		sseEvent("response.output_item.done", 10, `,"output_index":1,"item":`+strings.Replace(message, "msg_up", msgID, 1)),
		sseEvent("response.output_item.added", 11, `,"output_index":2,"item":{"id":"`+fcID+`","type":"function_call","status":"in_progress","arguments":"","call_id":"call_1","name":"get_time"}`),
		sseEvent("response.function_call_arguments.delta", 12, `,"item_id":"`+fcID+`","output_index":2,"delta":"{}"`),
		sseEvent("response.output_item.done", 13, `,"output_index":2,"item":`+strings.Replace(call, "fc_up", fcID, 1)),
	}, "")
	if !strings.HasPrefix(got, want) {
		t.Fatalf("got\n%s\nwant it to start\n%s", got, want)
	}
	end := got[len(want):]
	if !strings.HasPrefix(end, "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":14,\"response\":{\"id\":\""+req.ResponseID+"\"") ||
		strings.Count(end, "\n\n") != 1 {
		t.Errorf("the stream ends %s, want response.completed of %s, numbered 14, alone", end, req.ResponseID)
	}
	for _, id := range []string{msgID, fcID, `"id":"rs_up"`} {
		if !strings.Contains(end, id) {
			t.Errorf("response.completed %s does not name %s", end, id)
		}
	}
}

// TestRelayedAsRendered: an upstream stream as OpenAI sends it (every
// member one Recall renders, the done events' text the deltas') reaches
// the client relayed byte for byte as Recall renders it from the
// deltas.
func TestRelayedAsRendered(t *testing.T) {
	req := benchRequestOf(t)
	stream := bytes.ReplaceAll(upstreamStream(), []byte(benchStreamText), []byte(strings.Join(strings.Fields(benchStreamText), " ")+" "))
	if got, want := relayThrough(t, nil, req, stream), streamThrough(t, nil, req, stream); !bytes.Equal(got, want) {
		t.Errorf("relayed\n%s\nrendered\n%s", got, want)
	}
}

// TestRelayFlushes: the events a client has use for at once are flushed;
// the openings and the done events wait for the next.
func TestRelayFlushes(t *testing.T) {
	ren := Ingress{}.NewRenderer(benchRequestOf(t)).(*Renderer)
	for _, tt := range []struct {
		event string
		flush bool
	}{
		{sseEvent("response.created", 0, `,"response":{}`), false},
		{sseEvent("response.output_item.added", 1, `,"output_index":0,"item":{"id":"m","type":"message"}`), false},
		{sseEvent("response.content_part.added", 2, `,"item_id":"m","output_index":0`), false},
		{sseEvent("response.output_text.delta", 3, `,"item_id":"m","output_index":0,"delta":"a"`), true},
		{sseEvent("response.output_text.done", 4, `,"item_id":"m","output_index":0,"text":"a"`), false},
		{sseEvent("response.output_item.done", 5, `,"output_index":0,"item":{"id":"m","type":"message"}`), false},
		{sseEvent("response.output_item.added", 6, `,"output_index":1,"item":{"id":"f","type":"function_call"}`), true},
		{sseEvent("response.function_call_arguments.delta", 7, `,"item_id":"f","output_index":1,"delta":"{"`), true},
		{sseEvent("response.function_call_arguments.done", 8, `,"item_id":"f","output_index":1,"arguments":"{}"`), false},
		{sseEvent("response.completed", 9, `,"response":{}`), false},
	} {
		if _, flush := ren.Event(nil, []byte(tt.event)); flush != tt.flush {
			t.Errorf("%s: flush %v, want %v", tt.event, flush, tt.flush)
		}
	}
}

// TestRelayNumbersUntypedEvents: an event whose data has no type is
// named by its SSE event line and gets its sequence number first.
func TestRelayNumbersUntypedEvents(t *testing.T) {
	for _, tt := range []struct{ event, want string }{
		{"event: response.x\ndata: {\"a\":1}\n\n", "event: response.x\ndata: {\"sequence_number\":0,\"a\":1}\n\n"},
		{"event: response.x\ndata: { }\n\n", "event: response.x\ndata: {\"sequence_number\":0 }\n\n"},
	} {
		ren := Renderer{req: benchRequestOf(t), cur: -1, started: true}
		if got, _ := ren.Event(nil, []byte(tt.event)); string(got) != tt.want {
			t.Errorf("%q: got %q, want %q", tt.event, got, tt.want)
		}
	}
}

// TestRelayReadsAnyLineEnd: an event's lines may end in \r\n or \r.
func TestRelayReadsAnyLineEnd(t *testing.T) {
	// The two data lines are joined by a space.
	want := "event: response.x\ndata: {\"type\":\"response.x\", \"sequence_number\":0,\"a\":1}\n\n"
	for _, end := range []string{"\n", "\r\n", "\r"} {
		ren := Renderer{req: benchRequestOf(t), cur: -1, started: true}
		ev := "event: response.x" + end + "data: {\"type\":\"response.x\"," + end + "data: \"sequence_number\":3,\"a\":1}" + end + end
		if got, _ := ren.Event(nil, []byte(ev)); string(got) != want {
			t.Errorf("lines ending %q: got %q, want %q", end, got, want)
		}
	}
}

// TestRelayRejectsWhatEventRejects: an event Relay reads in its one pass
// is held to what Event holds it to: one that is not valid JSON ends the
// stream either way.
func TestRelayRejectsWhatEventRejects(t *testing.T) {
	for _, data := range []string{
		`{"type":"response.output_text.delta","sequence_number":4,"delta":"a"`,
		`{"type":"response.output_text.delta","sequence_number":4,"delta":"a"} x`,
		`{"type":"response.output_item.added","sequence_number":2,"item":{"id":"m",}}`,
		// An event Recall renders its own of is checked past its type.
		`{"type":"response.created","sequence_number":0,"response":{"id":"r",}}`,
		`{"type":"response.in_progress","sequence_number":1,"response":{"id":"r"}`,
	} {
		_, _, eventErr := (&Assembler{}).Event(nil, nil, []byte(data))
		_, _, relayErr := (&Assembler{}).Relay(nil, []byte(data))
		if eventErr == nil || relayErr == nil {
			t.Errorf("%s: Event's error %v, Relay's %v, want both", data, eventErr, relayErr)
		}
	}
}

// TestRelayReadsAFinishedItemOnce: Relay keeps a finished item
// (response.output_item.done) as Event keeps it, from the one pass that
// also hands its members to the renderer relaying it (scanned), where the
// item was read again to keep it and once more to relay it.
func TestRelayReadsAFinishedItemOnce(t *testing.T) {
	item := `{"id":"msg_1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"a \"b\"\u00e9"}],"role":"assistant"}`
	for _, tc := range []struct {
		name, data string
		once       bool // read in Relay's one pass
	}{
		{"an item", `{"type":"response.output_item.done","sequence_number":7,"output_index":0,"item":` + item + `}`, true},
		{"its index after it", `{"type":"response.output_item.done","item":` + item + `,"output_index":2}`, true},
		{"a duplicate index", `{"type":"response.output_item.done","output_index":1,"output_index":0,"item":` + item + `}`, true},
		{"no item", `{"type":"response.output_item.done","output_index":0}`, true},
		{"an index in a string", `{"type":"response.output_item.done","output_index":"1","item":` + item + `}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.data)
			event, relay := &Assembler{}, &Assembler{}
			if _, _, err := event.Event(nil, nil, data); err != nil {
				t.Fatal(err)
			}
			if _, _, err := relay.Relay(nil, data); err != nil {
				t.Fatal(err)
			}
			if got, want := fmt.Sprint(relay.itemDone), fmt.Sprint(event.itemDone); got != want {
				t.Errorf("got items %s, want %s", got, want)
			}
			if _, ok := relay.scanned(data); ok != tc.once {
				t.Errorf("got the members handed on %v, want %v", ok, tc.once)
			}
		})
	}
}
