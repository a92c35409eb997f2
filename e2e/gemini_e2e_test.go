package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/protocol/gemini"
	"github.com/recallproxy/recall/summary"
	"github.com/recallproxy/recall/wire"
)

// fourUpstreams is threeUpstreams plus a tenant ge whose upstream speaks
// Gemini.
func fourUpstreams() e2etest.Options {
	o := threeUpstreams()
	o.Tenants["ge.yaml"] = tenantYAML("ge", "gemini")
	return o
}

// geminiPost sends a Gemini request as the Gemini SDKs do: the key in
// x-goog-api-key, the conversation in the header when conv is set.
func geminiPost(h *e2etest.Harness, path, key, conv, body string) e2etest.Result {
	h.T.Helper()
	headers := map[string]string{"Content-Type": "application/json", "x-goog-api-key": key}
	if conv != "" {
		headers["X-Conversation-ID"] = conv
	}
	return h.PostHeaders(path, headers, body)
}

// sentWeatherRound returns the contents of the fake's last request,
// failing the test when the fake refused it, and checks they are the
// weather round: the question, the model's call and its response.
func sentWeatherRound(t *testing.T, h *e2etest.Harness) []json.RawMessage {
	t.Helper()
	up := h.Up.Last()
	if up.Rejected != nil {
		t.Fatalf("the fake refused the last call: %s", up.Rejected.Message)
	}
	if got, want := strings.Join(geminiRoles(up.Messages), " | "), "user:weather in Oslo? | model:call=weather | user:response=weather"; got != want {
		t.Errorf("contents sent: got %q, want %q", got, want)
	}
	return up.Messages
}

// events returns the data of a server-sent event stream's events.
func events(body string) []gjson.Result {
	var out []gjson.Result
	for _, line := range strings.Split(body, "\n") {
		if d, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "data: "); ok {
			out = append(out, gjson.Parse(d))
		}
	}
	return out
}

// geminiRoles renders contents as role:text or role:call=name or
// role:response=name, one per part.
func geminiRoles(msgs []json.RawMessage) []string {
	var out []string
	for _, raw := range msgs {
		m := gjson.ParseBytes(raw)
		var parts []string
		m.Get("parts").ForEach(func(_, p gjson.Result) bool {
			switch {
			case p.Get("functionCall").Exists():
				parts = append(parts, "call="+p.Get("functionCall.name").Str)
			case p.Get("functionResponse").Exists():
				parts = append(parts, "response="+p.Get("functionResponse.name").Str)
			default:
				parts = append(parts, p.Get("text").Str)
			}
			return true
		})
		out = append(out, m.Get("role").Str+":"+strings.Join(parts, "+"))
	}
	return out
}

