package chat

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata")

// sseFile is one recorded-style stream under testdata/sse.
type sseFile struct {
	name string
	path string
	data []byte
}

func sseFiles() ([]sseFile, error) {
	paths, err := filepath.Glob(filepath.Join("testdata", "sse", "*.sse"))
	if err != nil {
		return nil, err
	}
	var files []sseFile
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		files = append(files, sseFile{name: strings.TrimSuffix(filepath.Base(p), ".sse"), path: p, data: data})
	}
	return files, nil
}

// goldenReply is a Reply as stored in a golden file.
type goldenReply struct {
	Message      json.RawMessage `json:"message"`
	FinishReason string          `json:"finish_reason"`
	Usage        goldenUsage     `json:"usage"`
	Model        string          `json:"model"`
	ID           string          `json:"id"`
	Done         bool            `json:"done"`
}

type goldenUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	CachedTokens     int `json:"cached_tokens"`
}

func marshalGolden(t *testing.T, r Reply, done bool) []byte {
	t.Helper()
	out, err := json.MarshalIndent(goldenReply{
		Message:      r.Message,
		FinishReason: r.FinishReason,
		Usage:        goldenUsage(r.Usage),
		Model:        r.Model,
		ID:           r.ID,
		Done:         done,
	}, "", "  ")
	if err != nil {
		t.Fatalf("marshal golden: %v (message %s)", err, r.Message)
	}
	return append(out, '\n')
}

