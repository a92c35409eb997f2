package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// deepSeed is the nesting depth of the seeds past MaxDepth: deep enough to
// matter, shallow enough for every fuzz iteration to stay fast.
const deepSeed = 10_000

func FuzzEventReader(f *testing.F) {
	for _, s := range []string{
		"data: a\n\n",
		"data: a\r\n\r\ndata: b\r\n\r\n",
		": keepalive\n\nevent: x\ndata: 1\ndata: 2\n\n",
		"data: [DONE]",
		"\n\n\r\n",
		"data",
		"data:\r",
		"data: a\r\rdata: b\rdata: c\r\r",
		"data: a\r\ndata: b\n\rdata: c\r\n\r\n",
		"\r\r\n\n\r",
	} {
		f.Add([]byte(s), uint16(0), false)
		f.Add([]byte(s), uint16(8), true)
	}
	if files, err := sseFiles(); err == nil {
		for _, sf := range files {
			f.Add(sf.data, uint16(0), false)
		}
	}
	f.Fuzz(func(t *testing.T, in []byte, max uint16, oneByte bool) {
		var r io.Reader = bytes.NewReader(in)
		if oneByte {
			r = iotest.OneByteReader(r)
		}
		er := NewEventReader(r, int(max))
		var raw []byte
		for {
			ev, err := er.Next()
			if errors.Is(err, ErrEventTooLarge) {
				return
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("got error %v, want io.EOF or ErrEventTooLarge", err)
			}
			if len(ev.Raw) == 0 {
				t.Fatal("got an empty event, want at least one byte")
			}
			if max > 0 && len(ev.Raw) > int(max) {
				t.Fatalf("got an event of %d bytes, want at most %d", len(ev.Raw), max)
			}
			if want := refData(ev.Raw); !bytes.Equal(ev.Data, want) {
				t.Fatalf("Data of %q: got %q, want %q", ev.Raw, ev.Data, want)
			}
			raw = append(raw, ev.Raw...)
		}
		if !bytes.Equal(raw, in) {
			t.Fatalf("concatenated Raw: got %q, want the input %q", raw, in)
		}
	})
}

// refData is a slow, obvious reading of an event's data field. Its lines
// end in "\r\n", "\n" or "\r".
func refData(raw []byte) []byte {
	var rows [][]byte
	lines := strings.Split(strings.ReplaceAll(strings.ReplaceAll(string(raw), "\r\n", "\n"), "\r", "\n"), "\n")
	for _, l := range lines {
		line := []byte(l)
		name, value, found := bytes.Cut(line, []byte(":"))
		if string(name) != "data" {
			continue
		}
		if found {
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		rows = append(rows, value)
	}
	return bytes.Join(rows, []byte("\n"))
}

func FuzzHash(f *testing.F) {
	for _, s := range []string{
		`{"role":"user","content":"hi"}`,
		`{"role":"user","content":[{"type":"text","text":"hi"}]}`,
		`{"role":"user","content":[{"type":"image_url","image_url":{"url":"u","detail":null}},{"type":"text","text":"<b>&amp;</b>"}]}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\": [1, 2.50, 1e3]}"}}]}`,
		`{"role":"tool","tool_call_id":"c1","content":"r\u00e9sultat \ud83d\ude00"}`,
		`{"role":"user","content":"a","content":"b","name":""}`,
		`{"role":"user","content":[{"type":"x","n":-0,"m":12345678901234567890,"o":{"a":null}}]}`,
		// Nesting past MaxDepth, in content and inside the arguments string.
		`{"role":"user","content":[{"type":"x","x":` + strings.Repeat("[", deepSeed) + strings.Repeat("]", deepSeed) + `}]}`,
		`{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"` + strings.Repeat("[", deepSeed) + `"}}]}`,
		// Cache hints and per-request ids, which the canonical form ignores.
		`{"id":"m1","role":"user","content":[{"type":"text","text":"hi","id":"p1","cache_control":{"type":"ephemeral"}}]}`,
		`{"role":"user","cache_control":{"type":"ephemeral"},"content":[{"type":"x","x":{"cache_control":null,"id":"kept"}},{"id":"p2"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		h := Hash(raw) // never panics, valid or not
		if !json.Valid(raw) || !utf8.Valid(raw) || CheckDepth(raw) != nil {
			return // too deep hashes by raw bytes
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return
		}
		// hashesAsRaw checks that v, encoded again, hashes as raw did.
		hashesAsRaw := func(what string, v any) {
			enc, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if got := Hash(enc); got != h {
				t.Fatalf("Hash %s: got %x for %s, want %x as for %s", what, got, enc, h, raw)
			}
		}
		hashesAsRaw("after re-encoding", v)
		// Replayed without its cache hints, it is still JSON and still
		// the same message.
		if bare := WithoutCacheHints(raw); !json.Valid(bare) || Hash(bare) != h {
			t.Fatalf("WithoutCacheHints(%s) = %s: valid %v, hash %x, want valid JSON with hash %x", raw, bare, json.Valid(bare), Hash(bare), h)
		}
		// Without its cache hints and item ids the message hashes the same.
		if !stripIgnored(v) {
			return
		}
		hashesAsRaw("without cache hints and ids", v)
	})
}

// stripIgnored removes from a decoded message what Hash ignores: every
// "cache_control" member at any depth, the message's "id" and its content
// parts' "id". It reports whether it removed anything.
func stripIgnored(v any) bool {
	removed := stripKey(v, "cache_control")
	m, ok := v.(map[string]any)
	if !ok {
		return removed
	}
	if _, ok := m["id"]; ok {
		delete(m, "id")
		removed = true
	}
	parts, _ := m["content"].([]any)
	for _, p := range parts {
		if pm, ok := p.(map[string]any); ok {
			if _, ok := pm["id"]; ok {
				delete(pm, "id")
				removed = true
			}
		}
	}
	return removed
}

// stripKey removes every member named key from v, at any depth.
func stripKey(v any, key string) bool {
	removed := false
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v[key]; ok {
			delete(v, key)
			removed = true
		}
		for _, e := range v {
			removed = stripKey(e, key) || removed
		}
	case []any:
		for _, e := range v {
			removed = stripKey(e, key) || removed
		}
	}
	return removed
}

func FuzzAppendBody(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`,
		` { "tools" : [ {"type":"function"} ] , "messages" : [ {"role":"system","content":"s"} , {"role":"user","content":[{"type":"text","text":"x"}]} ] , "x" : null } `,
		`{"messages":[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"a","content":"r"}],"n":2}`,
		`{"m\u0065ssages":[{"role":"user","content":"x"}],"meta":{"messages":1}}`,
		string(nested(deepSeed, false)),
		string(nested(deepSeed, true)),
		string(nested(MaxDepth-1, true)),
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, body []byte, pick uint8) {
		r, err := ParseRequest(body)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got error %T %v, want *Error", err, err)
			}
			return
		}
		// Replace the messages with a reordered, resized selection of
		// themselves plus one new message.
		var msgs [][]byte
		for i := range int(pick)%4 + 1 {
			msgs = append(msgs, r.Messages[(i*int(pick)+i)%len(r.Messages)].Raw)
		}
		msgs = append(msgs, []byte(`{"role":"user","content":"new"}`))
		orig := bytes.Clone(body)
		out := r.AppendBody(nil, msgs)
		if !bytes.Equal(body, orig) {
			t.Fatal("AppendBody changed the request body")
		}
		if !gjson.ValidBytes(out) {
			t.Fatalf("got invalid JSON %s", out)
		}
		got, err := ParseRequest(out)
		if err != nil {
			t.Fatalf("ParseRequest(result): %v", err)
		}
		if len(got.Messages) != len(msgs) {
			t.Fatalf("got %d messages, want %d", len(got.Messages), len(msgs))
		}
		for i, m := range got.Messages {
			if !bytes.Equal(m.Raw, msgs[i]) {
				t.Fatalf("messages[%d]: got %s, want %s", i, m.Raw, msgs[i])
			}
		}
		if a, b := otherFields(body), otherFields(out); a != b {
			t.Fatalf("other top-level fields: got %q, want %q", b, a)
		}
	})
}

