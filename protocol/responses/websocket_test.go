package responses_test

import (
	"errors"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/protocol/responses"
)

func TestCreateBody(t *testing.T) {
	for _, tc := range []struct {
		name, event, body, previous string
		err                         *apierr.Error
	}{
		{name: "plain", event: `{"type":"response.create","model":"m","input":"hi"}`, body: `{"model":"m","input":"hi","stream":true}`},
		{name: "stream false is overwritten", event: `{"type":"response.create","stream":false,"input":"hi"}`, body: `{"stream":true,"input":"hi"}`},
		{name: "previous", event: `{"type":"response.create","previous_response_id":"resp_1","input":"hi"}`,
			body: `{"previous_response_id":"resp_1","input":"hi","stream":true}`, previous: "resp_1"},
		{name: "not JSON", event: `{"type":`, err: apierr.BadJSON},
		{name: "an array", event: `[{"type":"response.create"}]`, err: apierr.BadEvent},
		{name: "another type", event: `{"type":"response.cancel"}`, err: apierr.BadEvent},
		{name: "no type", event: `{"input":"hi"}`, err: apierr.BadEvent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			event := []byte(tc.event)
			body, previous, err := responses.CreateBody(event)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("got %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(body) != tc.body || previous != tc.previous {
				t.Errorf("got %s, %q; want %s, %q", body, previous, tc.body, tc.previous)
			}
			if string(event) != tc.event {
				t.Errorf("the event was modified: %s", event)
			}
		})
	}
}

// A response kept in memory is continued by its items, then the new
// input, without previous_response_id; NewTurn keeps what was sent and
// what was answered.
func TestContinue(t *testing.T) {
	first := []byte(`{"model":"m","input":"one","stream":true}`)
	done := gjson.Parse(`{"id":"resp_1","store":false,"output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"echo: one"}]}]}`)
	turn := responses.NewTurn(first, done)
	if turn.ID != "resp_1" || turn.Stored {
		t.Fatalf("got %+v", turn)
	}
	want := `[{"type":"message","role":"user","content":"one"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"echo: one"}]}]`
	if string(turn.Items) != want {
		t.Fatalf("items: got %s, want %s", turn.Items, want)
	}
	for _, tc := range []struct{ name, body, input string }{
		{"string input", `{"previous_response_id":"resp_1","input":"two","stream":true}`,
			`[{"type":"message","role":"user","content":"one"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"echo: one"}]},{"type":"message","role":"user","content":"two"}]`},
		{"items", `{"previous_response_id":"resp_1","input":[{"type":"function_call_output","call_id":"c","output":"o"}]}`,
			`[{"type":"message","role":"user","content":"one"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"echo: one"}]},{"type":"function_call_output","call_id":"c","output":"o"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := responses.Continue([]byte(tc.body), &turn)
			if err != nil {
				t.Fatal(err)
			}
			r := gjson.ParseBytes(out)
			if r.Get("previous_response_id").Exists() || r.Get("input").Raw != tc.input {
				t.Errorf("got %s, want input %s and no previous_response_id", out, tc.input)
			}
		})
	}
	empty := responses.NewTurn([]byte(`{"input":[]}`), gjson.Parse(`{"id":"resp_2","output":[]}`))
	if string(empty.Items) != "[]" {
		t.Errorf("an empty turn's items: got %s", empty.Items)
	}
	if out, err := responses.Continue([]byte(`{"input":"x"}`), &empty); err != nil || gjson.GetBytes(out, "input").Raw != `[{"type":"message","role":"user","content":"x"}]` {
		t.Errorf("continuing an empty turn: got %s, %v", out, err)
	}
}
