package upstreamtest

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/tidwall/gjson"
)

// dialResponses opens a WebSocket on the fake's /v1/responses.
func dialResponses(t *testing.T, s *Server) *websocket.Conn {
	t.Helper()
	h := http.Header{"Authorization": {"Bearer sk-ws"}, "Openai-Beta": {"responses_websockets=2026-02-06"}}
	c, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(s.URL(), "http")+"/responses", h)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	resp.Body.Close()
	t.Cleanup(func() { c.Close() })
	return c
}

// exchange sends msg and reads the events that answer it, up to the one
// that ends a response (response.completed or an error event).
func exchange(t *testing.T, c *websocket.Conn, msg string) []gjson.Result {
	t.Helper()
	if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		t.Fatalf("send: %v", err)
	}
	var evs []gjson.Result
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		typ, b, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("read after %d events: %v", len(evs), err)
		}
		if typ != websocket.TextMessage {
			t.Fatalf("got a message of type %d, want text", typ)
		}
		ev := gjson.ParseBytes(b)
		evs = append(evs, ev)
		if k := ev.Get("type").Str; k == "response.completed" || k == "error" {
			return evs
		}
	}
}

// TestResponsesWebSocketToolLoop: a tool round on one socket, the second
// message continuing the first response by previous_response_id with only
// the tool's output, as Codex sends it. Each event is one text message,
// numbered as the HTTP stream numbers them; the fake records each message
// as a request of its own with the items the previous response carried.
func TestResponsesWebSocketToolLoop(t *testing.T) {
	s := NewTB(t)
	s.Enqueue(Reply{ToolCalls: []ToolCall{{ID: "call_w", Name: "weather", Arguments: `{"city":"Paris"}`}}}, Reply{Content: "Sunny."})
	c := dialResponses(t, s)
	tools := `"tools":[{"type":"function","name":"weather","parameters":{"type":"object"}}]`
	first := exchange(t, c, `{"type":"response.create","model":"gpt-4o-mini","store":false,"input":"weather?",`+tools+`}`)
	for i, ev := range first {
		if n := ev.Get("sequence_number").Int(); n != int64(i) {
			t.Errorf("%s: sequence_number %d, want %d", ev.Get("type").Str, n, i)
		}
	}
	done := first[len(first)-1]
	if got := done.Get("type").Str; got != "response.completed" {
		t.Fatalf("first: got %s, want response.completed: %s", got, done.Raw)
	}
	id := done.Get("response.id").Str
	if fc := done.Get("response.output.0"); fc.Get("type").Str != "function_call" || fc.Get("call_id").Str != "call_w" {
		t.Fatalf("first: got output %s, want the call", done.Get("response.output").Raw)
	}

	second := exchange(t, c, `{"type":"response.create","model":"gpt-4o-mini","store":false,"previous_response_id":"`+id+
		`","input":[{"type":"function_call_output","call_id":"call_w","output":"22C"}],`+tools+`}`)
	done = second[len(second)-1]
	if got := done.Get("response.output.0.content.0.text").Str; got != "Sunny." {
		t.Fatalf("second: got %s, want the scripted answer", done.Raw)
	}
	if got := done.Get("response.previous_response_id").Str; got != id {
		t.Errorf("second: previous_response_id %q, want %q", got, id)
	}

	reqs := s.Requests()
	if len(reqs) != 2 || s.Upgrades() != 1 {
		t.Fatalf("got %d requests on %d sockets, want 2 on 1", len(reqs), s.Upgrades())
	}
	for _, r := range reqs {
		if !r.WebSocket || r.Method != http.MethodGet || r.Path != "/v1/responses" || r.Header.Get("Authorization") != "Bearer sk-ws" || r.Rejected != nil {
			t.Errorf("recorded: websocket %v %s %s auth %q rejected %v", r.WebSocket, r.Method, r.Path, r.Header.Get("Authorization"), r.Rejected)
		}
	}
	var types []string
	for _, m := range reqs[1].Messages {
		g := gjson.ParseBytes(m)
		types = append(types, g.Get("type").Str+g.Get("role").Str)
	}
	if got, want := strings.Join(types, ","), "user,function_call,function_call_output"; got != want {
		t.Errorf("second message's items: got %s, want %s", got, want)
	}
	if !gjson.GetBytes(reqs[1].Body, "previous_response_id").Exists() {
		t.Errorf("second message recorded without its previous_response_id: %s", reqs[1].Body)
	}
}

