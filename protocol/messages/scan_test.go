package messages

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// quickBodies are requests as clients commonly send them: quickParse
// decides each.
var quickBodies = []string{
	`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
	" {\n \"model\" : \"m\" ,\t\"max_tokens\": 1024 ,\r\n\"messages\" : [ { \"role\" : \"user\" , \"content\" : [ { \"type\" : \"text\" , \"text\" : \"hi\" } ] } ] } \n",
	`{"model":"claude-sonnet-4-5","max_tokens":999999999,"stream":true,"system":"Be brief.","messages":[{"role":"user","content":"héllo \u00e9 \"quoted\" ✓"}]}`,
	`{"model":"m","max_tokens":5,"stream":false,"system":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"text","text":"b"}],"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","max_tokens":5,"system":null,"metadata":{"user_id":"u"},"temperature":0.2,"top_p":1,"stop_sequences":["\n\nHuman:"],"top_k":5,"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","max_tokens":5,"metadata":null,"stop_sequences":null,"temperature":null,"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","max_tokens":5,"tools":[{"name":"f","description":"d","input_schema":{"type":"object","properties":{"q":{"type":"string"}}}},{"type":"web_search_20250305","name":"web_search"}],"tool_choice":{"type":"any"},"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","max_tokens":5,"tools":[{"type":"custom","name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"f"},"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","max_tokens":5,"thinking":{"type":"enabled","budget_tokens":2048},"messages":[{"role":"user","content":"hi"},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"tool_use","id":"toolu_1","name":"f","input":{"q":[1,{"x":null}],"deep":{"a":{"b":[true,false,-1.5e-3]}}}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"r"}],"is_error":false},{"type":"text","text":"go on"}]},` +
		`{"role":"assistant","content":[{"type":"redacted_thinking","data":"xyz"},{"type":"text","text":"done"}]}]}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},{"type":"document","source":{"type":"text","media_type":"text/plain","data":"doc"}}]}]}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"system","content":"in place"},{"role":"user","content":"hi"},{"role":"system","content":[{"type":"text","text":"again"}]}]}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[]},{"content":"x","role":"assistant","extra":{"k":[]}}]}`,
	`{"messages":[{"role":"user","content":"last members first"}],"max_tokens":7,"model":"m"}`,
}

// slowBodies are requests quickParse leaves to parseRequest, valid or
// not.
var slowBodies = []string{
	`{"model":"m","model":"n","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
	`{"mod\u0065l":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"\u006d","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":5,"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
	`{"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","max_tokens":5}`,
	`{"model":"m","max_tokens":1e3,"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","max_tokens":5.0,"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","max_tokens":-1,"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","max_tokens":1234567890,"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","max_tokens":"5","messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","max_tokens":5,"max_tokens":6,"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","max_tokens":5,"stream":null,"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","max_tokens":5,"stream":true,"stream":false,"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","max_tokens":5,"messages":[]}`,
	`{"model":"m","max_tokens":5,"messages":{}}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"a"}],"messages":[{"role":"user","content":"b"}]}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"tool","content":"hi"}]}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"us\u0065r","content":"hi"}]}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"user","role":"assistant","content":"hi"}]}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"user"}]}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":null}]}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"a","content":"b"}]}`,
	`{"model":"m","max_tokens":5,"messages":[{"r\u006fle":"user","content":"hi"}]}`,
	`{"model":"m","max_tokens":5,"messages":["hi"]}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":["hi"]}]}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"text":"x"}]}]}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":5}]}]}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"te\u0078t","text":"x"}]}]}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","type":"image"}]}]}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result"}]}]}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":1}]}]}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","tool_use_id":"b"}]}]}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","name":"f","input":{}}]}]}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","input":{}}]}]}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":null,"input":{}}]}]}`,
	`{"model":"m","max_tokens":5,"system":5,"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","max_tokens":5,"system":[{"type":"image"}],"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","max_tokens":5,"system":"a","system":"b","messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","max_tokens":5,"tools":[{"name":"f"}],"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","max_tokens":5,"tools":{},"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","max_tokens":5,"tool_choice":{"type":"maybe"},"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","max_tokens":5,"temperature":"hot","messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","max_tokens":5,"top_p":[],"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","max_tokens":5,"stop_sequences":[1],"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","max_tokens":5,"metadata":"x","messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","max_tokens":5,"metadata":{},"metadata":{},"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]} x`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}],}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"h` + "\xff" + `i"}]}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"x":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}`,
	`[]`,
	``,
}

// TestQuickParseDecidesCommonRequests: the requests clients commonly
// send take the one pass, and it answers the Request parseRequest does.
func TestQuickParseDecidesCommonRequests(t *testing.T) {
	fixture, err := os.ReadFile("testdata/request_agent.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range append([]string{string(fixture)}, quickBodies...) {
		got, ok := quickParse([]byte(body))
		if !ok {
			t.Errorf("not decided in one pass: %s", body)
			continue
		}
		want, err := parseRequest([]byte(body))
		if err != nil {
			t.Errorf("one pass took a body parseRequest refuses (%v): %s", err, body)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("one pass: %+v\nparseRequest: %+v\nbody: %s", got, want, body)
		}
	}
}

// TestQuickParseLeavesTheRestToParseRequest: what the one pass cannot
// decide (a repeated or escaped member, a number to convert, an invalid
// request) goes to parseRequest, whose answer ParseRequest returns.
func TestQuickParseLeavesTheRestToParseRequest(t *testing.T) {
	for _, body := range slowBodies {
		if _, ok := quickParse([]byte(body)); ok {
			t.Errorf("decided in one pass: %s", body)
		}
		got, gotErr := Ingress{}.ParseRequest([]byte(body))
		want, wantErr := parseRequest([]byte(body))
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotErr, wantErr) {
			t.Errorf("ParseRequest %v, %v; parseRequest %v, %v: %s", got, gotErr, want, wantErr, body)
		}
	}
}

// FuzzQuickParse: whatever the one pass decides, parseRequest accepts
// and reads the same way.
func FuzzQuickParse(f *testing.F) {
	fixture, _ := os.ReadFile("testdata/request_agent.json")
	f.Add(fixture)
	for _, b := range quickBodies {
		f.Add([]byte(b))
	}
	for _, b := range slowBodies {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := quickParse(body)
		if !ok {
			return
		}
		want, err := parseRequest(body)
		if err != nil {
			t.Fatalf("one pass took a body parseRequest refuses (%v): %q", err, body)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("one pass: %+v\nparseRequest: %+v\nbody: %q", got, want, body)
		}
	})
}
