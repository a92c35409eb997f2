package e2e

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// The Open Responses project keeps more compliance tests on its open
// branches than the copy vendored under e2e/openresponses holds; two of
// them run a request after another: a second request chained to the
// first by previous_response_id, and a function call forced by
// tool_choice answered by its function_call_output. Both are checked
// here as the suite checks a Response (every required member, status
// completed, an output), on every kind of upstream, with no conversation
// named (Recall keeps the chain) and through the /c/{id} prefix.

// TestOpenResponsesPreviousResponseID: the second request names only
// previous_response_id and its new input, and the model is sent the
// first turn with it.
func TestOpenResponsesPreviousResponseID(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	for _, k := range respondingTenants {
		for _, prefix := range []string{"", "/c/chain-" + strings.ReplaceAll(k.name, " ", "-")} {
			t.Run(k.name+prefix, func(t *testing.T) {
				h.Up.Reset()
				r1 := respond(t, h, "first", prefix+"/v1/responses", k.key, "", `{"model":"gpt-4o","input":"Remember this code word: papaya. Reply with only OK."}`)
				r2 := respond(t, h, "second", prefix+"/v1/responses", k.key, "", `{"model":"gpt-4o","previous_response_id":"`+r1.Get("id").Str+`","input":"What code word did I ask you to remember?"}`)
				if r2.Get("status").Str != "completed" || len(r2.Get("output").Array()) == 0 {
					t.Errorf("second: status %s, output %s: want completed with an output", r2.Get("status").Str, r2.Get("output").Raw)
				}
				if got := r2.Get("previous_response_id").Str; got != r1.Get("id").Str {
					t.Errorf("second: previous_response_id %q, want %q", got, r1.Get("id").Str)
				}
				reqs := h.Up.Requests()
				if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "papaya") {
					t.Errorf("the second upstream request does not carry the first turn: %d requests", len(reqs))
				}
			})
		}
	}
}

// TestOpenResponsesFunctionCallRoundTrip: a call forced by tool_choice,
// then its function_call_output chained by previous_response_id, answered
// completed; the upstream gets the call and its output paired.
func TestOpenResponsesFunctionCallRoundTrip(t *testing.T) {
	o := threeUpstreams()
	o.Upstream = []upstreamtest.Option{upstreamtest.WithToolCallsForTools()}
	h := e2etest.New(t, o)
	const tools = `"tools":[{"type":"function","name":"get_weather","description":"Get the current weather for a location","parameters":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}}]`
	for _, k := range respondingTenants {
		t.Run(k.name, func(t *testing.T) {
			h.Up.Reset()
			h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{
				{Name: "get_weather", Arguments: `{"location":"San Francisco, CA"}`},
			}})
			r1 := respond(t, h, "first", "/v1/responses", k.key, "", `{"model":"gpt-4o","input":"Use the weather tool to get the temperature in San Francisco.",`+tools+`,"tool_choice":{"type":"function","name":"get_weather"}}`)
			call := r1.Get(`output.#(type=="function_call")`)
			if !call.Exists() {
				t.Fatalf("first: no function_call in %s", r1.Get("output").Raw)
			}
			r2 := respond(t, h, "second", "/v1/responses", k.key, "", `{"model":"gpt-4o","previous_response_id":"`+r1.Get("id").Str+`","input":[{"type":"function_call_output","call_id":"`+call.Get("call_id").Str+`","output":"{\"temperature\":\"18C\"}"}],`+tools+`}`)
			if r2.Get("status").Str != "completed" || len(r2.Get("output").Array()) == 0 {
				t.Errorf("second: status %s, output %s: want completed with an output", r2.Get("status").Str, r2.Get("output").Raw)
			}
			reqs := h.Up.Requests()
			if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "18C") || !strings.Contains(string(reqs[1].Body), "San Francisco, CA") {
				t.Errorf("the second upstream request does not carry the call and its output: %d requests", len(reqs))
			}
		})
	}
}

// respond posts a Responses request (path, key, conv and body as h.Post
// takes them), fails the test unless it is answered 200, and returns the
// Response, its required members checked; what names it in failures.
func respond(t *testing.T, h *e2etest.Harness, what, path, key, conv, body string) gjson.Result {
	t.Helper()
	res := h.Post(path, key, conv, body)
	if res.Status != 200 {
		t.Fatalf("%s: %d %s", what, res.Status, res.Body)
	}
	r := gjson.Parse(res.Body)
	checkRequired(t, what, r)
	return r
}
