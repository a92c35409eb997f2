package chat

import (
	"bytes"
	"io"
	"reflect"
	"testing"
)

// chunkCorpus is every chunk of the recorded streams and of benchStream,
// and chunks of the shapes chunk.scan reads or leaves to add.
func chunkCorpus(tb testing.TB) [][]byte {
	files, err := sseFiles()
	if err != nil {
		tb.Fatal(err)
	}
	streams := [][]byte{benchStream(6)}
	for _, f := range files {
		streams = append(streams, f.data)
	}
	var out [][]byte
	for _, stream := range streams {
		er := NewEventReader(bytes.NewReader(stream), 0)
		for {
			ev, err := er.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				tb.Fatal(err)
			}
			if d := bytes.TrimSpace(ev.Data); len(d) > 0 && string(d) != "[DONE]" {
				out = append(out, bytes.Clone(d))
			}
		}
	}
	for _, c := range []string{
		`{}`,
		`{"choices":null,"usage":null,"error":null}`,
		`{"id":"a\u00e9b","model":"m\"1","choices":[]}`,
		`{"id":7,"model":null,"choices":[{"delta":null}]}`,
		`{"choices":[{"index":0,"delta":{"content":"\u00e9\n\ud83d\ude00 \\ x","refusal":"no\tpe"}}]}`,
		`{"choices":[{"index":0,"delta":{"content":null,"refusal":3,"role":"assistant","reasoning_content":"hm"}}]}`,
		`{"choices":[{"index":1,"delta":{"content":"other"},"finish_reason":"length"}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"st\u006fp"}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"get_\u0077","arguments":"{\"a\":"}},{"id":"c2","function":{"name":"g","arguments":"1}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":3,"function":{"arguments":"}"},"extra":[1,{"x":null}]}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":null,"custom":null}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[]}}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":4}}}`,
		`{"choices":[],"usage":[1]}`,
		` { "choices" : [ { "index" : 0 , "delta" : { "content" : "spaced" } } ] } `,
		`{"choices":[{"index":0,"message":{"content":"a reply's, not a chunk's"}}]}`,
		// Left to add: duplicates, escaped names, arrays of parts, n>1,
		// errors, deep values, invalid JSON.
		`{"id":"a","id":"b"}`,
		`{"choices":[{"index":0,"delta":{"content":"a","content":"b"}}]}`,
		`{"choices":[{"index":0,"index":1,"delta":{"content":"a"}}]}`,
		`{"ch\u006fices":[{"index":0,"delta":{"content":"a"}}]}`,
		`{"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"p"}]}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{"content":"b"}}]}`,
		`{"choices":[{"index":0,"delta":{"name":"bot","audio":{"id":"au"}}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"custom":{"name":"sql","input":"S"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{},{},{},{},{}]}}]}`,
		`{"choices":[{"index":"0","delta":{"content":"a"}}]}`,
		`{"choices":[{"index":0.0,"delta":{"content":"a"}}]}`,
		`{"choices":{"0":{"delta":{"content":"a"}}}}`,
		`{"error":{"message":"overloaded"}}`,
		`{"x":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],"choices":[]}`,
		`{"choices":[{"index":0,"delta":{"content":"a"}}]`,
		"{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\x01\"}}]}",
		`{"choices":[]} {}`,
		`[]`,
	} {
		out = append(out, []byte(c))
	}
	return out
}

// chunkStates are the assembler states a chunk is read from: a new
// assembler, one that has an id, a model, text and tool calls, and one
// that has seen a finish_reason.
var chunkStates = [][]string{
	nil,
	{
		`{"id":"chatcmpl-1","model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi "}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c0","type":"function","function":{"name":"f","arguments":"{"}}]}}]}`,
	},
	{`{"choices":[{"index":0,"delta":{"content":"Done."},"finish_reason":"length"}]}`},
}

// assemblerAt returns an assembler that has read state's chunks.
func assemblerAt(tb testing.TB, state []string) *Assembler {
	var a Assembler
	for _, c := range state {
		if err := a.add([]byte(c)); err != nil {
			tb.Fatal(err)
		}
	}
	return &a
}

// readsAsGJSON checks that what addScanned reads of data, from each of
// chunkStates, is what add reads, and that a chunk it does not read
// leaves the assembler as it was. It returns whether addScanned read it.
func readsAsGJSON(t *testing.T, data []byte) (scanned bool) {
	t.Helper()
	for _, state := range chunkStates {
		fast, slow, before := assemblerAt(t, state), assemblerAt(t, state), assemblerAt(t, state)
		if !fast.addScanned(data) {
			if !reflect.DeepEqual(fast, before) {
				t.Fatalf("%s: not read in one pass, yet the assembler changed:\n%+v\nwas\n%+v", data, fast, before)
			}
			continue
		}
		scanned = true
		if err := slow.add(data); err != nil {
			t.Fatalf("%s: read in one pass, but add: %v", data, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%s: read in one pass as\n%+v\nadd reads\n%+v", data, fast, slow)
		}
		if r, w := fast.Reply(), slow.Reply(); !reflect.DeepEqual(r, w) {
			t.Fatalf("%s: Reply %+v, add's %+v", data, r, w)
		}
	}
	return scanned
}

// A chunk read in one pass leaves the assembler as the gjson read does;
// every chunk of the recorded streams is read so, and so are text, tool
// call, finish and usage chunks.
func TestScanChunkReadsAsGJSON(t *testing.T) {
	for _, data := range chunkCorpus(t) {
		if scanned := readsAsGJSON(t, data); !scanned && !leftToAdd(data) {
			t.Errorf("%s: not read in one pass", data)
		}
	}
}

// leftToAdd is the corpus's chunks after its comment: add reads them.
func leftToAdd(data []byte) bool {
	for _, c := range [][]byte{
		[]byte(`"id":"a","id"`), []byte(`"content":"a","content"`), []byte(`"index":0,"index"`),
		[]byte(`\u006fices`), []byte(`"content":[`), []byte(`},{"index":1`), []byte(`"name":"bot"`),
		[]byte(`"custom":{`), []byte(`{},{},{},{},{}`), []byte(`"index":"0"`), []byte(`"index":0.0`),
		[]byte(`"choices":{`), []byte(`"error":{`), []byte(`[[[[`), []byte("\x01"), []byte(`} {}`),
	} {
		if bytes.Contains(data, c) {
			return true
		}
	}
	return string(data) == `[]` || !bytes.HasSuffix(data, []byte("}"))
}

func FuzzScanChunk(f *testing.F) {
	for _, data := range chunkCorpus(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		readsAsGJSON(t, data)
	})
}