// TestGeminiClientHasMemory: a Gemini client on a gemini upstream gets
// memory across requests, by header and by /c/{id} prefix; its
// systemInstruction goes each time and is never stored; the upstream
// gets the tenant's key in x-goog-api-key and the model in the path.
func TestGeminiClientHasMemory(t *testing.T) {
	h := e2etest.New(t, fourUpstreams())
	r := geminiPost(h, "/v1beta/models/gemini-2.5-flash:generateContent", "rk-ge", "gem-1",
		`{"systemInstruction":{"parts":[{"text":"be brief"}]},"contents":[{"role":"user","parts":[{"text":"I am Ada."}]}]}`)
	if r.Status != 200 || gjson.Get(r.Body, "candidates.0.content.parts.0.text").Str != "echo: I am Ada." {
		t.Fatalf("first turn: %d %s, want the echo in a GenerateContentResponse", r.Status, r.Body)
	}
	h.WaitDone("gem-1")
	up := h.Up.Last()
	if up.Path != "/v1/models/gemini-2.5-flash:generateContent" || up.Header.Get("X-Goog-Api-Key") != "sk-up-ge" || up.Header.Get("Authorization") != "" {
		t.Errorf("upstream call: path %s, x-goog-api-key %q, Authorization %q; want the model in the path and the tenant's key in x-goog-api-key only",
			up.Path, up.Header.Get("X-Goog-Api-Key"), up.Header.Get("Authorization"))
	}
	r = geminiPost(h, "/c/gem-1/v1beta/models/gemini-2.5-flash:generateContent", "rk-ge", "",
		`{"systemInstruction":{"parts":[{"text":"be briefer"}]},"contents":[{"role":"user","parts":[{"text":"Who am I?"}]}]}`)
	if r.Status != 200 {
		t.Fatalf("second turn: %d %s", r.Status, r.Body)
	}
	h.WaitDone("gem-1")
	up = h.Up.Last()
	sent := up.Messages
	if got, want := strings.Join(geminiRoles(sent), " | "), "user:I am Ada. | model:echo: I am Ada. | user:Who am I?"; got != want {
		t.Errorf("second turn's contents: got %q, want %q", got, want)
	}
	if got := gjson.GetBytes(up.Body, "systemInstruction.parts.0.text").Str; got != "be briefer" {
		t.Errorf("systemInstruction: got %q, want this request's", got)
	}
	stored := e2etest.Active(h.Stored("ge", "gem-1"))
	if len(stored) != 4 {
		t.Errorf("stored: got %d messages %q, want the two turns and no instruction", len(stored), stored)
	}
	for _, m := range h.Stored("ge", "gem-1") {
		if m.Protocol != wire.Gemini {
			t.Errorf("stored message %s in %v, want gemini", m.Raw, m.Protocol)
		}
	}
	flush(t, h)
	a := h.API("rk-ge", "", "GET", "/recall/v1/conversations/gem-1/exchanges", "")
	var l exchangeList
	a.JSON(t, &l)
	if len(l.Data) != 2 || l.Data[0].Ingress != "gemini" || l.Data[0].Upstream != "gemini" {
		t.Errorf("exchange records: %d %s, want two of ingress and upstream gemini", a.Status, a.Body)
	}
}

// TestGeminiToolLoopStreamed: a streamed Gemini tool loop on a gemini-3
// upstream: the call reaches the client as Gemini streams it, signed; the
// client sends only its functionResponse, and Recall sends the stored
// call with its signature before it, which the strict fake requires.
func TestGeminiToolLoopStreamed(t *testing.T) {
	h := e2etest.New(t, fourUpstreams())
	h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{{Name: "weather", Arguments: `{"city":"Oslo"}`}}})
	tools := `"tools":[{"functionDeclarations":[{"name":"weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]}]`
	path := "/v1beta/models/gemini-3-flash:streamGenerateContent?alt=sse"
	r := geminiPost(h, path, "rk-ge", "gem-tools", `{"contents":[{"role":"user","parts":[{"text":"weather in Oslo?"}]}],`+tools+`}`)
	evs := events(r.Body)
	if r.Status != 200 || len(evs) == 0 {
		t.Fatalf("the call: %d %s", r.Status, r.Body)
	}
	last := evs[len(evs)-1]
	call := last.Get("candidates.0.content.parts.0")
	if call.Get("functionCall.name").Str != "weather" || call.Get("thoughtSignature").Str != upstreamtest.GeminiSignature("weather") ||
		last.Get("candidates.0.finishReason").Str != "STOP" {
		t.Fatalf("last event %s: want the signed call with the finishReason", last.Raw)
	}
	h.WaitDone("gem-tools")
	h.Up.Enqueue(upstreamtest.Reply{Content: "Sunny in Oslo."})
	r = geminiPost(h, path, "rk-ge", "gem-tools", `{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"weather","response":{"output":"sunny"}}}]}],`+tools+`}`)
	var text strings.Builder
	for _, ev := range events(r.Body) {
		text.WriteString(ev.Get("candidates.0.content.parts.0.text").Str)
	}
	if r.Status != 200 || text.String() != "Sunny in Oslo." {
		t.Fatalf("the result: %d %s, want the model's answer streamed", r.Status, r.Body)
	}
	h.WaitDone("gem-tools")
	sent := sentWeatherRound(t, h)
	if got := gjson.GetBytes(sent[1], "parts.0.thoughtSignature").Str; got != upstreamtest.GeminiSignature("weather") {
		t.Errorf("the stored call went without its signature: %s", sent[1])
	}
}

