package messages

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/wire"
)

// From a Messages client, the body is the client's own: every other field
// byte for byte, system as sent, messages replaced by the curated ones.
func TestAppendBodySameProtocol(t *testing.T) {
	body := `{"model":"claude","max_tokens":100,"system":[{"type":"text","text":"S","cache_control":{"type":"ephemeral"}}],"metadata":{"user_id":"u"},"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"new"}],"stream":true}`
	req, err := Ingress{}.ParseRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	history := [][]byte{[]byte(`{"role":"user","content":"old"}`), []byte(`{"role":"assistant","content":"ok"}`), req.Messages[0]}
	got, err := Upstream{}.AppendBody(nil, req, req.Instructions, history)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"claude","max_tokens":100,"system":[{"type":"text","text":"S","cache_control":{"type":"ephemeral"}}],"metadata":{"user_id":"u"},"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"old"},{"role":"assistant","content":"ok"},{"role":"user","content":"new"}],"stream":true}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}

	// Instructions other than the request's own (a summary added) are
	// sent as system blocks, the client's hint kept.
	summary := []byte(`{"role":"system","content":"Summary of the earlier conversation:\nx"}`)
	got, _ = Upstream{}.AppendBody(nil, req, append([][]byte{req.Instructions[0]}, summary), history)
	wantSystem := `[{"type":"text","text":"S","cache_control":{"type":"ephemeral"}},{"type":"text","text":"Summary of the earlier conversation:\nx"}]`
	if sys := gjson.GetBytes(got, "system").Raw; sys != wantSystem {
		t.Errorf("system: got %s, want %s", sys, wantSystem)
	}
}

// From another protocol the body is fresh, with Anthropic's required
// max_tokens filled in and the options mapped.
func TestAppendBodyFromChat(t *testing.T) {
	temp := 0.2
	req := &wire.Request{
		Protocol: wire.ChatCompletions, Model: "claude-sonnet-4-5", Stream: true,
		Tools:       []wire.Tool{{Name: "f", Description: "does f", Parameters: []byte(`{"type":"object","properties":{"a":{"type":"string"}}}`)}, {Name: "g"}},
		ToolChoice:  "required",
		Temperature: &temp,
		Stop:        []string{"END"},
	}
	msgs, err := Codec{}.Encode(nil, []wire.Message{
		{Role: wire.RoleSystem, Parts: []wire.Part{{Kind: wire.Text, Text: "Be brief."}}},
		{Role: wire.RoleUser, Parts: []wire.Part{{Kind: wire.Text, Text: "hi"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Upstream{}.AppendBody(nil, req, nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"claude-sonnet-4-5","max_tokens":4096,"system":[{"type":"text","text":"Be brief."}],"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],` +
		`"tools":[{"name":"f","description":"does f","input_schema":{"type":"object","properties":{"a":{"type":"string"}}}},{"name":"g","input_schema":{"type":"object","properties":{}}}],` +
		`"tool_choice":{"type":"any"},"temperature":0.2,"stop_sequences":["END"],"stream":true}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	for choice, want := range map[string]string{"auto": `{"type":"auto"}`, "none": `{"type":"none"}`, "f": `{"type":"tool","name":"f"}`} {
		req.ToolChoice = choice
		got, _ := Upstream{}.AppendBody(nil, req, nil, msgs)
		if tc := gjson.GetBytes(got, "tool_choice").Raw; tc != want {
			t.Errorf("tool_choice %q: got %s, want %s", choice, tc, want)
		}
	}
}

func TestMarkHistoryEnd(t *testing.T) {
	const hint = `"cache_control":{"type":"ephemeral"}`
	tests := []struct {
		name, body string
		last       int
		want       string // the marked message, or "" for the body unchanged
	}{
		{"string content", `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]}`, 1,
			`{"role":"assistant","content":[{"type":"text","text":"b",` + hint + `}]}`},
		{"last block, thinking skipped", `{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}},{"type":"thinking","thinking":"x","signature":"s"}]},{"role":"user","content":"c"}]}`, 0,
			`{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{},` + hint + `},{"type":"thinking","thinking":"x","signature":"s"}]}`},
		{"three used elsewhere", `{"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"tools":[{"name":"f","input_schema":{},"cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}]},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]}`, 1,
			`{"role":"assistant","content":[{"type":"text","text":"b",` + hint + `}]}`},
		{"four used", `{"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"tools":[{"name":"f","input_schema":{},"cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}]},{"role":"assistant","content":"b"},{"role":"user","content":[{"type":"text","text":"c","cache_control":{"type":"ephemeral"}}]}]}`, 1, ""},
		{"already marked", `{"messages":[{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}]}]}`, 0, ""},
		{"only thinking", `{"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"x","signature":"s"}]}]}`, 0, ""},
		{"no history", `{"messages":[{"role":"user","content":"a"}]}`, -1, ""},
		{"out of range", `{"messages":[{"role":"user","content":"a"}]}`, 3, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MarkHistoryEnd([]byte(tt.body), tt.last)
			if tt.want == "" {
				if string(got) != tt.body {
					t.Errorf("got %s, want the body unchanged", got)
				}
				return
			}
			if !gjson.ValidBytes(got) {
				t.Fatalf("got invalid JSON %s", got)
			}
			if m := gjson.GetBytes(got, "messages."+strconv.Itoa(tt.last)).Raw; m != tt.want {
				t.Errorf("got %s, want %s", m, tt.want)
			}
			if n := Breakpoints(gjson.ParseBytes(got)); n != Breakpoints(gjson.Parse(tt.body))+1 {
				t.Errorf("got %d breakpoints, want one more than the body's", n)
			}
			if !reflect.DeepEqual(gjson.GetBytes(got, "system").Raw, gjson.Get(tt.body, "system").Raw) {
				t.Error("system changed")
			}
		})
	}
}
