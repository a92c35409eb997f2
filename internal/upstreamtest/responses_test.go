package upstreamtest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"
)

func responsesClient(s *Server) openai.Client {
	return openai.NewClient(option.WithBaseURL(s.URL()), option.WithAPIKey("k"), option.WithMaxRetries(0))
}

func TestResponsesEcho(t *testing.T) {
	s := NewTB(t)
	c := responsesClient(s)
	r, err := c.Responses.New(context.Background(), responses.ResponseNewParams{
		Model: "gpt-4o-mini", Store: openai.Bool(false),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello there")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.OutputText(), "echo: hello there"; got != want {
		t.Errorf("output text: got %q, want %q", got, want)
	}
	if r.Status != "completed" || r.Usage.InputTokens == 0 || len(r.Output) != 1 || r.Output[0].Type != "message" {
		t.Errorf("response: got status %q usage %+v output %d items", r.Status, r.Usage, len(r.Output))
	}
	last := s.Last()
	if last.Path != "/v1/responses" || last.Model != "gpt-4o-mini" || len(last.Messages) != 1 || last.Rejected != nil {
		t.Errorf("recorded: got path %q model %q %d items rejected %v", last.Path, last.Model, len(last.Messages), last.Rejected)
	}
}

func TestResponsesStreamToolCalls(t *testing.T) {
	s := NewTB(t)
	s.Enqueue(Reply{Content: "Let me check.", ToolCalls: []ToolCall{{ID: "call_a", Name: "weather", Arguments: `{"city":"Paris"}`}}})
	c := responsesClient(s)
	stream := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "gpt-4o-mini",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("weather?")},
	})
	var text, args strings.Builder
	var final *responses.Response
	n := int64(0)
	for stream.Next() {
		ev := stream.Current()
		if ev.SequenceNumber != n {
			t.Errorf("%s: sequence_number %d, want %d", ev.Type, ev.SequenceNumber, n)
		}
		n++
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.function_call_arguments.delta":
			args.WriteString(ev.Delta)
		case "response.completed":
			r := ev.AsResponseCompleted().Response
			final = &r
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != "Let me check." || args.String() != `{"city":"Paris"}` {
		t.Errorf("deltas: got text %q args %q", text.String(), args.String())
	}
	if final == nil || final.OutputText() != "Let me check." || len(final.Output) != 2 {
		t.Fatalf("final: got %+v", final)
	}
	if fc := final.Output[1].AsFunctionCall(); fc.CallID != "call_a" || fc.Name != "weather" || fc.Arguments != `{"city":"Paris"}` {
		t.Errorf("function call: got %+v", fc)
	}
}

// The echo answers the last user message item: its input_text parts
// joined by newlines, other parts and earlier messages left out.
func TestResponsesEchoesTheLastUserInputText(t *testing.T) {
	s := NewTB(t)
	body := `{"model":"gpt-4o-mini","input":[` +
		`{"role":"user","content":"first"},` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"answer"}]},` +
		`{"role":"user","content":[{"type":"input_text","text":"look"},{"type":"input_image","image_url":"https://a/1.png"},{"type":"input_text","text":"here"}]}]}`
	out := gjson.GetBytes(readAll(t, post(t, s, "/responses", body)), `output.#(type=="message").content.0.text`).Str
	if want := "echo: look\nhere"; out != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

func TestResponsesReasoning(t *testing.T) {
	tests := []struct {
		model   string
		include bool
		want    bool
	}{
		{"o4-mini", true, true},
		{"gpt-5", true, true},
		{"o4-mini", false, false},
		{"gpt-4o", true, false},
	}
	for _, tt := range tests {
		s := NewTB(t)
		p := responses.ResponseNewParams{
			Model: shared.ResponsesModel(tt.model), Store: openai.Bool(false),
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("think")},
		}
		if tt.include {
			p.Include = []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}
		}
		c := responsesClient(s)
		r, err := c.Responses.New(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		got := len(r.Output) > 0 && r.Output[0].Type == "reasoning" && r.Output[0].EncryptedContent != ""
		if got != tt.want {
			t.Errorf("%s include %v: reasoning item first: got %v, want %v (%s)", tt.model, tt.include, got, tt.want, r.RawJSON())
		}
		if r.OutputText() != "echo: think" {
			t.Errorf("%s: output text %q", tt.model, r.OutputText())
		}
	}
}

func TestResponsesValidation(t *testing.T) {
	tests := []struct {
		name, body string
		status     int
		param      string
	}{
		{"previous_response_id", `{"model":"m","input":"x","previous_response_id":"resp_1"}`, 400, "previous_response_id"},
		{"conversation", `{"model":"m","input":"x","conversation":"conv_1"}`, 400, "conversation"},
		{"no model", `{"input":"x"}`, 400, "model"},
		{"no input", `{"model":"m"}`, 400, "input"},
		{"unknown item type", `{"model":"m","input":[{"type":"item_reference","id":"x"}]}`, 400, "input[0].type"},
		{"bad role", `{"model":"m","input":[{"role":"tool","content":"x"}]}`, 400, "input[0].role"},
		{"orphan output", `{"model":"m","input":[{"role":"user","content":"x"},{"type":"function_call_output","call_id":"c9","output":"o"}]}`, 400, "input"},
		{"output before its call", `{"model":"m","input":[{"type":"function_call_output","call_id":"c1","output":"o"},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}]}`, 400, "input"},
		{"call without name", `{"model":"m","input":[{"type":"function_call","call_id":"c1","arguments":"{}"}]}`, 400, "input[0].name"},
		{"tool without parameters", `{"model":"m","input":"x","tools":[{"type":"function","name":"f"}]}`, 400, "tools[0].parameters"},
		{"reasoning without encrypted content, store false", `{"model":"o4-mini","store":false,"input":[{"type":"reasoning","id":"rs_1","summary":[]},{"role":"user","content":"x"}]}`, 404, "input"},
		{"not json", `{"model":`, 400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewTB(t)
			s.Enqueue(Reply{Content: "kept for the next request"})
			resp, err := http.Post(s.URL()+"/responses", "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || gjson.GetBytes(b, "error.param").Str != tt.param || gjson.GetBytes(b, "error.message").Str == "" {
				t.Errorf("got %d %s, want %d with param %q", resp.StatusCode, b, tt.status, tt.param)
			}
			if s.Last().Rejected == nil {
				t.Error("recorded: Rejected is nil")
			}
			// A rejected request takes no scripted reply.
			c := responsesClient(s)
			r, err := c.Responses.New(context.Background(), responses.ResponseNewParams{
				Model: "m", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("x")}})
			if err != nil || r.OutputText() != "kept for the next request" {
				t.Errorf("next request: got %v %v, want the queued reply", r, err)
			}
		})
	}
}

func TestResponsesFaults(t *testing.T) {
	s := NewTB(t)
	s.Enqueue(Reply{Status: 429, RetryAfter: "1"})
	c := responsesClient(s)
	_, err := c.Responses.New(context.Background(), responses.ResponseNewParams{
		Model: "m", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("x")}})
	var apiErr *openai.Error
	if !asError(err, &apiErr) || apiErr.StatusCode != 429 {
		t.Fatalf("got %v, want a 429", err)
	}

	s.Enqueue(Reply{Fault: FaultErrorEvent, Content: "a long enough answer to cut"})
	stream := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "m", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("x")}})
	completed := false
	for stream.Next() {
		completed = completed || stream.Current().Type == "response.completed"
	}
	if completed {
		t.Error("error event: the stream completed, want it cut by the error")
	}
}

func asError(err error, target **openai.Error) bool { return errors.As(err, target) }