// TestGeminiUpstreamForChat: a chat-completions client on a gemini
// upstream, with a tool loop: the call Gemini made without an id reaches
// the client with the synthetic id, the client's tool message answers it,
// and Recall sends the call (with Google's signature for a call whose own
// was not kept) and a functionResponse named after it. Streamed and not.
func TestGeminiUpstreamForChat(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := "unstreamed"
		if stream {
			name = "streamed"
		}
		t.Run(name, func(t *testing.T) {
			h := e2etest.New(t, fourUpstreams())
			conv := "chat-ge-" + name
			h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{{Name: "weather", Arguments: `{"city":"Oslo"}`}}})
			tools := `"tools":[{"type":"function","function":{"name":"weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
			s := "false"
			if stream {
				s = "true"
			}
			r := h.Post("/v1/chat/completions", "rk-ge", conv, `{"model":"gemini-3-flash","stream":`+s+`,"messages":[{"role":"user","content":"weather in Oslo?"}],`+tools+`}`)
			id := gemini.SyntheticID("weather", 0)
			if r.Status != 200 || !strings.Contains(r.Body, `"`+id+`"`) {
				t.Fatalf("the call: %d %s, want a tool call %s", r.Status, r.Body, id)
			}
			if up := h.Up.Last(); up.Path != "/v1/models/gemini-3-flash:"+map[bool]string{false: "generateContent", true: "streamGenerateContent"}[stream] {
				t.Errorf("upstream path %s", up.Path)
			}
			h.WaitDone(conv)
			r = h.Post("/v1/chat/completions", "rk-ge", conv, `{"model":"gemini-3-flash","stream":`+s+`,"messages":[{"role":"tool","tool_call_id":"`+id+`","content":"sunny"}],`+tools+`}`)
			if r.Status != 200 || !strings.Contains(r.Body, "echo") {
				t.Fatalf("the result: %d %s", r.Status, r.Body)
			}
			h.WaitDone(conv)
			sentWeatherRound(t, h)
		})
	}
}

// TestGeminiUpstreamForMessages: an Anthropic Messages client on a gemini
// upstream gets Message objects with memory across requests.
func TestGeminiUpstreamForMessages(t *testing.T) {
	h := e2etest.New(t, fourUpstreams())
	body := func(text string) string {
		return `{"model":"gemini-2.5-pro","max_tokens":100,"system":"be brief","messages":[{"role":"user","content":"` + text + `"}]}`
	}
	headers := map[string]string{"x-api-key": "rk-ge", "anthropic-version": "2023-06-01", "X-Conversation-ID": "msg-ge"}
	r := h.PostHeaders("/v1/messages", headers, body("I am Ada."))
	if r.Status != 200 || gjson.Get(r.Body, "type").Str != "message" || gjson.Get(r.Body, "content.0.text").Str != "echo: I am Ada." {
		t.Fatalf("first turn: %d %s, want a Message", r.Status, r.Body)
	}
	h.WaitDone("msg-ge")
	r = h.PostHeaders("/v1/messages", headers, body("Who am I?"))
	if r.Status != 200 {
		t.Fatalf("second turn: %d %s", r.Status, r.Body)
	}
	h.WaitDone("msg-ge")
	up := h.Up.Last()
	sent := up.Messages
	if got, want := strings.Join(geminiRoles(sent), " | "), "user:I am Ada. | model:echo: I am Ada. | user:Who am I?"; got != want {
		t.Errorf("contents sent: got %q, want %q", got, want)
	}
	if got := gjson.GetBytes(up.Body, "systemInstruction.parts.0.text").Str; got != "be brief" {
		t.Errorf("systemInstruction: got %q", got)
	}
}

// TestProtocolSwitchChatToGemini: a conversation begun on chat
// completions is continued by a Gemini client: the Gemini request gets the
// chat turns as history, and its answer in Gemini's shape.
func TestProtocolSwitchChatToGemini(t *testing.T) {
	for _, tenant := range []string{"oa", "ge"} {
		t.Run(tenant, func(t *testing.T) {
			h := e2etest.New(t, fourUpstreams())
			conv := "switch-ge-" + tenant
			r := h.Post("/v1/chat/completions", "rk-"+tenant, conv, `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"I am Ada."}]}`)
			if r.Status != 200 {
				t.Fatalf("chat turn: %d %s", r.Status, r.Body)
			}
			h.WaitDone(conv)
			r = geminiPost(h, "/c/"+conv+"/v1beta/models/gemini-2.5-flash:generateContent", "rk-"+tenant, "",
				`{"contents":[{"role":"user","parts":[{"text":"Who am I?"}]}]}`)
			if r.Status != 200 || gjson.Get(r.Body, "candidates.0.content.role").Str != "model" {
				t.Fatalf("Gemini turn: %d %s, want a GenerateContentResponse", r.Status, r.Body)
			}
			h.WaitDone(conv)
			up := h.Up.Last()
			if len(up.Messages) != 3 {
				t.Errorf("the Gemini turn's upstream call: got %d messages %s, want the chat turn and the new one", len(up.Messages), up.Body)
			}
			if tenant == "oa" && gjson.GetBytes(up.Messages[1], "content").Str != "echo: I am Ada." {
				t.Errorf("chat upstream: got %s, want the stored answer as a chat message", up.Messages[1])
			}
		})
	}
}

// TestGeminiBadRequestIsRefusedInItsShape: a bad body and a missing key
// are answered in Gemini's error shape, and nothing is stored.
func TestGeminiBadRequestIsRefusedInItsShape(t *testing.T) {
	h := e2etest.New(t, fourUpstreams())
	r := geminiPost(h, "/v1beta/models/gemini-2.5-flash:generateContent", "rk-ge", "gem-bad", `{"contents":[]}`)
	if r.Status != 400 || gjson.Get(r.Body, "error.status").Str != "INVALID_ARGUMENT" || gjson.Get(r.Body, "error.code").Int() != 400 {
		t.Errorf("empty contents: %d %s, want 400 INVALID_ARGUMENT", r.Status, r.Body)
	}
	r = geminiPost(h, "/v1beta/models/gemini-2.5-flash:generateContent", "", "gem-bad", `{"contents":[{"parts":[{"text":"hi"}]}]}`)
	if r.Status != 401 || gjson.Get(r.Body, "error.status").Str != "UNAUTHENTICATED" {
		t.Errorf("no key: %d %s, want 401 UNAUTHENTICATED", r.Status, r.Body)
	}
	if n := len(h.Stored("ge", "gem-bad")); n != 0 {
		t.Errorf("stored %d messages, want none", n)
	}
	if h.Up.Count() != 0 {
		t.Errorf("the upstream got %d calls, want none", h.Up.Count())
	}
}

// TestSummariesOverAGeminiUpstream: a tenant whose upstream speaks
// Gemini gets its summaries from that upstream, in its protocol (the
// model's :generateContent with x-goog-api-key, the instructions as
// systemInstruction): the job lands, and the next request carries the
// summary in its systemInstruction and none of the turns it covers.
func TestSummariesOverAGeminiUpstream(t *testing.T) {
	o := fourUpstreams()
	o.Global, o.Summary = summaryOn(4, 2), func(*summary.Config) {}
	h := e2etest.New(t, o)
	say := func(text string) {
		t.Helper()
		r := geminiPost(h, "/v1beta/models/gemini-2.5-flash:generateContent", "rk-ge", "sum-ge",
			`{"systemInstruction":{"parts":[{"text":"be brief"}]},"contents":[{"role":"user","parts":[{"text":"`+text+`"}]}]}`)
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", text, r.Status, r.Body)
		}
		h.WaitDone("sum-ge")
	}
	if c := summariseFive(t, h, "sum-ge", say); c.Path != "/v1/models/gemini-2.5-flash:generateContent" || c.Header.Get("X-Goog-Api-Key") != "sk-up-ge" || c.Header.Get("Authorization") != "" {
		t.Errorf("the summariser call: %s with x-goog-api-key %q, authorization %q", c.Path, c.Header.Get("X-Goog-Api-Key"), c.Header.Get("Authorization"))
	}
	say("turn 6")
	last := h.Up.Last()
	checkSummaryIn(t, last.Body, "systemInstruction.parts")
	sent := last.Messages
	if got := strings.Join(geminiRoles(sent), " | "); strings.Contains(got, "turn 1") || !strings.Contains(got, "turn 6") {
		t.Errorf("after the summary: the upstream got %q, want none of the summarised turns", got)
	}
}
