package respstate

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/history"
	_ "github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/wire"
)

// A stored message is listed as OpenAI lists items: an id derived from
// its seq, a type, a status, a string content as one text part; a chat
// message with tool calls is several items.
func TestItemsOfStoredMessages(t *testing.T) {
	tests := []struct {
		name string
		msg  history.Message
		want []string // id, type, text of each item
	}{
		{"easy user message", history.Message{Seq: 4, Protocol: wire.Responses, Raw: []byte(`{"role":"user","content":"hi"}`)},
			[]string{"msg_4 message input_text:hi"}},
		{"assistant message", history.Message{Seq: 5, Protocol: wire.Responses, Raw: []byte(`{"type":"message","role":"assistant","content":"yo","id":"msg_up"}`)},
			[]string{"msg_5 message output_text:yo"}},
		{"function call", history.Message{Seq: 6, Protocol: wire.Responses, Raw: []byte(`{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}`)},
			[]string{"fc_6 function_call :"}},
		{"function call output", history.Message{Seq: 7, Protocol: wire.Responses, Raw: []byte(`{"type":"function_call_output","call_id":"c1","output":"ok"}`)},
			[]string{"fco_7 function_call_output :"}},
		{"chat assistant with a tool call", history.Message{Seq: 8, Protocol: wire.ChatCompletions,
			Raw: []byte(`{"role":"assistant","content":"let me see","tool_calls":[{"id":"c2","type":"function","function":{"name":"f","arguments":"{}"}}]}`)},
			[]string{"msg_8 message output_text:let me see", "fc_8_1 function_call :"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, it := range itemsOf(&tt.msg) {
				r := gjson.ParseBytes(it)
				if r.Get("status").Str != "completed" {
					t.Errorf("item %s: no status completed", it)
				}
				c := r.Get("content.0")
				got = append(got, r.Get("id").Str+" "+r.Get("type").Str+" "+c.Get("type").Str+":"+c.Get("text").Str)
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			for _, it := range itemsOf(&tt.msg) {
				id := gjson.GetBytes(it, "id").Str
				if seq, ok := itemSeq(id); !ok || seq != tt.msg.Seq {
					t.Errorf("itemSeq(%q): got %d, %v; want %d", id, seq, ok, tt.msg.Seq)
				}
			}
		})
	}
	for _, id := range []string{"", "msg", "msg_", "msg_x", "msg_0", "msg_-1"} {
		if seq, ok := itemSeq(id); ok {
			t.Errorf("itemSeq(%q): got %d, want no item", id, seq)
		}
	}
}

// Lists are OpenAI's shape, newest first by default, paged by limit and
// after.
func TestPageOfItems(t *testing.T) {
	var items [][]byte
	for _, id := range []string{"a", "b", "c"} {
		items = append(items, []byte(`{"id":"`+id+`"}`))
	}
	ids := func(l itemList) string {
		var s []string
		for _, d := range l.Data {
			s = append(s, gjson.GetBytes(d, "id").Str)
		}
		return strings.Join(s, ",")
	}
	tests := []struct {
		name, order string
		limit       int
		after       string
		want        string
		more        bool
		first, last string
	}{
		{"desc", "", 20, "", "c,b,a", false, "c", "a"},
		{"asc", "asc", 20, "", "a,b,c", false, "a", "c"},
		{"limit", "desc", 2, "", "c,b", true, "c", "b"},
		{"after", "desc", 2, "b", "a", false, "a", "a"},
		{"after the last", "asc", 2, "c", "", false, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := page(items, tt.order, tt.limit, tt.after)
			if got := ids(l); got != tt.want || l.HasMore != tt.more || l.Object != "list" {
				t.Errorf("got %q more %v, want %q more %v", got, l.HasMore, tt.want, tt.more)
			}
			first, last := "", ""
			if l.FirstID != nil {
				first, last = *l.FirstID, *l.LastID
			}
			if first != tt.first || last != tt.last {
				t.Errorf("first/last: got %q/%q, want %q/%q", first, last, tt.first, tt.last)
			}
		})
	}
}
