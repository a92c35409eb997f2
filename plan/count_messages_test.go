package plan

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/png"
	"testing"
	"unicode/utf8"

	"github.com/recallproxy/recall/protocol/gemini"
	"github.com/recallproxy/recall/protocol/messages"
	_ "github.com/recallproxy/recall/protocol/responses"
	"github.com/recallproxy/recall/tokens"
	"github.com/recallproxy/recall/wire"
)

var (
	_ selfCounter = messages.Codec{}
	_ selfCounter = gemini.Codec{}
)

// messagesCorpus holds Messages API messages of every shape the codec
// reads: text, blocks, tool_use, tool_result, thinking, images,
// documents, and what Decode refuses.
func messagesCorpus(t testing.TB) []string {
	var img bytes.Buffer
	if err := png.Encode(&img, image.NewGray(image.Rect(0, 0, 1200, 700))); err != nil {
		t.Fatal(err)
	}
	pngData := base64.StdEncoding.EncodeToString(img.Bytes())
	return []string{
		`{"role":"user","content":"Hello, how are you today?"}`,
		`{"role":"user","content":""}`,
		`{"role":"user"}`,
		`{"role":"user","content":null}`,
		`{"role":"user","content":42}`,
		`{"role":"user","content":{"type":"text"}}`,
		`{"role":"robot","content":"hi"}`,
		`{"content":"hi"}`,
		`[1,2]`,
		`"text"`,
		``,
		`{"role":"user","content":[]}`,
		`{"role":"system","content":"You are terse."}`,
		`{"role":"system","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`,
		`{"role":"assistant","content":"The answer is 4."}`,
		`{"role":"assistant","content":[{"type":"text","text":"one"},{"type":"text","text":" two"},{"type":"text","text":""}]}`,
		`{"role":"user","content":[{"type":"text"}]}`,
		`{"role":"user","content":[{"type":"text","text":7}]}`,
		`{"role":"user","content":[{"type":"text","text":"caf\u00e9 \"quoted\" \\ tab\t \ud83d\ude00 \ud800 <b>&amp;</b>","cache_control":{"type":"ephemeral"}}]}`,
		`{"role":"user","content":"日本語のテキストです。\n\n  spaces   and\r\nlines"}`,
		`{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + pngData + `"}},{"type":"text","text":"what is this?"}]}`,
		`{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"bm90IGFuIGltYWdl"}}]}`,
		`{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image,png","data":"` + pngData + `"}}]}`,
		`{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://example.com/cat.png"}}]}`,
		`{"role":"user","content":[{"type":"image","source":{"type":"url"}}]}`,
		`{"role":"user","content":[{"type":"image","source":{"type":"file","file_id":"file_1"}}]}`,
		`{"role":"assistant","content":[{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}]}`,
		`{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0xLjQK"},"title":"a.pdf"},{"type":"text","text":"summarise"}]}`,
		`{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"plain words"}}]}`,
		`{"role":"user","content":[{"type":"document","source":{"type":"text","data":"no media type"}}]}`,
		`{"role":"user","content":[{"type":"document","source":{"type":"url","url":"https://example.com/a.pdf"}},{"type":"text","text":"read it"}]}`,
		`{"role":"user","content":[{"type":"document","source":{"type":"url","url":"data:application/pdf;base64,JVBERi0="}}]}`,
		`{"role":"user","content":[{"type":"document","source":{"type":"file","file_id":"file_011"}},{"type":"thinking","thinking":"x","signature":"s"}]}`,
		`{"role":"user","content":[{"type":"document","source":{"type":"file"}}]}`,
		`{"role":"user","content":[{"type":"document","source":{"type":"content","content":[{"type":"text","text":"chunk"}]}}]}`,
		`{"role":"assistant","content":[{"type":"document","source":{"type":"text","data":"in an answer"}}]}`,
		`{"role":"assistant","content":[{"type":"thinking","thinking":"Let me think about this carefully.","signature":"EqQBCkYIBxgCKkBsig"},{"type":"text","text":"Done."}]}`,
		`{"role":"assistant","content":[{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"}]}`,
		`{"role":"assistant","content":[{"type":"thinking","thinking":"only thinking","signature":"sig"}]}`,
		`{"role":"assistant","content":[{"type":"text","text":"Let me check."},{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"city":"Paris","units":"c"}}]}`,
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_01","name":"a","input":{}},{"type":"tool_use","id":"toolu_02","name":"b","input": { "q" : "x <y> & z" } }]}`,
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_03","name":"no_input"}]}`,
		`{"role":"assistant","content":[{"type":"tool_use","id":7,"name":null,"input":[1,"two"]}]}`,
		`{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"go"}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]},{"type":"text","text":"found"}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"18 degrees, cloudy"}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":[{"type":"text","text":"line one"},{"type":"image","source":{"type":"url","url":"https://x/y.png"}},{"type":"text","text":"line two"}]},{"type":"tool_result","tool_use_id":"toolu_02","content":"","is_error":true}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01"}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":{"a":{"type":"text","text":"obj"}}}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"ok"},{"type":"text","text":"and now this"}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"ok"},{"type":"document","source":{"type":"url","url":"https://example.com/a.pdf"}}]}`,
		`{"role":"assistant","content":[{"type":"tool_result","tool_use_id":"toolu_9","content":"misplaced"}]}`,
		`{"role":"user","content":[1,"two",null,{"no":"type"}]}`,
		`{"role":"user","content":[{"type":"text","text":"unterminated"`,
		"{\"role\":\"user\",\"content\":\"bad \xff\xfe utf-8\"}",
		"{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\",\"input\":{\"k\":\"\xc3\"}}]}",
	}
}

