package responses

import (
	"encoding/json"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/wire"
)

func validJSON(b []byte) bool { return json.Valid(b) }

func TestAppendBodySameProtocol(t *testing.T) {
	body := `{"model":"o4-mini","instructions":"Be brief.","input":[{"role":"developer","content":"metric"},{"role":"user","content":"new"}],` +
		`"reasoning":{"effort":"low"},"text":{"verbosity":"low"},"metadata":{"k":"v"},"parallel_tool_calls":false,"store":true,` +
		`"previous_response_id":"resp_0","conversation":"conv_1","x_unknown":[1]}`
	req, err := Ingress{}.ParseRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	history := [][]byte{[]byte(`{"role":"user","content":"old"}`), []byte(`{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"}`)}
	msgs := append(history, req.Messages...)
	out, err := Upstream{}.AppendBody(nil, req, req.Instructions, msgs)
	if err != nil || !validJSON(out) {
		t.Fatalf("body %s: %v", out, err)
	}
	o := gjson.ParseBytes(out)
	checks := map[string]string{
		"instructions":         `"Be brief."`,
		"store":                `false`,
		"reasoning":            `{"effort":"low"}`,
		"text":                 `{"verbosity":"low"}`,
		"metadata":             `{"k":"v"}`,
		"parallel_tool_calls":  `false`,
		"x_unknown":            `[1]`,
		"include":              `["reasoning.encrypted_content"]`,
		"input.#":              `4`,
		"input.0.role":         `"developer"`,
		"input.2.type":         `"reasoning"`,
		"input.3.content":      `"new"`,
		"previous_response_id": ``,
		"conversation":         ``,
	}
	for path, want := range checks {
		if got := o.Get(path).Raw; got != want {
			t.Errorf("%s: got %s, want %s\n body: %s", path, got, want, out)
		}
	}

	// A model without reasoning is not asked for encrypted content; a
	// client's own include is kept as sent.
	req, _ = Ingress{}.ParseRequest([]byte(`{"model":"gpt-4o","input":"hi","include":["message.output_text.logprobs"]}`))
	out, _ = Upstream{}.AppendBody(nil, req, req.Instructions, req.Messages)
	if got := gjson.GetBytes(out, "include").Raw; got != `["message.output_text.logprobs"]` {
		t.Errorf("gpt-4o include: got %s, want the client's", got)
	}
	req, _ = Ingress{}.ParseRequest([]byte(`{"model":"gpt-5","input":"hi","include":["message.output_text.logprobs"]}`))
	out, _ = Upstream{}.AppendBody(nil, req, req.Instructions, req.Messages)
	if got := gjson.GetBytes(out, "include").Raw; got != `["message.output_text.logprobs","reasoning.encrypted_content"]` {
		t.Errorf("gpt-5 include: got %s, want the client's plus reasoning.encrypted_content", got)
	}
}

func TestAppendBodyFromAnotherIngress(t *testing.T) {
	temp := 0.2
	req := &wire.Request{
		Protocol: wire.ChatCompletions, Body: []byte(`{"messages":[]}`), Model: "gpt-4o", Stream: true, MaxTokens: 5,
		Tools:      []wire.Tool{{Name: "w", Description: "weather", Parameters: []byte(`{"type":"object"}`)}},
		ToolChoice: "w", Temperature: &temp,
	}
	instr := [][]byte{[]byte(`{"type":"message","role":"system","content":"Be brief."}`), []byte(`{"type":"message","role":"developer","content":[{"type":"input_text","text":"Metric."}]}`)}
	msgs := [][]byte{[]byte(`{"type":"message","role":"user","content":"hi"}`)}
	out, err := Upstream{}.AppendBody(nil, req, instr, msgs)
	if err != nil || !validJSON(out) {
		t.Fatalf("body %s: %v", out, err)
	}
	want := `{"model":"gpt-4o","instructions":"Be brief.\n\nMetric.","input":[{"type":"message","role":"user","content":"hi"}],` +
		`"tools":[{"type":"function","name":"w","description":"weather","parameters":{"type":"object"},"strict":false}],` +
		`"tool_choice":{"type":"function","name":"w"},"temperature":0.2,"max_output_tokens":16,"stream":true,"store":false}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
}
