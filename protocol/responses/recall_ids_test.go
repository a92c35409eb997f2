package responses

import (
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/recallproxy/recall/wire"
)

// viaSJSON is how the output items were given Recall's ids before
// withRecallID: the stored item with sjson setting "id" on a message or
// a function call, and "status" where it has none (reasoning aside).
func viaSJSON(raw []byte, id string, i int) []byte {
	item := parse(raw)
	b := clone(raw)
	switch itemType(item) {
	case typeMessage:
		b, _ = sjson.SetBytes(b, "id", itemID("msg", id, i))
	case typeFunctionCall:
		b, _ = sjson.SetBytes(b, "id", itemID("fc", id, i))
	}
	if !item.Get("status").Exists() && itemType(item) != typeReasoning {
		b, _ = sjson.SetBytes(b, "status", "completed")
	}
	return b
}

// TestOutputItemsGetRecallsIDs: an answer's stored items rendered with
// Recall's ids are the stored bytes with the id's value replaced where
// it stands and a missing id or status added last, byte for byte what
// sjson made of them; the stored item itself is left as it was.
func TestOutputItemsGetRecallsIDs(t *testing.T) {
	tests := []struct{ name, raw, want string }{
		{"message", `{"id":"msg_up","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"hi"}],"role":"assistant"}`,
			`{"id":"msg_abc_2","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"hi"}],"role":"assistant"}`},
		{"message without id or status", `{"type":"message","role":"assistant","content":"hi"}`,
			`{"type":"message","role":"assistant","content":"hi","id":"msg_abc_2","status":"completed"}`},
		{"easy message", `{"role":"assistant","content":"hi"}`, `{"role":"assistant","content":"hi","id":"msg_abc_2","status":"completed"}`},
		{"function call", `{"type":"function_call","id":"fc_up","call_id":"call_1","name":"f","arguments":"{\"a\":1}","status":"completed"}`,
			`{"type":"function_call","id":"fc_abc_2","call_id":"call_1","name":"f","arguments":"{\"a\":1}","status":"completed"}`},
		{"id spelled with escapes", `{ "id" : "msg_\u0041" , "type":"message","role":"assistant","content":"hi","status":"incomplete" }`,
			`{ "id" : "msg_abc_2" , "type":"message","role":"assistant","content":"hi","status":"incomplete" }`},
		{"reasoning keeps its id", `{"id":"rs_up","type":"reasoning","summary":[],"encrypted_content":"x"}`,
			`{"id":"rs_up","type":"reasoning","summary":[],"encrypted_content":"x"}`},
		{"hosted call gets a status", `{"id":"ws_up","type":"web_search_call","action":{"type":"search"}}`,
			`{"id":"ws_up","type":"web_search_call","action":{"type":"search"},"status":"completed"}`},
		{"type not a string", `{"type":1,"role":"assistant"}`, `{"type":1,"role":"assistant","status":"completed"}`},
		{"repeated id", `{"id":"a","type":"message","role":"assistant","content":"hi","status":"completed","id":"b"}`,
			`{"id":"msg_abc_2","type":"message","role":"assistant","content":"hi","status":"completed","id":"b"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := []byte(tt.raw)
			got := outputItems(&wire.Answer{Protocol: wire.Responses, Stored: [][]byte{nil, nil, raw}[2:]}, "resp_abc")
			if len(got) != 1 {
				t.Fatalf("got %d items, want 1", len(got))
			}
			one := withRecallID(raw, "resp_abc", 2)
			if string(one) != tt.want {
				t.Errorf("got  %s\nwant %s", one, tt.want)
			}
			if ref := viaSJSON(raw, "resp_abc", 2); string(one) != string(ref) {
				t.Errorf("got  %s\nsjson %s", one, ref)
			}
			if !gjson.ValidBytes(one) {
				t.Errorf("invalid JSON: %s", one)
			}
			if string(raw) != tt.raw {
				t.Errorf("the stored item changed: %s", raw)
			}
		})
	}
}

// TestStoredResponseHasAnEmptyOutput: the Response object a stored turn
// keeps is the one the client got with its output emptied.
func TestStoredResponseHasAnEmptyOutput(t *testing.T) {
	req, err := Ingress{}.ParseRequest([]byte(`{"model":"gpt-4o","instructions":"be brief","input":"hi","tools":[{"type":"function","name":"f"}],"metadata":{"k":"v"}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.ResponseID, req.Created, req.Store = "resp_abc", 1700000000, true
	a := &wire.Answer{Protocol: wire.Responses, Stored: [][]byte{[]byte(`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hello"}]}`)},
		Model: "gpt-4o-2024", Completed: 1700000003, Usage: wire.Usage{InputTokens: 9, OutputTokens: 2}}
	want, err := sjson.SetRawBytes(AppendResponse(nil, req, a), "output", []byte("[]"))
	if err != nil {
		t.Fatal(err)
	}
	if got := AppendStoredResponse(nil, req, a); string(got) != string(want) {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