// otherFields lists every top-level key and raw value except messages.
func otherFields(body []byte) string {
	var b []byte
	gjson.ParseBytes(body).ForEach(func(key, value gjson.Result) bool {
		if key.Str != "messages" {
			b = append(append(append(append(b, key.Raw...), ':'), value.Raw...), '\n')
		}
		return true
	})
	return string(b)
}

func FuzzAssembler(f *testing.F) {
	f.Add("Hello \"world\"\n", "ref", "{\"a\": 1}")
	f.Add("\x00\xff\u2028<&>", "", "")
	f.Add("", "", "{")
	f.Fuzz(func(t *testing.T, content, refusal, args string) {
		delta := map[string]any{"content": content, "refusal": refusal}
		if args != "" {
			delta["tool_calls"] = []any{map[string]any{"index": 0, "id": "c1", "type": "function", "function": map[string]any{"name": "f", "arguments": args}}}
		}
		chunk, err := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": delta}}})
		if err != nil {
			t.Fatal(err)
		}
		var a Assembler
		if err := a.Add(chunk); err != nil {
			t.Fatalf("Add(%s): %v", chunk, err)
		}
		msg := a.Reply().Message
		var got struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			Refusal   string  `json:"refusal"`
			ToolCalls []struct {
				Function struct{ Arguments string } `json:"function"`
			} `json:"tool_calls"`
		}
		if err := json.Unmarshal(msg, &got); err != nil {
			t.Fatalf("assembled message %s is not valid JSON: %v", msg, err)
		}
		// encoding/json turned invalid UTF-8 into U+FFFD on the way in,
		// so compare with what it decoded, not with the raw inputs.
		var want struct{ Content, Refusal, Args string }
		json.Unmarshal(mustMarshal(t, content), &want.Content)
		json.Unmarshal(mustMarshal(t, refusal), &want.Refusal)
		json.Unmarshal(mustMarshal(t, args), &want.Args)
		if got.Content != nil && *got.Content != want.Content || got.Content == nil && want.Content != "" {
			t.Errorf("content: got %v, want %q", got.Content, want.Content)
		}
		if got.Refusal != want.Refusal {
			t.Errorf("refusal: got %q, want %q", got.Refusal, want.Refusal)
		}
		if args != "" && (len(got.ToolCalls) != 1 || got.ToolCalls[0].Function.Arguments != want.Args) {
			t.Errorf("tool calls: got %+v, want arguments %q", got.ToolCalls, want.Args)
		}
	})
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func FuzzCheckDepth(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,{"b":"[{\\\"]"}]}`,
		`["\\"` + strings.Repeat(",[", MaxDepth) + `]`,
		strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth),
		strings.Repeat("{\"a\":", MaxDepth+1),
		string(nested(deepSeed, false)),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		want := error(nil)
		if refDepth(in) > MaxDepth {
			want = ErrTooDeep
		}
		if got := CheckDepth(in); got != want {
			t.Fatalf("CheckDepth(%q): got %v, want %v", in, got, want)
		}
	})
}

// refDepth is a slow, obvious reading of the deepest nesting in b: a byte
// at a time, a flag for being in a string and one for an escape.
func refDepth(b []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}
