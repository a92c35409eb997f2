package responses

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/wire"
)

// scanCorpus is Response objects for scanResponse against gjson's read:
// the benchmark's, and its members spelled every way JSON allows.
var scanCorpus = []string{
	benchUpstream,
	strings.ReplaceAll(benchUpstream, `,"`, ",\n  \""),
	strings.Replace(benchUpstream, `"status":"completed"`, `"status":"incomplete","status":"completed"`, 1),
	strings.Replace(benchUpstream, `"temperature":0.2`, `"temperature":2e-1,"temperature":null,"top_p":null`, 1),
	strings.Replace(benchUpstream, `"tools":[]`, `"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]`, 1),
	strings.Replace(benchUpstream, `"model":"gpt-4.1-2025-04-14"`, `"model":"gpt-4.1\u002d2025"`, 1),
	strings.Replace(benchUpstream, `"input_tokens":328`, `"input_tokens":"328","input_tokens":1`, 1),
	strings.Replace(benchUpstream, `"input_tokens_details":{"cached_tokens":0}`, `"input_tokens_details":{},"input_tokens_details":{"cached_tokens":7}`, 1),
	strings.Replace(benchUpstream, `"input_tokens_details":{"cached_tokens":0}`, `"input_tokens_details":{"cached_tokens":3},"input_tokens_details":{"cached_tokens":7}`, 1),
	strings.Replace(benchUpstream, `{"cached_tokens":0},"output_tokens":52,"output_tokens_details":{"reasoning_tokens":0}`, `{"audio_tokens":1,"cached_tokens":64},"output_tokens":52,"output_tokens_details":{"reasoning_tokens":16,"x":[{}]}`, 1),
	strings.Replace(benchUpstream, `"usage":{`, `"usage":{"input_tokens":1,"output_tokens":2},"usage":{`, 1),
	strings.Replace(benchUpstream, `"usage":{"input_tokens":328`, `"usage":{"input_tokens":328.0`, 1),
	strings.Replace(benchUpstream, `"output_tokens":52`, `"output_tokens":null`, 1),
	strings.Replace(benchUpstream, `"input_tokens_details":{"cached_tokens":0}`, `"input_tokens_details":null`, 1),
	strings.Replace(benchUpstream, `"usage":{"input_tokens":328,`, `"usage":null,"x":{"input_tokens":328,`, 1),
	strings.Replace(benchUpstream, `"status":"completed","background"`, `"status":"incomplete","incomplete_details":{"reason":"content_filter"},"background"`, 1),
	`{"id":"r","status":"failed","error":{"message":"overloaded"}}`,
	`{"id":"r","status":"completed","output":{}}`,
	`{"id":"r","status":"completed","output":[{"type":"message","role":"user","content":"hi"}]}`,
	`{"id":"r","status":"completed","output":[]}`,
	`{}`,
}

// TestScanResponseReadsAsGJSON: the one-pass read of a Response gives
// the Answer (or the error) gjson's read gives, and leaves to it what it
// cannot read: invalid JSON, an escaped name, a value nested too deep.
func TestScanResponseReadsAsGJSON(t *testing.T) {
	for _, body := range scanCorpus {
		m, ok := scanResponse([]byte(body))
		if !ok {
			t.Errorf("scanResponse(%.80s…) not ok, want it read", body)
			continue
		}
		sameAnswer(t, body, m)
		if u := gjson.Get(body, "usage"); readUsage(u) != usageByLookups(u) {
			t.Errorf("%.80s…: usage %+v, by lookups %+v", body, readUsage(u), usageByLookups(u))
		}
	}
	// The usage read in the pass, not by readUsage after it.
	if m, _ := scanResponse([]byte(benchUpstream)); !m.scanned {
		t.Error("scanResponse left the usage to readUsage, want it read in the pass")
	}
	deep := strings.Repeat(`[`, maxEventDepth+1) + strings.Repeat(`]`, maxEventDepth+1)
	for _, body := range []string{
		strings.Replace(benchUpstream, `"usage"`, `"\u0075sage"`, 1),
		strings.Replace(benchUpstream, `"metadata":{}`, `"metadata":`+deep, 1),
		benchUpstream[:len(benchUpstream)-1],
		benchUpstream + "x",
		`[]`,
		``,
	} {
		if _, ok := scanResponse([]byte(body)); ok {
			t.Errorf("scanResponse(…%.60s) ok, want it left to gjson", body[max(0, len(body)-60):])
		}
	}
}

