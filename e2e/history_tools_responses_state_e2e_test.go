package e2e

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// itemsOfConversation lists a conversation's items through the
// Conversations API, oldest first, as type, call id and text.
func itemsOfConversation(t *testing.T, h *e2etest.Harness, key, conv string) []string {
	t.Helper()
	st, list := call(t, h, key, "GET", "/v1/conversations/"+conv+"/items?order=asc&limit=100", "")
	if st != 200 {
		t.Fatalf("items of %s: %d %s", conv, st, list.Raw)
	}
	var out []string
	list.Get("data").ForEach(func(_, it gjson.Result) bool {
		out = append(out, it.Get("type").Str+" "+it.Get("call_id").Str+" "+it.Get("content.0.text").Str)
		return true
	})
	return out
}

// TestHistoryToolRoundsAreInvisibleInResponsesState: the rounds of
// Recall's history tools are Recall's own. The response id names the
// answer the client got: GET returns it as POST did, chaining by it
// continues the conversation (with the answer in the history sent), and
// the Conversations API lists no call or result of Recall's; an answer
// that called Recall's tool and the client's shows the client's call
// only, and the client's result chained on it continues too.
func TestHistoryToolRoundsAreInvisibleInResponsesState(t *testing.T) {
	for _, tenant := range []string{"oa", "an"} {
		for _, stream := range []bool{false, true} {
			name := tenant
			if stream {
				name += "_streamed"
			}
			t.Run(name, func(t *testing.T) {
				h := e2etest.New(t, toolTenants())
				key := "rk-" + tenant
				post := func(body string) gjson.Result {
					t.Helper()
					if stream {
						body = strings.Replace(body, "{", `{"stream":true,`, 1)
						res := h.Post("/v1/responses", key, "", body)
						if res.Status != 200 {
							t.Fatalf("POST %s: %d %s", body, res.Status, res.Body)
						}
						names, data := sseEvents(res.Body)
						for i := range names {
							if names[i] == "response.completed" {
								r := gjson.Get(data[i], "response")
								h.WaitDone(r.Get("conversation.id").Str)
								return r
							}
						}
						t.Fatalf("no response.completed in %s", res.Body)
					}
					st, r := call(t, h, key, "POST", "/v1/responses", body)
					if st != 200 {
						t.Fatalf("POST %s: %d %s", body, st, r.Raw)
					}
					return r
				}
				h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{toolCall("search_conversations", `{"query":"fly"}`)}},
					upstreamtest.Reply{Content: "Found it."})
				r1 := post(`{"model":"gpt-4o","input":"when do we fly?"}`)
				conv := r1.Get("conversation.id").Str
				if st, got := call(t, h, key, "GET", "/v1/responses/"+r1.Get("id").Str, ""); st != 200 || got.Get("output").Raw != r1.Get("output").Raw {
					t.Errorf("GET: got %d output %s, want POST's %s", st, got.Get("output").Raw, r1.Get("output").Raw)
				}
				r2 := post(`{"model":"gpt-4o","previous_response_id":"` + r1.Get("id").Str + `","input":"thanks"}`)
				if got := r2.Get("conversation.id").Str; got != conv {
					t.Errorf("chained on the answer: in %q, want %q (no fork)", got, conv)
				}
				if in := strings.Join(texts(h.Up.Last().Messages), "|"); !strings.Contains(in, "assistant: Found it.|user: thanks") {
					t.Errorf("chained request's upstream input lacks the answer: %s", in)
				}

				h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{
					{ID: "call_r", Name: "search_conversations", Arguments: `{"query":"x"}`},
					{ID: "call_w", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
					upstreamtest.Reply{Content: "Sunny."})
				tools := `"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]`
				r3 := post(`{"model":"gpt-4o",` + tools + `,"previous_response_id":"` + r2.Get("id").Str + `","input":"weather?"}`)
				if st, got := call(t, h, key, "GET", "/v1/responses/"+r3.Get("id").Str, ""); st != 200 || got.Get("output").Raw != r3.Get("output").Raw {
					t.Errorf("GET of the mixed answer: got %d output %s, want POST's %s", st, got.Get("output").Raw, r3.Get("output").Raw)
				}
				r4 := post(`{"model":"gpt-4o",` + tools + `,"previous_response_id":"` + r3.Get("id").Str +
					`","input":[{"type":"function_call_output","call_id":"call_w","output":"sunny"}]}`)
				if got := r4.Get("conversation.id").Str; got != conv {
					t.Errorf("chained on the mixed answer: in %q, want %q (no fork)", got, conv)
				}
				want := []string{"message  when do we fly?", "message  Found it.", "message  thanks", "message  echo: thanks",
					"message  weather?", "function_call call_w ", "function_call_output call_w ", "message  Sunny."}
				if got := itemsOfConversation(t, h, key, conv); strings.Join(got, "|") != strings.Join(want, "|") {
					t.Errorf("conversation items:\n got %q\nwant %q", got, want)
				}
			})
		}
	}
}
