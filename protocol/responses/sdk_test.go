package responses

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/recallproxy/recall/protocol/internal/prototest"
	"github.com/recallproxy/recall/wire"
)

// The official Go SDK reads what Recall renders: the streamed event
// sequence (each event decoded, its sequence_number in order, the final
// response.completed Response's OutputText, and the SDK's own
// ResponseAccumulator fed the same events) and the non-streamed Response
// object. The server drives the Renderer from canonical deltas, as the
// proxy does when the upstream speaks another protocol.

// sdkAnswer is the answer the test server renders: text, then a call.
func sdkAnswer() *wire.Answer {
	return &wire.Answer{
		ID: "chatcmpl-1", Model: "gpt-4o-mini", ResponseID: "resp_sdk1", Created: 1700000000,
		Message: wire.Message{Role: wire.RoleAssistant, Parts: []wire.Part{
			{Kind: wire.Text, Text: "Hello, world"},
			{Kind: wire.ToolCall, CallID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
		}},
		Stop:  wire.StopToolCalls,
		Usage: wire.Usage{InputTokens: 12, OutputTokens: 7, CachedTokens: 4, ReasoningTokens: 2},
	}
}

var sdkDeltas = []wire.Delta{
	{Kind: wire.TextDelta, Text: "Hello"},
	{Kind: wire.TextDelta, Text: ", world"},
	{Kind: wire.ToolCallStart, CallID: "call_1", Name: "get_weather"},
	{Kind: wire.ArgumentsDelta, Text: `{"city":`},
	{Kind: wire.ArgumentsDelta, Text: `"Paris"}`},
	{Kind: wire.Finish, Text: wire.StopToolCalls},
}

func sdkServer(t *testing.T) *httptest.Server {
	t.Helper()
	return prototest.IngressServer(t, Ingress{}, "/responses", func(req *wire.Request) *wire.Answer {
		req.ResponseID, req.Created = "resp_sdk1", 1700000000
		return sdkAnswer()
	}, sdkDeltas)
}

func sdkParams() responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model: "gpt-4o-mini",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
	}
}

func checkResponse(t *testing.T, r *responses.Response) {
	t.Helper()
	if got, want := r.OutputText(), "Hello, world"; got != want {
		t.Errorf("OutputText: got %q, want %q", got, want)
	}
	if r.ID != "resp_sdk1" || r.Status != "completed" || r.Object != "response" {
		t.Errorf("id, status, object: got %q %q %q, want resp_sdk1 completed response", r.ID, r.Status, r.Object)
	}
	var calls []responses.ResponseFunctionToolCall
	for _, it := range r.Output {
		if it.Type == "function_call" {
			calls = append(calls, it.AsFunctionCall())
		}
	}
	if len(calls) != 1 || calls[0].CallID != "call_1" || calls[0].Name != "get_weather" || calls[0].Arguments != `{"city":"Paris"}` {
		t.Errorf("function calls: got %+v, want one get_weather call_1 {\"city\":\"Paris\"}", calls)
	}
	if u := r.Usage; u.InputTokens != 12 || u.OutputTokens != 7 || u.InputTokensDetails.CachedTokens != 4 ||
		u.OutputTokensDetails.ReasoningTokens != 2 || u.TotalTokens != 19 {
		t.Errorf("usage: got %+v, want 12 in (4 cached), 7 out (2 reasoning), 19 total", u)
	}
	if !r.JSON.Instructions.Valid() && r.JSON.Instructions.Raw() != "null" {
		t.Errorf("instructions: missing from the Response")
	}
}

func TestSDKStream(t *testing.T) {
	srv := sdkServer(t)
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("k"), option.WithMaxRetries(0))
	stream := client.Responses.NewStreaming(context.Background(), sdkParams())
	var (
		types []string
		acc   responses.ResponseAccumulator
		final *responses.Response
	)
	for stream.Next() {
		ev := stream.Current()
		if got, want := ev.SequenceNumber, int64(len(types)); got != want {
			t.Errorf("event %d (%s): sequence_number %d, want %d", len(types), ev.Type, got, want)
		}
		types = append(types, ev.Type)
		var union responses.ResponsesServerEventUnion
		if err := json.Unmarshal([]byte(ev.RawJSON()), &union); err != nil {
			t.Fatalf("event %s as a server event: %v", ev.Type, err)
		}
		if err := acc.AddEvent(union); err != nil {
			t.Fatalf("accumulator: event %s: %v", ev.Type, err)
		}
		if ev.Type == "response.completed" {
			r := ev.AsResponseCompleted().Response
			final = &r
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	want := []string{
		"response.created", "response.in_progress",
		"response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added",
		"response.function_call_arguments.delta", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done",
		"response.completed",
	}
	if len(types) != len(want) {
		t.Fatalf("events: got %v, want %v", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("event %d: got %s, want %s (all: %v)", i, types[i], want[i], types)
		}
	}
	if final == nil {
		t.Fatal("no response.completed")
	}
	checkResponse(t, final)

	snap := acc.Snapshot()
	if snap.TerminalEvent != "response.completed" || snap.ResponseID != "resp_sdk1" {
		t.Errorf("accumulator: terminal %q id %q, want response.completed resp_sdk1", snap.TerminalEvent, snap.ResponseID)
	}
	if got := snap.OutputText(); got != "Hello, world" {
		t.Errorf("accumulator OutputText: got %q, want %q", got, "Hello, world")
	}
	rr, err := acc.ReconstructedResponse()
	if err != nil {
		t.Fatalf("accumulator: %v", err)
	}
	checkResponse(t, rr)
}

func TestSDKNonStreamed(t *testing.T) {
	srv := sdkServer(t)
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("k"), option.WithMaxRetries(0))
	r, err := client.Responses.New(context.Background(), sdkParams())
	if err != nil {
		t.Fatalf("responses.new: %v", err)
	}
	checkResponse(t, r)
}
