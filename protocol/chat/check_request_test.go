package chat

import (
	"reflect"
	"strings"
	"testing"
)

// checkOnlyBodies are bodies whose rejection comes before or beside the
// message checks: the depth bound, JSON syntax, UTF-8, the root's type,
// wrong-typed and duplicated fields; and valid bodies, which both accept.
var checkOnlyBodies = []string{
	`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello."}]}`,
	`{"model":null,"stream":true,"n":2,"max_tokens":5,"max_completion_tokens":null,"tools":[{"type":"function"}],"messages":[` + requestUser + `]}`,
	`{"messages":[` + requestUser + `],"x":` + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth) + `}`,
	`{"messages":[` + requestUser + `],"x":` + strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1) + `}`,
	// Too deep and not JSON either: the depth error first.
	`{"messages":[` + strings.Repeat("[", MaxDepth+1),
	`{"messages":[` + requestUser + `],}`,
	`{"messages":[{"role":"user","content":"caf` + "\xe9" + `"}]}`,
	`{"model":"` + "\xff" + `","messages":[` + requestUser + `]}`,
	// Not UTF-8 and not JSON: the JSON error.
	`{"messages":[{"role":"user","content":"` + "\xff" + `"}]`,
	`"messages"`,
	`null`,
	`{"n":"2","messages":[` + requestUser + `]}`,
	`{"stream":true,"stream":false,"messages":[` + requestUser + `]}`,
	`{"tools":[],"tools":null,"messages":[` + requestUser + `]}`,
	`{"max_tokens":1,"max_tokens":2,"messages":[` + requestUser + `]}`,
	`{"max_completion_tokens":"1","messages":[` + requestUser + `]}`,
	`{"messages":[` + requestUser + `,{"role":"assistant","content":null,"tool_calls":[{"id":"c","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}]}`,
	// At and past the depth bound in a message and at the root.
	`{"messages":[{"role":"user","content":"x","x":` + strings.Repeat("[", MaxDepth-3) + strings.Repeat("]", MaxDepth-3) + `}]}`,
	`{"messages":[{"role":"user","content":"x","x":` + strings.Repeat("[", MaxDepth-2) + strings.Repeat("]", MaxDepth-2) + `}]}`,
	`{"messages":[` + requestUser + `],"x":` + strings.Repeat(`{"a":`, MaxDepth-1) + `1` + strings.Repeat("}", MaxDepth-1) + `}`,
	`{"messages":[` + requestUser + `],"x":` + strings.Repeat(`{"a":`, MaxDepth) + `1` + strings.Repeat("}", MaxDepth) + `}`,
	// Numbers, literals and strings at the edges of the grammar.
	`{"messages":[` + requestUser + `],"x":01}`,
	`{"messages":[` + requestUser + `],"x":1.}`,
	`{"messages":[` + requestUser + `],"x":-}`,
	`{"messages":[` + requestUser + `],"x":1e}`,
	`{"messages":[` + requestUser + `],"x":-0.0e-0}`,
	`{"messages":[` + requestUser + `],"x":tru}`,
	`{"messages":[` + requestUser + `],"x":nul}`,
	`{"messages":[{"role":"user","content":"a` + "\x01" + `b"}]}`,
	`{"messages":[{"role":"user","content":"\ud800"}]}`,
	`{"messages":[{"role":"user","content":"\u00"}]}`,
	`{"messages":[{"role":"user","content":"\x"}]}`,
	`{"messages":[{"role":"user","content":"` + "\xed\xa0\x80" + `"}]}`,
	`{"messages":[{"role":"user","content":"` + "\xef\xbf\xbd" + `"}]}`,
	`{"messages":[` + requestUser + `]} x`,
	`{"messages":[` + requestUser + `]}` + " \n\t",
	`{}`,
	`{"messages":[{}]}`,
	`{"messages":[{"role":"user","role":"user","content":"x"}]}`,
	`{"messages":[{"role":"user","content":"x","content":"y"}]}`,
	`{"messages":[{"role":"user","content":"x"}],"messages":[]}`,
	`{"messages":[{"role":"assistant","content":""}]}`,
	`{"messages":[{"role":"tool","content":"x"}]}`,
	`{"messages":[{"role":null,"content":"x"}]}`,
	`{"messages":[{"role":"user","content":null}]}`,
	`{"messages":[{"role":"user","content":"x"},]}`,
	`{"messages":[{"role":"user","content":"x"}],"n":null,"stream":null,"max_tokens":1.5}`,
	// Content parts, tool calls and tool results the one pass reads:
	// each broken in one place.
	`{"messages":[{"role":"user","content":[{"type":"text"}]}]}`,
	`{"messages":[{"role":"user","content":[{"type":"text","text":null}]}]}`,
	`{"messages":[{"role":"user","content":[{"text":"a"}]}]}`,
	`{"messages":[{"role":"user","content":[{"type":1,"text":"a"}]}]}`,
	`{"messages":[{"role":"user","content":["a"]}]}`,
	`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":"u"}]}]}`,
	`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]}`,
	`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":1}}]}]}`,
	`{"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":[]}]}]}`,
	`{"messages":[{"role":"user","content":[{"type":"refusal","refusal":false}]}]}`,
	`{"messages":[{"role":"user","content":{"type":"text","text":"a"}}]}`,
	`{"messages":[{"role":"assistant","tool_calls":[]}]}`,
	`{"messages":[{"role":"assistant","tool_calls":{}}]}`,
	`{"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{}"}}]}]}`,
	`{"messages":[{"role":"assistant","tool_calls":[{"id":"c"}]}]}`,
	`{"messages":[{"role":"assistant","tool_calls":[{"id":"c","function":null}]}]}`,
	`{"messages":[{"role":"assistant","tool_calls":[{"id":"c","function":"f"}]}]}`,
	`{"messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f"}}]}]}`,
	`{"messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":{}}}]}]}`,
	`{"messages":[{"role":"assistant","tool_calls":["c"]}]}`,
	`{"messages":[{"role":"assistant","content":null,"refusal":1}]}`,
	`{"messages":[{"role":"assistant","content":null}]}`,
	`{"messages":[{"role":"tool","tool_call_id":1,"content":"x"}]}`,
	`{"messages":[{"role":"tool","tool_call_id":null,"content":"x"}]}`,
	`{"messages":[{"role":"tool","tool_call_id":"c","content":null}]}`,
	`{"messages":[{"role":"tool","tool_call_id":"c"}]}`,
}