// replyCorpus is the chunk corpus with each delta a message (a
// non-streamed reply's shape), and replies of the shapes ParseReply
// reads or refuses.
func replyCorpus(tb testing.TB) [][]byte {
	var out [][]byte
	for _, c := range chunkCorpus(tb) {
		out = append(out, bytes.ReplaceAll(c, []byte(`"delta"`), []byte(`"message"`)))
	}
	for _, c := range []string{
		`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"Sure.","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":900,"completion_tokens":18,"total_tokens":918,"prompt_tokens_details":{"cached_tokens":768}},"service_tier":"default"}`,
		`{"choices":[{"index":1,"message":{"content":"only"},"finish_reason":"length"}]}`,
		`{"choices":[{"message":{"content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\": 1}","strict":true},"extra":1}]},"finish_reason":"tool_calls"}]}`,
		`{"choices":[{"message":{"content":"x","tool_calls":null},"delta":{"content":"ignored"}}],"error":null,"usage":null}`,
		`{"choices":[{"message":"text"}]}`,
		`{"choices":[{"message":null}]}`,
		`{"choices":[{"delta":{"content":"a chunk's, not a reply's"}}]}`,
		`{"choices":[{"finish_reason":"stop"}]}`,
		`{"choices":[]}`,
		`{"model":"m"}`,
		`{"error":{"message":"bad"},"choices":[{"message":{"content":"x"}}]}`,
	} {
		out = append(out, []byte(c))
	}
	return out
}

// replyReadsAsGJSON checks that a reply scanReply reads is the one
// parseReply reads. It returns whether scanReply read it.
func replyReadsAsGJSON(t *testing.T, body []byte) bool {
	t.Helper()
	got, ok := scanReply(body)
	if !ok {
		return false
	}
	want, err := parseReply(body)
	if err != nil {
		t.Fatalf("%s: read in one pass, but parseReply: %v", body, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: read in one pass as\n%+v\nparseReply reads\n%+v", body, got, want)
	}
	return true
}

// A reply read in one pass is the one the gjson read gives, and a reply
// of the usual shape is read so.
func TestScanReplyReadsAsGJSON(t *testing.T) {
	scanned := 0
	for _, body := range replyCorpus(t) {
		if replyReadsAsGJSON(t, body) {
			scanned++
		}
	}
	if !replyReadsAsGJSON(t, replyCorpus(t)[len(chunkCorpus(t))]) {
		t.Error("a usual chat.completion was not read in one pass")
	}
	t.Logf("%d replies read in one pass", scanned)
}

func FuzzScanReply(f *testing.F) {
	for _, body := range replyCorpus(f) {
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		replyReadsAsGJSON(t, body)
	})
}

// seamAt returns the seam's assembler after state's chunks, read with
// gjson.
func seamAt(tb testing.TB, state []string) *seamAssembler {
	var a seamAssembler
	for _, c := range state {
		if _, _, err := a.event(nil, []byte(c)); err != nil {
			tb.Fatal(err)
		}
	}
	return &a
}

// eventReadsAsGJSON checks that the seam's Event gives, for data read
// from each of chunkStates, the deltas and the state its gjson read
// gives.
func eventReadsAsGJSON(t *testing.T, data []byte) {
	t.Helper()
	for _, state := range chunkStates {
		fast, slow := seamAt(t, state), seamAt(t, state)
		got, gotDone, gotErr := fast.Event(nil, nil, data)
		want, wantDone, wantErr := slow.event(nil, data)
		if (gotErr != nil) != (wantErr != nil) || gotDone != wantDone {
			t.Fatalf("%s: Event done %v, %v; gjson's %v, %v", data, gotDone, gotErr, wantDone, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: Event deltas\n%+v\ngjson's\n%+v", data, got, want)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%s: Event left\n%+v\ngjson's read\n%+v", data, fast, slow)
		}
	}
}

// A chunk on its way to another protocol's client gives the deltas and
// the record the gjson read gives.
func TestSeamEventReadsAsGJSON(t *testing.T) {
	for _, data := range chunkCorpus(t) {
		eventReadsAsGJSON(t, data)
	}
	eventReadsAsGJSON(t, []byte(`{"choices":[{"index":0,"delta":{"reasoning_content":"think","tool_calls":[{"function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`))
	eventReadsAsGJSON(t, []byte(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":7}]}}]}`))
	eventReadsAsGJSON(t, []byte(" [DONE] "))
}

func FuzzSeamEvent(f *testing.F) {
	for _, data := range chunkCorpus(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		eventReadsAsGJSON(t, data)
	})
}
