package gemini

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/wire"
)

// TestAssembleStream reads a recorded stream's shape: text in pieces, a
// thought, a signed call, the finish with usage.
func TestAssembleStream(t *testing.T) {
	asm := Upstream{}.NewAssembler()
	chunks := []string{
		`{"candidates":[{"content":{"parts":[{"text":"plan","thought":true}],"role":"model"}}],"responseId":"r1","modelVersion":"gemini-3-flash"}`,
		`{"candidates":[{"content":{"parts":[{"text":"Let me "}],"role":"model"}}]}`,
		`{"candidates":[{"content":{"parts":[{"text":"check."}],"role":"model"}}]}`,
		`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"weather","args":{"city":"Oslo"}},"thoughtSignature":"c2ln"}],"role":"model"},"finishReason":"STOP"}],` +
			`"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"thoughtsTokenCount":3,"cachedContentTokenCount":4}}`,
	}
	var deltas []wire.Delta
	done := false
	for _, c := range chunks {
		var err error
		deltas, done, err = asm.Event(deltas, nil, []byte(c))
		if err != nil {
			t.Fatal(err)
		}
	}
	if !done {
		t.Fatal("not done at the finishReason")
	}
	a, err := asm.Answer()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"role":"model","parts":[{"text":"plan","thought":true},{"text":"Let me check."},{"functionCall":{"name":"weather","args":{"city":"Oslo"}},"thoughtSignature":"c2ln"}]}`
	if string(a.Stored[0]) != want {
		t.Errorf("stored: got %s, want %s", a.Stored[0], want)
	}
	if a.Stop != wire.StopToolCalls || a.Usage != (wire.Usage{InputTokens: 10, OutputTokens: 8, CachedTokens: 4, ReasoningTokens: 3}) || a.ID != "r1" {
		t.Errorf("stop %q usage %+v id %q", a.Stop, a.Usage, a.ID)
	}
	var kinds []wire.DeltaKind
	for _, d := range deltas {
		kinds = append(kinds, d.Kind)
	}
	wantKinds := []wire.DeltaKind{wire.ReasoningDelta, wire.TextDelta, wire.TextDelta, wire.ToolCallStart, wire.ArgumentsDelta, wire.Finish}
	if len(kinds) != len(wantKinds) {
		t.Fatalf("deltas: got %v, want %v", kinds, wantKinds)
	}
	if deltas[3].CallID != SyntheticID("weather", 0) {
		t.Errorf("call id: got %q", deltas[3].CallID)
	}
	if _, _, err := (Upstream{}).NewAssembler().Event(nil, nil, []byte(`{"error":{"code":429,"message":"slow down","status":"RESOURCE_EXHAUSTED"}}`)); err == nil {
		t.Error("an error event: got no error")
	}
	if _, err := (Upstream{}).NewAssembler().Answer(); err == nil {
		t.Error("Answer before the finish: got no error")
	}
}

// TestRenderStream renders canonical deltas as Gemini chunks: text at
// once, the calls and the finish in the closing chunk.
func TestRenderStream(t *testing.T) {
	r := Ingress{}.NewRenderer(&wire.Request{Model: "m"})
	out := r.Delta(nil, wire.Delta{Kind: wire.TextDelta, Text: "Hi"})
	out = r.Delta(out, wire.Delta{Kind: wire.ToolCallStart, CallID: "call_1", Name: "f"})
	out = r.Delta(out, wire.Delta{Kind: wire.ArgumentsDelta, Text: `{"a":`})
	out = r.Delta(out, wire.Delta{Kind: wire.ArgumentsDelta, Text: `1}`})
	if strings.Contains(string(out), "functionCall") || strings.Contains(string(out), "finishReason") {
		t.Fatalf("before End: %s, want only the text", out)
	}
	end := r.End(nil, &wire.Answer{Stop: wire.StopToolCalls, Usage: wire.Usage{InputTokens: 3, OutputTokens: 2}})
	ev := gjson.Parse(strings.TrimSuffix(strings.TrimPrefix(string(end), "data: "), "\r\n\r\n"))
	if ev.Get("candidates.0.content.parts.0.functionCall.id").Str != "call_1" || ev.Get("candidates.0.content.parts.0.functionCall.args.a").Int() != 1 ||
		ev.Get("candidates.0.finishReason").Str != "STOP" || ev.Get("usageMetadata.totalTokenCount").Int() != 5 {
		t.Errorf("closing chunk: %s", end)
	}
}

func TestParseAnswerAndRender(t *testing.T) {
	body := []byte(`{"candidates":[{"content":{"parts":[{"text":"Hello"}],"role":"model"},"finishReason":"MAX_TOKENS","index":0}],` +
		`"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":2,"totalTokenCount":9},"modelVersion":"gemini-2.5-flash","responseId":"abc"}`)
	a, err := Upstream{}.ParseAnswer(body)
	if err != nil {
		t.Fatal(err)
	}
	if string(a.Stored[0]) != `{"role":"model","parts":[{"text":"Hello"}]}` || a.Stop != wire.StopLength || a.Model != "gemini-2.5-flash" {
		t.Errorf("answer: %s %q %q", a.Stored[0], a.Stop, a.Model)
	}
	out := Ingress{}.AppendAnswer(nil, &wire.Request{Model: "m"}, &a)
	if gjson.GetBytes(out, "candidates.0.content.parts.0.text").Str != "Hello" || gjson.GetBytes(out, "candidates.0.finishReason").Str != "MAX_TOKENS" ||
		gjson.GetBytes(out, "responseId").Str != "abc" {
		t.Errorf("rendered: %s", out)
	}
	if _, err := (Upstream{}).ParseAnswer([]byte(`{"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT"}}`)); err == nil {
		t.Error("an error body: got no error")
	}
	if _, err := (Upstream{}).ParseAnswer([]byte(`{"promptFeedback":{"blockReason":"SAFETY"}}`)); err == nil {
		t.Error("a blocked prompt: got no error")
	}
}

// TestAppendBodyTranslated builds a Gemini body for a chat request: the
// instructions as systemInstruction, tools with their JSON Schema, the
// choice and limits in their places, a system message moved out of
// contents, and the first call of a model content signed for Gemini 3.
func TestAppendBodyTranslated(t *testing.T) {
	temp := 0.3
	req := &wire.Request{Protocol: wire.ChatCompletions, Model: "m", MaxTokens: 50, Temperature: &temp, ToolChoice: "required",
		Tools: []wire.Tool{{Name: "f", Parameters: []byte(`{"type":"object","additionalProperties":false}`)}}}
	msgs := [][]byte{
		[]byte(`{"role":"user","parts":[{"text":"hi"}]}`),
		[]byte(`{"role":"system","parts":[{"text":"summary"}]}`),
		[]byte(`{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]}`),
	}
	out, err := Upstream{}.AppendBody(nil, req, [][]byte{[]byte(`{"role":"system","parts":[{"text":"be brief"}]}`)}, msgs)
	if err != nil {
		t.Fatal(err)
	}
	b := gjson.ParseBytes(out)
	checks := map[string]string{
		"systemInstruction.parts.1.text":      "summary",
		"systemInstruction.parts.0.text":      "be brief",
		"contents.#":                          "2",
		"contents.1.parts.0.thoughtSignature": SkipSignature,
		"tools.0.functionDeclarations.0.parametersJsonSchema.additionalProperties": "false",
		"toolConfig.functionCallingConfig.mode":                                    "ANY",
		"generationConfig.maxOutputTokens":                                         "50",
		"generationConfig.temperature":                                             "0.3",
	}
	for path, want := range checks {
		if got := b.Get(path).String(); got != want {
			t.Errorf("%s: got %q, want %q in %s", path, got, want, out)
		}
	}
	withTools, err := Upstream{}.WithTools(out, []wire.Tool{{Name: "recall_search", Parameters: []byte(`{"type":"object"}`)}}, true)
	if err != nil || gjson.GetBytes(withTools, "tools.1.functionDeclarations.0.name").Str != "recall_search" {
		t.Errorf("WithTools: %s %v", withTools, err)
	}
}

// TestAppendBodySame keeps a Gemini request's own members and replaces
// only contents.
func TestAppendBodySame(t *testing.T) {
	body := []byte(`{"contents":[{"parts":[{"text":"new"}]}],"safetySettings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}],"systemInstruction":{"parts":[{"text":"own"}]}}`)
	req, err := Ingress{}.ParseRequestAt([]byte("/v1beta/models/m:generateContent"), body)
	if err != nil {
		t.Fatal(err)
	}
	history := []byte(`{"role":"user","parts":[{"text":"old"}]}`)
	out, err := Upstream{}.AppendBody(nil, req, req.Instructions, [][]byte{history, req.Messages[0]})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"contents":[{"role":"user","parts":[{"text":"old"}]},{"parts":[{"text":"new"}]}],"safetySettings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}],"systemInstruction":{"parts":[{"text":"own"}]}}`
	if string(out) != want {
		t.Errorf("got %s, want %s", out, want)
	}
}