// The plain path validates with CheckRequest and the recorded path with
// ParseRequest: for every body, valid or not, both must answer the same
// error, so that a bad request gets the same answer with or without
// history.
func TestCheckRequestSameErrorAsParseRequest(t *testing.T) {
	bodies := append([]string(nil), checkOnlyBodies...)
	for _, tt := range badRequests {
		bodies = append(bodies, tt.body)
	}
	rejected := 0
	for _, body := range bodies {
		_, want := ParseRequest([]byte(body))
		_, got := CheckRequest([]byte(body))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("body %.80q: CheckRequest got %v, want ParseRequest's %v", body, got, want)
		}
		if want != nil {
			rejected++
		}
	}
	if rejected < len(badRequests)+8 {
		t.Errorf("got %d bodies rejected, want at least %d: the table lost its bad bodies", rejected, len(badRequests)+8)
	}
}

// FuzzCheckRequest checks CheckRequest against ParseRequest on any body.
func FuzzCheckRequest(f *testing.F) {
	for _, body := range checkOnlyBodies {
		f.Add([]byte(body))
	}
	for _, tt := range badRequests {
		f.Add([]byte(tt.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, want := ParseRequest(body)
		stream, got := CheckRequest(body)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("body %q: CheckRequest got %v, want ParseRequest's %v", body, got, want)
		}
		if want == nil && stream != r.Stream {
			t.Errorf("body %q: CheckRequest's stream %v, ParseRequest's %v", body, stream, r.Stream)
		}
	})
}

