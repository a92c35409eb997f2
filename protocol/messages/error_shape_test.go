package messages

import (
	"testing"

	"github.com/recallproxy/recall/wire"
)

// Recall's errors reach a Messages client in Anthropic's shape, its type
// the one Anthropic gives the status, and a stream that fails ends with
// Anthropic's error event; both append to what dst holds.
func TestErrorShape(t *testing.T) {
	var es wire.ErrorShaper = Ingress{}
	tests := []struct {
		name   string
		status int
		body   string
	}{
		{"bad request", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}`},
		{"rate limited", 429, `{"type":"error","error":{"type":"rate_limit_error","message":"max_tokens: Field required"}}`},
		{"upstream down", 502, `{"type":"error","error":{"type":"api_error","message":"max_tokens: Field required"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(es.AppendError([]byte("x"), tt.status, "invalid_request_error", "missing_required_parameter", "max_tokens", "max_tokens: Field required"))
			if want := "x" + tt.body; got != want {
				t.Errorf("body: got %s, want %s", got, want)
			}
			got = string(es.AppendErrorEvent([]byte("x"), tt.status, "invalid_request_error", "missing_required_parameter", "max_tokens", "max_tokens: Field required"))
			if want := "xevent: error\ndata: " + tt.body + "\n\n"; got != want {
				t.Errorf("event: got %q, want %q", got, want)
			}
		})
	}
}

// An Anthropic upstream gets the key in x-api-key, anthropic-version when
// the request names none, the end of the curated history marked for its
// cache, and tool results joined into one user message: the proxy finds
// each through the optional interfaces of wire.
func TestUpstreamQuirks(t *testing.T) {
	var up wire.Upstream = Upstream{}
	if kh, ok := up.(wire.KeyHeader); !ok || kh.KeyHeader() != "x-api-key" {
		t.Errorf("KeyHeader: got %v, want x-api-key", up)
	}
	if dh, ok := up.(wire.DefaultHeader); !ok {
		t.Error("not a wire.DefaultHeader")
	} else if name, value := dh.DefaultHeader(); name != "anthropic-version" || value != APIVersion {
		t.Errorf("DefaultHeader: got %s: %s, want anthropic-version: %s", name, value, APIVersion)
	}
	cm, ok := up.(wire.CacheMarker)
	if !ok {
		t.Fatal("not a wire.CacheMarker")
	}
	body := `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]}`
	want := `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]},{"role":"assistant","content":"yo"}]}`
	req, err := Ingress{}.ParseRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if got, marked, err := cm.AppendMarkedBody(nil, req, req.Instructions, req.Messages, 0); string(got) != want || !marked || err != nil {
		t.Errorf("AppendMarkedBody: got %s, %v, %v; want %s, true, nil", got, marked, err, want)
	}
	tj, ok := up.(wire.TurnJoiner)
	if !ok {
		t.Fatal("not a wire.TurnJoiner")
	}
	msgs := [][]byte{
		[]byte(`{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":{}},{"type":"tool_use","id":"b","name":"g","input":{}}]}`),
		[]byte(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"1"}]}`),
		[]byte(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"b","content":"2"}]}`),
	}
	for _, roles := range [][]string{nil, {wire.RoleAssistant, wire.RoleTool, wire.RoleTool}} {
		out, last := tj.JoinTurns(msgs, roles, 1)
		if len(out) != 2 || last != 1 {
			t.Fatalf("JoinTurns(roles %q): got %d messages, last %d, want 2 and 1", roles, len(out), last)
		}
		if want := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"1"},{"type":"tool_result","tool_use_id":"b","content":"2"}]}`; string(out[1]) != want {
			t.Errorf("joined (roles %q): got %s, want %s", roles, out[1], want)
		}
	}
}