// usageByLookups is readUsage as gjson's lookups read it, a member
// each.
func usageByLookups(u gjson.Result) wire.Usage {
	return wire.Usage{
		InputTokens:     int(u.Get("input_tokens").Int()),
		OutputTokens:    int(u.Get("output_tokens").Int()),
		CachedTokens:    int(u.Get("input_tokens_details.cached_tokens").Int()),
		ReasoningTokens: int(u.Get("output_tokens_details.reasoning_tokens").Int()),
	}
}

// sameAnswer fails t unless m's Answer is the one parseResponse reads
// from body.
func sameAnswer(t *testing.T, body string, m responseMembers) {
	t.Helper()
	got, gerr := m.answer(nil)
	want, werr := parseResponse(parse([]byte(body)), nil)
	if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
		t.Fatalf("%.80s…: error %v, gjson's %v", body, gerr, werr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%.80s…:\n got %+v\nwant %+v", body, got, want)
	}
}

// FuzzScanResponse: whatever the one-pass read takes is valid JSON, read
// as gjson reads it.
func FuzzScanResponse(f *testing.F) {
	for _, body := range scanCorpus {
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body string) {
		m, ok := scanResponse([]byte(body))
		if !ok {
			return
		}
		if !gjson.Valid(body) {
			t.Fatalf("scanResponse took invalid JSON %q", body)
		}
		sameAnswer(t, body, m)
	})
}

// TestFinishReadsAsEvent: a relayed stream's terminal event, read in one
// pass (finish), gives the answer Event's read gives, with the items of
// the output_item.done events standing in for an empty output; an event
// the pass cannot read is Event's.
func TestFinishReadsAsEvent(t *testing.T) {
	item := `{"type":"response.output_item.done","sequence_number":1,"output_index":0,"item":{"id":"msg_d","type":"message","role":"assistant","content":[{"type":"output_text","text":"from the done event"}]}}`
	for _, typ := range []string{"response.completed", "response.incomplete"} {
		for _, body := range scanCorpus {
			ev := `{"type":"` + typ + `","sequence_number":2,"response":` + body + `,"response":null}`
			relayed, event := &Assembler{}, &Assembler{}
			for _, a := range []*Assembler{relayed, event} {
				if _, _, err := a.Relay([]byte("response.output_item.done"), []byte(item)); err != nil {
					t.Fatal(err)
				}
			}
			read, rerr := relayed.finish([]byte(ev))
			if !read {
				t.Fatalf("finish(%.80s…) not read, want it read in one pass", ev)
			}
			_, _, eerr := event.Event(nil, []byte(typ), []byte(ev))
			if (rerr == nil) != (eerr == nil) || rerr != nil && rerr.Error() != eerr.Error() {
				t.Fatalf("%.80s…: error %v, Event's %v", ev, rerr, eerr)
			}
			if rerr != nil {
				continue
			}
			got, gerr := relayed.Answer()
			want, werr := event.Answer()
			if gerr != nil || werr != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("%.80s…:\n got %+v (%v)\nwant %+v (%v)", ev, got, gerr, want, werr)
			}
		}
	}
	for _, ev := range []string{
		`{"type":"response.completed","response":null}`,
		`{"type":"response.completed","response":{"\u0069d":"r"}}`,
		`{"type":"response.completed"}`,
		`{"type":"response.completed","response":{}} x`,
	} {
		if read, _ := (&Assembler{}).finish([]byte(ev)); read {
			t.Errorf("finish(%s) read, want it left to Event", ev)
		}
	}
}