// CheckRequest is the plain path's validation: a valid body costs no
// allocation, however many messages it has (strings with escapes aside:
// gjson unescapes those it visits).
func TestCheckRequestAllocations(t *testing.T) {
	const msg = `{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u"}}]},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"c","content":"r"}`
	for _, n := range []int{1, 16} {
		body := []byte(`{"model":"gpt-4o-mini","stream":false,"messages":[` + strings.TrimSuffix(strings.Repeat(msg+",", n), ",") + `]}`)
		allocs := testing.AllocsPerRun(100, func() {
			if _, err := CheckRequest(body); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%d messages: got %v allocations to check a valid body, want 0", 3*n, allocs)
		}
	}
}

// CheckRequest answers the common requests in one pass (plainValid) and
// leaves the rest to ParseRequest's checks: the one pass must cover what
// plain clients send, and anything it declines must still be accepted.
func TestCheckRequestOnePassCoversCommonRequests(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		onePass bool
	}{
		{"one user message", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello in one short sentence, please."}]}`, true},
		{"a conversation resent", `{"model":"gpt-4o","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello!"},{"role":"developer","content":"d"},{"role":"user","content":"Again"}]}`, true},
		{"other fields", ` {"model":null,"stream":true,"stream_options":{"include_usage":true},"temperature":0.2,"top_p":1e-1,"n":1,"max_tokens":null,"max_completion_tokens":800,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"messages":[{"role":"user","name":"bob","content":"x"}],"metadata":{"a":[1,-2.5E+3,true,false,null]}} `, true},
		{"escapes and unicode in content", `{"messages":[{"role":"user","content":"caf\u00e9 \"quoted\"\n\ud83d\ude00 ` + "é 😀" + `"}]}`, true},
		{"content parts", `{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}]}`, true},
		{"parts of every kind", `{"messages":[{"role":"user","content":[{"text":"a","type":"text"},{"type":"image_url","image_url":{"detail":"low","url":"data:image/png;base64,AAAA"}},{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}},{"type":"file","file":{"file_id":"f"}},{"type":"refusal","refusal":"no"}]},{"role":"tool","tool_call_id":"c","content":[]}]}`, true},
		{"tool calls and results", `{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}},{"function":{"arguments":"{\"a\":1}","name":"g"},"id":"d"}]},{"role":"tool","tool_call_id":"c","content":"r"},{"role":"tool","tool_call_id":"d","content":"s"}]}`, true},
		{"assistant refusal", `{"messages":[{"role":"assistant","refusal":"no"}]}`, true},
		{"assistant tool_calls null and content", `{"messages":[{"role":"assistant","content":"x","tool_calls":null,"refusal":null}]}`, true},
		{"an escaped key", `{"mod\u0065l":"m","messages":[{"role":"user","content":"x"}]}`, false},
		{"an escaped role", `{"messages":[{"role":"us\u0065r","content":"x"}]}`, false},
		{"an escaped part type", `{"messages":[{"role":"user","content":[{"type":"t\u0065xt","text":"a"}]}]}`, false},
		{"assistant audio", `{"messages":[{"role":"assistant","audio":{"id":"a"}}]}`, false},
		{"a repeated tool_call_id", `{"messages":[{"role":"tool","tool_call_id":"a","tool_call_id":"b","content":"x"}]}`, false},
		{"a repeated part text", `{"messages":[{"role":"user","content":[{"type":"text","text":1,"text":"a"}]}]}`, false},
		{"a repeated function name", `{"messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","name":1,"arguments":"{}"}}]}]}`, false},
		{"tool_calls on a user message", `{"messages":[{"role":"user","content":"x","tool_calls":[{"id":1}]}]}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, got := plainValid([]byte(tt.body)); got != tt.onePass {
				t.Errorf("plainValid: got %v, want %v", got, tt.onePass)
			}
			r, _ := ParseRequest([]byte(tt.body))
			if stream, err := CheckRequest([]byte(tt.body)); err != nil || stream != r.Stream {
				t.Errorf("CheckRequest: got %v, %v, want %v, nil", stream, err, r.Stream)
			}
		})
	}
}
