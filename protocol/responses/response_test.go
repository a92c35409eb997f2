package responses

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/wire"
)

// The Response object's settings: the upstream's where a Responses
// upstream reported them, else the request's, else OpenAI's defaults,
// every one the Open Responses schema requires rendered (null where it
// allows null); completed_at set on a completed answer only.
func TestResponseSettings(t *testing.T) {
	const asking = `{"model":"m","input":"x","presence_penalty":0.5,"frequency_penalty":null,"top_logprobs":2,"max_tool_calls":3,` +
		`"service_tier":"auto","safety_identifier":"s-1","prompt_cache_key":"k-1","temperature":0.2,"metadata":{"a":"b"}}`
	tests := []struct {
		name     string
		body     string
		settings string // the upstream's (wire.Answer.Settings)
		stop     string
		want     map[string]string
	}{
		{
			name: "defaults",
			body: `{"model":"m","input":"x"}`,
			want: map[string]string{"presence_penalty": "0", "frequency_penalty": "0", "top_logprobs": "0", "max_tool_calls": "null",
				"service_tier": `"default"`, "safety_identifier": "null", "prompt_cache_key": "null", "temperature": "1", "top_p": "1",
				"user": "null", "metadata": "{}", "completed_at": "1700000005"},
		},
		{
			name: "request's",
			body: asking,
			want: map[string]string{"presence_penalty": "0.5", "frequency_penalty": "0", "top_logprobs": "2", "max_tool_calls": "3",
				"service_tier": `"auto"`, "safety_identifier": `"s-1"`, "prompt_cache_key": `"k-1"`, "temperature": "0.2",
				"metadata": `{"a":"b"}`},
		},
		{
			name:     "upstream's over the request's",
			body:     asking,
			settings: `{"service_tier":"default","temperature":0.7,"top_logprobs":null,"metadata":{"up":1}}`,
			want: map[string]string{"service_tier": `"default"`, "temperature": "0.7", "top_logprobs": "2",
				"presence_penalty": "0.5", "metadata": `{"a":"b"}`},
		},
		{
			name: "incomplete",
			body: `{"model":"m","input":"x"}`,
			stop: wire.StopLength,
			want: map[string]string{"status": `"incomplete"`, "completed_at": "null"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := Ingress{}.ParseRequest([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			a := &wire.Answer{ResponseID: "resp_1", Created: 1700000000, Completed: 1700000005, Stop: tt.stop}
			if tt.settings != "" {
				a.Settings = []byte(tt.settings)
			}
			if tt.stop == "" {
				a.Stop = wire.StopEnd
			}
			r := gjson.ParseBytes(AppendResponse(nil, req, a))
			if !r.IsObject() {
				t.Fatalf("got %s, want a JSON object", r.Raw)
			}
			for k, want := range tt.want {
				if got := r.Get(k).Raw; got != want {
					t.Errorf("%s: got %s, want %s", k, got, want)
				}
			}
		})
	}
}

// A Responses upstream's Settings are the members it reports running
// with, not its echo of what Recall sent (tools, instructions, metadata).
func TestUpstreamSettings(t *testing.T) {
	a, err := Upstream{}.ParseAnswer([]byte(benchUpstream))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"prompt_cache_key":"agent-1","service_tier":"default","temperature":0.2,"top_logprobs":0,"top_p":1.0,"presence_penalty":0.0,"frequency_penalty":0.0}`
	if got := string(a.Settings); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// A completed_at while in progress is null; one earlier than created_at,
// or not known, is created_at.
func TestCompletedAt(t *testing.T) {
	req, err := Ingress{}.ParseRequest([]byte(`{"model":"m","input":"x","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	req.ResponseID, req.Created = "resp_1", 1700000000
	first, _, _ := strings.Cut(string(Ingress{}.NewRenderer(req).Delta(nil, wire.Delta{Kind: wire.TextDelta, Text: "hi"})), "\n\n")
	_, data, _ := strings.Cut(first, "data: ")
	if got := gjson.Get(data, "response.completed_at").Raw; got != "null" {
		t.Errorf("response.created: completed_at: got %s, want null", got)
	}
	a := &wire.Answer{ResponseID: "resp_1", Stop: wire.StopEnd}
	if got := gjson.GetBytes(AppendResponse(nil, req, a), "completed_at").Raw; got != "1700000000" {
		t.Errorf("completed, time not known: completed_at: got %s, want created_at 1700000000", got)
	}
}

// echoIndex names every echoed member, and nothing else.
func TestEchoIndex(t *testing.T) {
	for i, e := range echoed {
		if got := echoIndex(e.key); got != i {
			t.Errorf("echoIndex(%q): got %d, want %d", e.key, got, i)
		}
	}
	for _, key := range []string{"input", "model", "stream", "store", ""} {
		if got := echoIndex(key); got != -1 {
			t.Errorf("echoIndex(%q): got %d, want -1", key, got)
		}
	}
}

// Function tools are echoed with the members the schema requires of
// them; the rest as sent.
func TestEchoTools(t *testing.T) {
	tests := []struct{ name, tool, want string }{
		{"complete", `{"type":"function","name":"f","description":"d","parameters":{},"strict":false}`,
			`{"type":"function","name":"f","description":"d","parameters":{},"strict":false}`},
		{"bare", `{"type":"function","name":"f"}`,
			`{"type":"function","name":"f","description":null,"parameters":null,"strict":true}`},
		{"strict null", `{"type":"function","name":"f","strict":null,"parameters":{"type":"object"}}`,
			`{"type":"function","name":"f","parameters":{"type":"object"},"description":null,"strict":true}`},
		{"strict kept", `{"type":"function","name":"f","strict":false,"parameters":{}}`,
			`{"type":"function","name":"f","strict":false,"parameters":{},"description":null}`},
		{"hosted", `{"type":"web_search"}`, `{"type":"web_search"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(appendTools(nil, gjson.Parse("["+tt.tool+"]")))
			if want := "[" + tt.want + "]"; got != want {
				t.Errorf("got %s, want %s", got, want)
			}
		})
	}
}

// benchRequest is a Responses request as an agent sends it: instructions,
// two function tools (one without strict) and a few settings.
const benchRequest = `{"model":"gpt-4.1","instructions":"You are a careful assistant.","input":"What is the weather in Paris?",` +
	`"tools":[{"type":"function","name":"get_weather","description":"Weather of a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},` +
	`{"type":"function","name":"get_time","description":"Time in a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false},"strict":true}],` +
	`"temperature":0.2,"prompt_cache_key":"agent-1","metadata":{"run":"7"}}`

// benchUpstream is a Response object of an OpenAI upstream.
const benchUpstream = `{"id":"resp_up1","object":"response","created_at":1741476777,"completed_at":1741476778,"status":"completed",` +
	`"background":false,"error":null,"incomplete_details":null,"instructions":"You are a careful assistant.","max_output_tokens":null,"max_tool_calls":null,` +
	`"model":"gpt-4.1-2025-04-14","output":[{"id":"msg_up1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"It is sunny in Paris."}],"role":"assistant"}],` +
	`"parallel_tool_calls":true,"previous_response_id":null,"prompt_cache_key":"agent-1","reasoning":{"effort":null,"summary":null},"safety_identifier":null,` +
	`"service_tier":"default","store":false,"temperature":0.2,"text":{"format":{"type":"text"},"verbosity":"medium"},"tool_choice":"auto","tools":[],` +
	`"top_logprobs":0,"top_p":1.0,"presence_penalty":0.0,"frequency_penalty":0.0,"truncation":"disabled",` +
	`"usage":{"input_tokens":328,"input_tokens_details":{"cached_tokens":0},"output_tokens":52,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":380},"user":null,"metadata":{}}`

func benchRequestOf(b testing.TB) *wire.Request {
	req, err := Ingress{}.ParseRequest([]byte(benchRequest))
	if err != nil {
		b.Fatal(err)
	}
	req.ResponseID, req.Created, req.Conversation = "resp_bench1", 1741476777, "conv_bench1"
	return req
}

func BenchmarkAppendResponse(b *testing.B) {
	native, err := Upstream{}.ParseAnswer([]byte(benchUpstream))
	if err != nil {
		b.Fatal(err)
	}
	bridged := wire.Answer{Model: "gpt-4.1", Stop: wire.StopEnd,
		Message: wire.Message{Role: wire.RoleAssistant, Parts: []wire.Part{{Kind: wire.Text, Text: "It is sunny in Paris."}}},
		Usage:   wire.Usage{InputTokens: 328, OutputTokens: 52}}
	for _, tt := range []struct {
		name string
		a    wire.Answer
	}{
		{"native", native},
		{"bridged", bridged},
	} {
		b.Run(tt.name, func(b *testing.B) {
			req := benchRequestOf(b)
			a := tt.a
			a.ResponseID, a.Created = req.ResponseID, req.Created
			var dst []byte
			b.ReportAllocs()
			for b.Loop() {
				dst = AppendResponse(dst[:0], req, &a)
			}
			b.SetBytes(int64(len(dst)))
		})
	}
}

// rendererStream is a stream of three text deltas and the answer that
// ends it, for the request benchRequestOf makes.
func rendererStream(tb testing.TB) (*wire.Request, wire.Answer, []wire.Delta) {
	req := benchRequestOf(tb)
	a := wire.Answer{Model: "gpt-4.1", Stop: wire.StopEnd, ResponseID: req.ResponseID, Created: req.Created,
		Message: wire.Message{Role: wire.RoleAssistant, Parts: []wire.Part{{Kind: wire.Text, Text: "It is sunny in Paris."}}},
		Usage:   wire.Usage{InputTokens: 328, OutputTokens: 52}}
	deltas := []wire.Delta{{Kind: wire.TextDelta, Text: "It is "}, {Kind: wire.TextDelta, Text: "sunny in "}, {Kind: wire.TextDelta, Text: "Paris."}}
	return req, a, deltas
}

// renderStream appends to dst what a new Renderer for req renders of
// deltas, then of its end with a.
func renderStream(dst []byte, req *wire.Request, deltas []wire.Delta, a *wire.Answer) []byte {
	r := Ingress{}.NewRenderer(req)
	for _, d := range deltas {
		dst = r.Delta(dst, d)
	}
	return r.End(dst, a)
}

func BenchmarkRendererStream(b *testing.B) {
	req, a, deltas := rendererStream(b)
	var dst []byte
	b.ReportAllocs()
	for b.Loop() {
		dst = renderStream(dst[:0], req, deltas, &a)
	}
	b.SetBytes(int64(len(dst)))
}

// maxRenderAllocs bounds rendering BenchmarkRendererStream's stream of
// three deltas and its end: the renderer, its item and parts, the text
// gathered and the completed Response; an event's framing and a quoted
// string are written where they go, not built apart.
const maxRenderAllocs = 24

func TestRendererStreamAllocations(t *testing.T) {
	req, a, deltas := rendererStream(t)
	dst := make([]byte, 0, 16<<10)
	n := testing.AllocsPerRun(100, func() { renderStream(dst[:0], req, deltas, &a) })
	t.Logf("%.0f allocations", n)
	if n > maxRenderAllocs {
		t.Errorf("rendering a stream of three deltas: got %.0f allocations, want at most %d", n, maxRenderAllocs)
	}
}

// BenchmarkStoredAndAnswer is a stored request's non-streamed answer
// rendered for the turn's stored copy and for the client: apart
// (AppendStoredResponse, then AppendResponse), or once by a renderer
// (StoredResponse, then AppendAnswer from it), as the proxy renders it.
func BenchmarkStoredAndAnswer(b *testing.B) {
	native, err := Upstream{}.ParseAnswer([]byte(benchUpstream))
	if err != nil {
		b.Fatal(err)
	}
	req := benchRequestOf(b)
	native.ResponseID, native.Created = req.ResponseID, req.Created
	var dst []byte
	b.Run("apart", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			AppendStoredResponse(nil, req, &native)
			dst = AppendResponse(dst[:0], req, &native)
		}
	})
	b.Run("once", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r := Ingress{}.NewRenderer(req).(*Renderer)
			r.StoredResponse(nil, &native)
			dst = r.AppendAnswer(dst[:0], req, &native)
		}
	})
}

// BenchmarkParseAnswer is a non-streamed upstream Response read into an
// Answer.
func BenchmarkParseAnswer(b *testing.B) {
	body := []byte(benchUpstream)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (Upstream{}).ParseAnswer(body); err != nil {
			b.Fatal(err)
		}
	}
}
