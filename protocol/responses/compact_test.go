package responses

import (
	"errors"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/wire"
)

func TestParseCompact(t *testing.T) {
	tests := []struct {
		name, body  string
		code, param string // the error's ("": none)
		msgs        int
	}{
		{"the suite's compact-response", `{"model":"m","prompt_cache_key":"k","input":[{"type":"message","role":"user","content":"a"},{"type":"message","role":"assistant","content":"b"}]}`, "", "", 2},
		{"no model", `{"input":[{"type":"message","role":"user","content":"Compact this conversation."}]}`, "missing_required_parameter", "model", 0},
		{"a null model", `{"model":null,"input":"x"}`, "missing_required_parameter", "model", 0},
		{"a model that is not a string", `{"model":1,"input":"x"}`, "invalid_type", "model", 0},
		{"no input: the named conversation's", `{"model":"m","previous_response_id":"resp_1"}`, "", "", 0},
		{"a null input", `{"model":"m","input":null}`, "", "", 0},
		{"a bad item", `{"model":"m","input":[{"type":"message","role":"robot","content":"x"}]}`, "invalid_value", "input[0].role", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := ParseCompact([]byte(tc.body))
			var e *apierr.Error
			switch {
			case tc.code == "" && err != nil:
				t.Fatalf("got %v, want no error", err)
			case tc.code != "" && (!errors.As(err, &e) || e.Code != tc.code || e.Param != tc.param || e.Status != 400):
				t.Fatalf("got %v, want 400 %s on %s", err, tc.code, tc.param)
			case tc.code == "" && len(req.Messages) != tc.msgs:
				t.Errorf("messages: got %d, want %d", len(req.Messages), tc.msgs)
			}
		})
	}
}

func TestCompactionItems(t *testing.T) {
	item := AppendCompactionItem(nil, "cmp_1", "recall_cmp_x")
	if c, ok := Compaction(item); !ok || c != "recall_cmp_x" {
		t.Errorf("Compaction(%s): got %q, %v", item, c, ok)
	}
	if r := (Codec{}).Role(item); r != wire.RoleAssistant {
		t.Errorf("a compaction item's role: got %q, want assistant", r)
	}
	for _, raw := range []string{`{"role":"user","content":"x"}`, `{"type":"reasoning","encrypted_content":"e"}`} {
		if _, ok := Compaction([]byte(raw)); ok {
			t.Errorf("%s taken for a compaction item", raw)
		}
	}
	type userCase struct{ in, content string }
	for _, tc := range []userCase{
		{`{"role":"user","content":"hi"}`, `[{"type":"input_text","text":"hi"}]`},
		{`{"type":"message","role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"u"}]}`,
			`[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"u"}]`},
	} {
		out := gjson.ParseBytes(AppendUserItem(nil, "msg_1", []byte(tc.in)))
		if out.Get("id").Str != "msg_1" || out.Get("type").Str != "message" || out.Get("status").Str != "completed" ||
			out.Get("role").Str != "user" || out.Get("content").Raw != tc.content {
			t.Errorf("AppendUserItem(%s): got %s, want its content as %s", tc.in, out.Raw, tc.content)
		}
	}
	if !UserText([]byte(`{"role":"user","content":"x"}`)) || UserText([]byte(`{"role":"assistant","content":"x"}`)) {
		t.Error("UserText: a user message not told from an assistant's")
	}
}

func TestAppendCompacted(t *testing.T) {
	b := AppendCompacted(nil, "resp_1", 7, [][]byte{AppendCompactionItem(nil, "cmp_1", "c")}, wire.Usage{InputTokens: 10, OutputTokens: 3})
	if !gjson.ValidBytes(b) {
		t.Fatalf("not JSON: %s", b)
	}
	want := `{"id":"resp_1","object":"response.compaction","created_at":7,"output":[{"id":"cmp_1","type":"compaction","encrypted_content":"c"}],` +
		`"usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":0},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":13}}`
	if string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}
