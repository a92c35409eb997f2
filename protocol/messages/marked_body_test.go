package messages

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/recallproxy/recall/wire"
)

// markedBodyRequests are Messages requests AppendMarkedBody must mark
// as MarkHistoryEnd marks the body AppendBody writes: string and block
// contents, every slot taken or one left, the name in text only, a
// message that takes no mark or has one, a second "messages" member.
var markedBodyRequests = []string{
	`{"model":"m","max_tokens":5,"system":"s","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}],"stream":true}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"text","text":"b"},{"type":"tool_use","id":"t","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r"}]}]}`,
	hinted,
	strings.Replace(hinted, `"cache_control":{"type":"ephemeral"},`, ``, 1),
	`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"cache_control cache_control cache_control cache_control cache_control"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}]},{"role":"assistant","content":[{"type":"thinking","thinking":"x","signature":"s"}]},{"role":"user","content":"c"}]}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"a"}],"messages":[{"role":"user","content":"b"},{"role":"assistant","content":"c"},{"role":"user","content":"d"}]}`,
}

// TestAppendMarkedBodyIsMarkHistoryEnd: for every message index, in
// range or not, AppendMarkedBody writes the body AppendBody writes with
// MarkHistoryEnd's mark, reports whether it placed one, and leaves msgs
// as they were; a request from another protocol too.
func TestAppendMarkedBodyIsMarkHistoryEnd(t *testing.T) {
	for _, raw := range markedBodyRequests {
		req, err := Ingress{}.ParseRequest([]byte(raw))
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		for _, proto := range []wire.Protocol{wire.Messages, wire.ChatCompletions} {
			req.Protocol = proto
			for last := -1; last <= len(req.Messages); last++ {
				checkMarkedBody(t, req, last)
			}
		}
	}
}

// checkMarkedBody fails t if AppendMarkedBody of req's messages, marked
// at last, is not MarkHistoryEnd's mark of AppendBody's body.
func checkMarkedBody(t *testing.T, req *wire.Request, last int) {
	t.Helper()
	plain, err := Upstream{}.AppendBody(nil, req, req.Instructions, req.Messages)
	if err != nil {
		t.Fatal(err)
	}
	want := MarkHistoryEnd(slices.Clip(plain), last)
	wantMarked := len(want) != len(plain)
	msgs := make([][]byte, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = bytes.Clone(m)
	}
	for _, dst := range [][]byte{nil, make([]byte, 0, len(plain)+256)} {
		got, marked, err := Upstream{}.AppendMarkedBody(dst, req, req.Instructions, msgs, last)
		if err != nil || string(got) != string(want) || marked != wantMarked {
			t.Errorf("%s, message %d: got %s, %v, %v; want %s, %v, nil", req.Protocol, last, got, marked, err, want, wantMarked)
		}
		for i, m := range msgs {
			if !bytes.Equal(m, req.Messages[i]) {
				t.Fatalf("message %d modified: %s", i, m)
			}
		}
	}
}

// BenchmarkAppendMarkedBody writes the body of a Messages request whose
// context is 50 stored turns of prose (as the proxy's
// BenchmarkMessagesPath50 sends) with the history's end marked.
func BenchmarkAppendMarkedBody(b *testing.B) {
	req, err := Ingress{}.ParseRequest([]byte(`{"model":"m","max_tokens":1024,"system":"You are a careful analyst.","messages":[{"role":"user","content":"` + proseUser + `"}]}`))
	if err != nil {
		b.Fatal(err)
	}
	msgs := make([][]byte, 0, 101)
	for range 50 {
		msgs = append(msgs, []byte(`{"role":"user","content":"`+proseUser+`"}`),
			[]byte(`{"role":"assistant","content":"`+strings.Repeat("The trend holds. ", 12)+`"}`))
	}
	msgs = append(msgs, req.Messages...)
	dst := make([]byte, 0, 64<<10)
	b.ReportAllocs()
	for b.Loop() {
		if _, marked, err := (Upstream{}).AppendMarkedBody(dst, req, req.Instructions, msgs, 99); !marked || err != nil {
			b.Fatal(marked, err)
		}
	}
}

const proseUser = `Could you look at the figures from last week again and tell me whether the trend holds? I would also like a short note on what changed since the previous report, and whether we should adjust the forecast for the next quarter.`