// TestAssemblerGolden feeds every testdata/sse/*.sse stream through an
// EventReader and an Assembler and compares the reply with
// testdata/sse/*.golden.json. Run with -update to rewrite the goldens.
func TestAssemblerGolden(t *testing.T) {
	files, err := sseFiles()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("got no testdata/sse/*.sse files, want some")
	}
	var a Assembler
	for _, f := range files {
		t.Run(f.name, func(t *testing.T) {
			a.Reset()
			er := NewEventReader(bytes.NewReader(f.data), 0)
			for {
				ev, err := er.Next()
				if err != nil {
					break
				}
				if len(ev.Data) == 0 {
					continue
				}
				if err := a.Add(ev.Data); err != nil {
					t.Fatalf("Add(%s): %v", ev.Data, err)
				}
			}
			got := marshalGolden(t, a.Reply(), a.Done())
			golden := strings.TrimSuffix(f.path, ".sse") + ".golden.json"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func TestAssembler(t *testing.T) {
	tests := []struct {
		name    string
		chunks  []string
		message string
		finish  string
		done    bool
	}{
		{
			name:    "nothing at all",
			chunks:  []string{`{"id":"x","choices":[{"index":0,"delta":{"role":"assistant"}}]}`, `[DONE]`},
			message: `{"role":"assistant","content":""}`,
			done:    true,
		},
		{
			name: "text and tool call",
			chunks: []string{
				`{"choices":[{"index":0,"delta":{"role":"assistant","content":"Let me check."}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":""}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
			},
			message: `{"role":"assistant","content":"Let me check.","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
			finish:  "tool_calls",
		},
		{
			name: "tool calls without index, name fragments, missing type",
			chunks: []string{
				`{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"get_","arguments":"{\"x\""}},{"id":"b","function":{"name":"g","arguments":"{}"}}]}}]}`,
				`{"choices":[{"delta":{"tool_calls":[{"function":{"name":"weather","arguments":":1}"}}]}}]}`,
			},
			message: `{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"get_weather","arguments":"{\"x\":1}"}},{"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]}`,
		},
		{
			name: "tool call indexes out of order",
			chunks: []string{
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"g","arguments":""}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":""}}]}}]}`,
			},
			message: `{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":""}},{"id":"b","type":"function","function":{"name":"g","arguments":""}}]}`,
		},
		{
			name:    "escaping",
			chunks:  []string{`{"choices":[{"index":0,"delta":{"content":"a\"b\\c\n\t\u0001<>&\u2028é"}}]}`},
			message: `{"role":"assistant","content":"a\"b\\c\n\t\u0001<>&\u2028é"}`,
		},
		{
			name: "name, audio id and custom tool call",
			chunks: []string{
				`{"choices":[{"index":0,"delta":{"role":"assistant","name":"bot","audio":{"id":"audio_1","transcript":"Sure"}}}]}`,
				`{"choices":[{"index":0,"delta":{"audio":{"data":"UklG","transcript":"."},"tool_calls":[{"index":0,"id":"c1","type":"custom","custom":{"name":"sql","input":"SELECT"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"custom":{"input":" 1"}}]}}]}`,
			},
			message: `{"role":"assistant","name":"bot","content":null,"tool_calls":[{"id":"c1","type":"custom","custom":{"name":"sql","input":"SELECT 1"}}],"audio":{"id":"audio_1"}}`,
		},
		{
			name: "tool_calls null is no call",
			chunks: []string{
				`{"choices":[{"index":0,"delta":{"role":"assistant","content":"hi","tool_calls":null}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":{"index":0,"id":"c"}},"finish_reason":"stop"}]}`,
			},
			message: `{"role":"assistant","content":"hi"}`,
			finish:  "stop",
		},
		{
			name: "last non-null finish reason",
			chunks: []string{
				`{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"length"}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":null}]}`,
			},
			message: `{"role":"assistant","content":"x"}`,
			finish:  "length",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a Assembler
			for _, c := range tt.chunks {
				if err := a.Add([]byte(c)); err != nil {
					t.Fatalf("Add(%s): %v", c, err)
				}
			}
			r := a.Reply()
			if string(r.Message) != tt.message {
				t.Errorf("Message: got %s, want %s", r.Message, tt.message)
			}
			if !json.Valid(r.Message) {
				t.Errorf("Message: got invalid JSON %s", r.Message)
			}
			if r.FinishReason != tt.finish {
				t.Errorf("FinishReason: got %q, want %q", r.FinishReason, tt.finish)
			}
			if a.Done() != tt.done {
				t.Errorf("Done: got %v, want %v", a.Done(), tt.done)
			}
		})
	}
}

func TestAssemblerErrors(t *testing.T) {
	tests := []struct {
		name  string
		chunk string
		want  string
	}{
		{"error object", `{"error":{"message":"The server had an error","type":"server_error"}}`, "The server had an error"},
		{"error without message", `{"error":{"code":500}}`, `{"code":500}`},
		{"not json", `{"choices":[`, "not valid JSON"},
		{"not an object", `[1]`, "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a Assembler
			err := a.Add([]byte(tt.chunk))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "chat: ") {
				t.Errorf("got error %v, want one starting %q and containing %q", err, "chat: ", tt.want)
			}
		})
	}
}

func TestAssemblerReset(t *testing.T) {
	var a Assembler
	for _, c := range []string{
		`{"id":"one","model":"m1","choices":[{"index":0,"delta":{"content":"x","refusal":"r","tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":1}}`,
		`[DONE]`,
	} {
		if err := a.Add([]byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	a.Reset()
	if err := a.Add([]byte(`{"id":"two","model":"m2","choices":[{"index":0,"delta":{"content":"y"}}]}`)); err != nil {
		t.Fatal(err)
	}
	got := a.Reply()
	want := Reply{Message: []byte(`{"role":"assistant","content":"y"}`), Model: "m2", ID: "two"}
	if string(got.Message) != string(want.Message) || got.Model != want.Model || got.ID != want.ID || got.FinishReason != "" || got.Usage != (Usage{}) || a.Done() {
		t.Errorf("after Reset: got %+v (done %v), want %+v (done false)", got, a.Done(), want)
	}
}

func TestParseReply(t *testing.T) {
	const body = `{
  "id": "chatcmpl-abc",
  "object": "chat.completion",
  "created": 1741570283,
  "model": "gpt-4o-2024-08-06",
  "choices": [
    {
      "index": 1,
      "message": {"role": "assistant", "content": "second"},
      "finish_reason": "length"
    },
    {
      "index": 0,
      "message": {
        "role": "assistant",
        "content": "The image shows a wooden boardwalk.",
        "refusal": null,
        "annotations": []
      },
      "logprobs": null,
      "finish_reason": "stop"
    }
  ],
  "usage": {
    "prompt_tokens": 1117,
    "completion_tokens": 46,
    "total_tokens": 1163,
    "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0}
  }
}`
	tests := []struct {
		name    string
		body    string
		want    Reply
		wantErr string
	}{
		{
			name: "choice with index 0",
			body: body,
			want: Reply{
				Message:      []byte(`{"role":"assistant","content":"The image shows a wooden boardwalk."}`),
				FinishReason: "stop",
				Usage:        Usage{PromptTokens: 1117, CompletionTokens: 46, TotalTokens: 1163, CachedTokens: 1024},
				Model:        "gpt-4o-2024-08-06",
				ID:           "chatcmpl-abc",
			},
		},
		{
			name: "first of a repeated member, index 0 as a string",
			body: `{"id":"a","id":"b","choices":[{"index":"1","message":{"role":"assistant","content":"one"}},{"index":"0","message":{"role":"assistant","content":"zero"},"message":{"role":"assistant","content":"again"},"finish_reason":"stop","finish_reason":"length"}],"usage":{"prompt_tokens":3,"prompt_tokens":4}}`,
			want: Reply{Message: []byte(`{"role":"assistant","content":"zero"}`), FinishReason: "stop", Usage: Usage{PromptTokens: 3}, ID: "a"},
		},
		{
			name: "first choice without index",
			body: `{"id":"x","choices":[{"message":{"role":"assistant","content":"hi"}}]}`,
			want: Reply{Message: []byte(`{"role":"assistant","content":"hi"}`), ID: "x"},
		},
		{
			name: "refusal kept, response-only fields dropped",
			body: `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can\u2019t help with that.","annotations":[],"reasoning_content":"hmm"}}]}`,
			want: Reply{Message: []byte(`{"role":"assistant","content":null,"refusal":"I can’t help with that."}`)},
		},
		{
			name: "tool calls rebuilt, empty refusal dropped",
			body: `{"choices":[{"message":{"role":"assistant","content":null,"refusal":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\": 1}","strict":true},"extra":1},{"id":"call_2","type":"custom","custom":{"name":"sql","input":"SELECT 1"}}]},"finish_reason":"tool_calls"}]}`,
			want: Reply{
				Message:      []byte(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\": 1}"}},{"id":"call_2","type":"custom","custom":{"name":"sql","input":"SELECT 1"}}]}`),
				FinishReason: "tool_calls",
			},
		},
		{
			name: "tool_calls null is no call",
			body: `{"choices":[{"message":{"role":"assistant","content":"hi","tool_calls":null},"finish_reason":"stop"}]}`,
			want: Reply{Message: []byte(`{"role":"assistant","content":"hi"}`), FinishReason: "stop"},
		},
		{
			name: "audio reduced to its id",
			body: `{"choices":[{"message":{"role":"assistant","content":null,"refusal":null,"audio":{"id":"audio_abc","data":"UklGR...","expires_at":1729018505,"transcript":"Yes."}}}]}`,
			want: Reply{Message: []byte(`{"role":"assistant","content":null,"audio":{"id":"audio_abc"}}`)},
		},
		{
			name: "audio without an id dropped",
			body: `{"choices":[{"message":{"role":"assistant","content":"x","audio":{"data":"UklGR..."}}}]}`,
			want: Reply{Message: []byte(`{"role":"assistant","content":"x"}`)},
		},
		{
			name: "name kept, escapes re-encoded",
			body: `{"choices":[{"message":{"content":"caf\u00e9 \/ \ud83d\ude00","name":"bot","role":"assistant"}}]}`,
			want: Reply{Message: []byte(`{"role":"assistant","name":"bot","content":"café / 😀"}`)},
		},
		{
			name: "content parts kept",
			body: `{"choices":[{"message":{"role":"assistant","content":[{"type":"text","text":"a"}]}}]}`,
			want: Reply{Message: []byte(`{"role":"assistant","content":[{"type":"text","text":"a"}]}`)},
		},
		{
			name: "legacy function_call dropped, empty content kept",
			body: `{"choices":[{"message":{"role":"assistant","content":null,"function_call":{"name":"f","arguments":"{}"}}}]}`,
			want: Reply{Message: []byte(`{"role":"assistant","content":""}`)},
		},
		{name: "no choices", body: `{"choices":[]}`, wantErr: "no choices[0].message"},
		{name: "message not an object", body: `{"choices":[{"message":"hi"}]}`, wantErr: "no choices[0].message"},
		{name: "error body", body: `{"error":{"message":"Rate limit reached","type":"requests"}}`, wantErr: "Rate limit reached"},
		{name: "invalid json", body: `{"choices":`, wantErr: "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.body)
			got, err := ParseReply(in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want nil", err)
			}
			if string(got.Message) != string(tt.want.Message) || got.FinishReason != tt.want.FinishReason ||
				got.Usage != tt.want.Usage || got.Model != tt.want.Model || got.ID != tt.want.ID {
				t.Errorf("got %+v (message %s), want %+v (message %s)", got, got.Message, tt.want, tt.want.Message)
			}
			// The message is a copy: clobbering the body leaves it intact.
			for i := range in {
				in[i] = 'x'
			}
			if string(got.Message) != string(tt.want.Message) || got.Model != tt.want.Model || got.ID != tt.want.ID {
				t.Errorf("after reusing the body: got %s, want %s", got.Message, tt.want.Message)
			}
		})
	}
}

// Finished turns true with the first chunk that finishes any choice (the
// one a client considers the end of the answer), whichever its index.
func TestAssemblerFinished(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		want   []bool // Finished after each chunk
	}{
		{name: "one choice", chunks: []string{
			`{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}`,
			`[DONE]`,
		}, want: []bool{false, true, true, true}},
		{name: "second choice first", chunks: []string{
			`{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null},{"index":1,"delta":{"content":"b"},"finish_reason":null}]}`,
			`{"choices":[{"index":1,"delta":{},"finish_reason":"length"}]}`,
		}, want: []bool{false, true}},
		{name: "no finish", chunks: []string{`{"choices":[{"index":0,"delta":{"content":"a"}}]}`, `[DONE]`},
			want: []bool{false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a Assembler
			for i, c := range tt.chunks {
				if err := a.Add([]byte(c)); err != nil {
					t.Fatal(err)
				}
				if got := a.Finished(); got != tt.want[i] {
					t.Errorf("after chunk %d: got Finished %v, want %v", i, got, tt.want[i])
				}
			}
		})
	}
}
