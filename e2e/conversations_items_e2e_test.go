package e2e

import (
	"testing"

	"github.com/recallproxy/recall/internal/e2etest"
)

// TestConversationItemsNoRequestCouldSendAreRefused: the Conversations API
// refuses, in OpenAI's shape and storing nothing, the items no later
// request could send (issue 48, item 4: stored, they failed every later
// request on the conversation until found and deleted): an item or a
// content part of a type the Responses API does not take, a reasoning
// item without its encrypted_content. A reasoning item with it is stored,
// and the conversation's next request goes through.
func TestConversationItemsNoRequestCouldSendAreRefused(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	st, conv := call(t, h, "rk-oa", "POST", "/v1/conversations", `{"items":[{"type":"message","role":"user","content":"hello"}]}`)
	if st != 200 {
		t.Fatalf("create: got %d %s", st, conv.Raw)
	}
	id := conv.Get("id").Str
	for _, tt := range []struct{ name, item, param string }{
		{"unknown item", `{"type":"hologram","data":"x"}`, "items[1].type"},
		{"unknown part", `{"type":"message","role":"user","content":[{"type":"input_smell","text":"x"}]}`, "items[1].content[0].type"},
		{"reasoning by id alone", `{"type":"reasoning","id":"rs_1","summary":[]}`, "items[1].encrypted_content"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"items":[{"type":"message","role":"user","content":"fine"},` + tt.item + `]}`
			st, e := call(t, h, "rk-oa", "POST", "/v1/conversations/"+id+"/items", body)
			if st != 400 || e.Get("error.type").Str != "invalid_request_error" || e.Get("error.param").Str != tt.param || e.Get("error.message").Str == "" {
				t.Errorf("add: got %d %s, want 400 invalid_request_error at %s", st, e.Raw, tt.param)
			}
			if st, e := call(t, h, "rk-oa", "POST", "/v1/conversations", body); st != 400 || e.Get("error.param").Str != tt.param {
				t.Errorf("create: got %d %s, want 400 at %s", st, e.Raw, tt.param)
			}
		})
	}
	if st, items := call(t, h, "rk-oa", "GET", "/v1/conversations/"+id+"/items", ""); st != 200 || items.Get("data.#").Int() != 1 {
		t.Errorf("after the refusals: got %d %s, want the one item stored", st, items.Raw)
	}
	if st, e := call(t, h, "rk-oa", "POST", "/v1/conversations/"+id+"/items", `{"items":[{"type":"reasoning","id":"rs_2","summary":[],"encrypted_content":"gAAAA"}]}`); st != 200 {
		t.Fatalf("a reasoning item with its encrypted_content: got %d %s", st, e.Raw)
	}
	if st, r := call(t, h, "rk-oa", "POST", "/v1/responses", `{"model":"gpt-4o","conversation":"`+id+`","input":"and now?"}`); st != 200 {
		t.Errorf("the next request: got %d %s", st, r.Raw)
	}
}