// TestCountMessagesAsChat checks that a Messages message counts exactly
// as it did through its chat-completions rendition, in both encodings,
// so the budget decides as before.
func TestCountMessagesAsChat(t *testing.T) {
	var c tokens.Counter
	for _, enc := range []tokens.Encoding{tokens.O200k, tokens.CL100k} {
		for _, raw := range messagesCorpus(t) {
			got, ok := messages.Codec{}.Tokens(&c, enc, []byte(raw))
			if !ok {
				if utf8.ValidString(raw) {
					t.Errorf("%s: Tokens(%s) left valid UTF-8 to the chat rendition", enc, raw)
				}
				got = Count(&c, enc, wire.Messages, []byte(raw))
			}
			want := countAsChat(&c, enc, wire.Messages, []byte(raw))
			if got != want {
				t.Errorf("%s: Count(%s) = %d, want %d", enc, raw, got, want)
			}
		}
	}
}

// FuzzCountMessages checks the same of any bytes.
func FuzzCountMessages(f *testing.F) {
	for _, raw := range messagesCorpus(f) {
		f.Add([]byte(raw))
	}
	var c tokens.Counter
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, enc := range []tokens.Encoding{tokens.O200k, tokens.CL100k} {
			got := Count(&c, enc, wire.Messages, raw)
			want := countAsChat(&c, enc, wire.Messages, raw)
			if got != want {
				t.Fatalf("%s: Count(%q) = %d, want %d", enc, raw, got, want)
			}
		}
	})
}

// BenchmarkCountMessages counts each message of the corpus in turn, from
// its own bytes (own) and through its chat-completions rendition (chat).
func BenchmarkCountMessages(b *testing.B) {
	var raws [][]byte
	for _, raw := range messagesCorpus(b) {
		raws = append(raws, []byte(raw))
	}
	var c tokens.Counter
	for _, tt := range []struct {
		name  string
		count func(Counter, tokens.Encoding, wire.Protocol, []byte) int
	}{{"own", Count}, {"chat", countAsChat}} {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				tt.count(&c, tokens.O200k, wire.Messages, raws[i%len(raws)])
			}
		})
	}
}

// Through a tokens.Cache, an instruction of another protocol is counted
// once per content: a repeat is a lookup, not a rendition as chat
// completions (a decode and an encode, allocating for every part).
func TestCountThroughACacheCountsOnce(t *testing.T) {
	c := tokens.NewCache(&tokens.Counter{}, 0)
	var ref tokens.Counter
	for _, tt := range []struct {
		p   wire.Protocol
		raw string
	}{
		{wire.Messages, `{"role":"user","content":[{"type":"text","text":"You are terse."},{"type":"text","text":"Answer in French."}]}`},
		{wire.Responses, `{"type":"message","role":"developer","content":[{"type":"input_text","text":"You are terse."}]}`},
		{wire.Gemini, `{"role":"user","parts":[{"text":"You are terse."},{"text":"Answer in French."}]}`},
	} {
		raw := []byte(tt.raw)
		want := Count(&ref, tokens.O200k, tt.p, raw)
		if got := Count(c, tokens.O200k, tt.p, raw); got != want {
			t.Errorf("%s: through the cache got %d, want %d", tt.p, got, want)
		}
		if got := Count(c, tokens.O200k, tt.p, raw); got != want {
			t.Errorf("%s: cached got %d, want %d", tt.p, got, want)
		}
		if allocs := testing.AllocsPerRun(50, func() { Count(c, tokens.O200k, tt.p, raw) }); allocs > 1 {
			t.Errorf("%s: a cached count allocates %.0f times, want at most 1 (the cache's key)", tt.p, allocs)
		}
	}
}