// TestResponsesWebSocketRefusals: a message the HTTP route would refuse is
// refused with the same error, as an error event carrying its status; so
// is one that is not a response.create, or whose previous_response_id is
// not the socket's last response (the fake keeps no other). A refusal
// takes no scripted reply, keeps the socket open, and forgets the last
// response (a failed turn's chain cannot go on).
func TestResponsesWebSocketRefusals(t *testing.T) {
	s := NewTB(t)
	s.Enqueue(Reply{Content: "scripted"})
	c := dialResponses(t, s)
	ok := exchange(t, c, `{"type":"response.create","model":"gpt-4o-mini","input":"hi"}`)
	id := ok[len(ok)-1].Get("response.id").Str
	for _, tc := range []struct {
		name, msg, code, message string
	}{
		{"not json", `{"type":`, "", msgParseBody},
		{"not response.create", `{"type":"response.append","input":[]}`, "invalid_value", "Invalid value: 'response.append'"},
		{"orphan tool output", `{"type":"response.create","model":"gpt-4o-mini","input":[{"type":"function_call_output","call_id":"call_x","output":"1"}]}`,
			"", "No tool call found for function call output with call_id call_x."},
		{"conversation", `{"type":"response.create","model":"gpt-4o-mini","input":"hi","conversation":"conv_1"}`, "unsupported_parameter", "'conversation' reached the upstream"},
		{"background", `{"type":"response.create","model":"gpt-4o-mini","input":"hi","background":true}`, "unsupported_parameter", "background"},
		{"forgotten previous", `{"type":"response.create","model":"gpt-4o-mini","input":"again","previous_response_id":"` + id + `"}`,
			"previous_response_not_found", "Previous response with id '" + id + "' not found."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := exchange(t, c, tc.msg)
			e := evs[len(evs)-1]
			if len(evs) != 1 || e.Get("type").Str != "error" || e.Get("status").Int() != 400 {
				t.Fatalf("got %d events ending %s, want one error event of status 400", len(evs), e.Raw)
			}
			if got := e.Get("error.message").Str; !strings.Contains(got, tc.message) || e.Get("error.code").Str != tc.code {
				t.Errorf("got error %s, want code %q and a message with %q", e.Get("error").Raw, tc.code, tc.message)
			}
		})
	}
	if err := c.WriteMessage(websocket.BinaryMessage, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, b, err := c.ReadMessage(); err != nil || gjson.GetBytes(b, "type").Str != "error" {
		t.Fatalf("binary message: got %s, %v, want an error event", b, err)
	}
	evs := exchange(t, c, `{"type":"response.create","model":"gpt-4o-mini","input":"still there?"}`)
	if got := evs[len(evs)-1].Get("response.output.0.content.0.text").Str; got != "echo: still there?" {
		t.Errorf("after the refusals: got %q, want the echo (the scripted reply was taken by the first message)", got)
	}
	if n := len(s.Requests()); n != 9 {
		t.Errorf("recorded %d messages, want 9", n)
	}
}

// TestResponsesWebSocketWarmup: generate false answers a response with no
// output and takes no scripted reply; a later message continues it.
func TestResponsesWebSocketWarmup(t *testing.T) {
	s := NewTB(t)
	s.Enqueue(Reply{Content: "scripted"})
	c := dialResponses(t, s)
	evs := exchange(t, c, `{"type":"response.create","model":"gpt-4o-mini","generate":false,"input":[{"role":"developer","content":"be brief"}]}`)
	var types []string
	for _, ev := range evs {
		types = append(types, ev.Get("type").Str)
	}
	done := evs[len(evs)-1]
	if got, want := strings.Join(types, ","), "response.created,response.in_progress,response.completed"; got != want || done.Get("response.output.#").Int() != 0 {
		t.Fatalf("warmup: got %s with output %s, want %s and no output", got, done.Get("response.output").Raw, want)
	}
	evs = exchange(t, c, `{"type":"response.create","model":"gpt-4o-mini","previous_response_id":"`+done.Get("response.id").Str+`","input":"hi"}`)
	if got := evs[len(evs)-1].Get("response.output.0.content.0.text").Str; got != "scripted" {
		t.Errorf("after the warmup: got %q, want the scripted reply", got)
	}
	if m := s.Last().Messages; len(m) != 2 || gjson.GetBytes(m[0], "role").Str != "developer" {
		t.Errorf("after the warmup: recorded items %s, want the warmup's then the message's", m)
	}
}

// TestResponsesWebSocketFaults: a scripted status is an error event with
// that status; a cut mid-stream closes the socket; Close closes the
// sockets still open.
func TestResponsesWebSocketFaults(t *testing.T) {
	s := NewTB(t)
	s.Enqueue(Reply{Status: http.StatusTooManyRequests}, Reply{Fault: FaultCutMidStream})
	c := dialResponses(t, s)
	evs := exchange(t, c, `{"type":"response.create","model":"gpt-4o-mini","input":"hi"}`)
	if e := evs[0]; e.Get("type").Str != "error" || e.Get("status").Int() != 429 || e.Get("error.code").Str != "rate_limit_exceeded" {
		t.Errorf("status: got %s, want an error event of status 429", e.Raw)
	}
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"type":"response.create","model":"gpt-4o-mini","input":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var n int
	var err error
	for err == nil {
		_, _, err = c.ReadMessage()
		n++
	}
	if n < 2 || websocket.IsCloseError(err) {
		t.Errorf("cut: read %d messages, then %v; want some events, then the connection gone without a close message", n-1, err)
	}

	open := dialResponses(t, s)
	exchange(t, open, `{"type":"response.create","model":"gpt-4o-mini","input":"hi"}`)
	s.Close()
	_ = open.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, _, err := open.ReadMessage(); err == nil || strings.Contains(err.Error(), "timeout") {
		t.Errorf("after Close: read %v, want the connection closed", err)
	}
}
