package chat

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/recallproxy/recall/protocol/internal/prototest"
	"github.com/recallproxy/recall/wire"
)

// benchBody returns a request body of n messages of the usual kinds.
func benchBody(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],"messages":[`)
	b.WriteString(`{"role":"system","content":"You are a helpful assistant. Answer briefly and cite sources when you can."}`)
	for i := 1; i < n; i++ {
		switch i % 4 {
		case 1:
			fmt.Fprintf(&b, `,{"role":"user","content":"Question %d: what is the weather like in Paris this afternoon, and should I bring an umbrella?"}`, i)
		case 2:
			fmt.Fprintf(&b, `,{"role":"assistant","content":null,"tool_calls":[{"id":"call_%d","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`, i)
		case 3:
			fmt.Fprintf(&b, `,{"role":"tool","tool_call_id":"call_%d","content":"{\"temp\":21,\"sky\":\"cloudy\",\"rain_chance\":0.4}"}`, i-1)
		default:
			fmt.Fprintf(&b, `,{"role":"assistant","content":"It is 21C and cloudy with a 40%% chance of rain, so an umbrella is a good idea (turn %d)."}`, i)
		}
	}
	b.WriteString(`],"temperature":0.2,"max_completion_tokens":800}`)
	return []byte(b.String())
}

// benchAccepts measures check on body, which it must accept.
func benchAccepts(b *testing.B, body []byte, check func([]byte) error) {
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := check(body); err != nil {
			b.Fatal(err)
		}
	}
}

// checkRequest is CheckRequest's error.
func checkRequest(body []byte) error {
	_, err := CheckRequest(body)
	return err
}

func BenchmarkParseRequest(b *testing.B) {
	body := benchBody(20)
	benchAccepts(b, body, func(body []byte) error {
		_, err := ParseRequest(body)
		return err
	})
}

// BenchmarkCheckRequest is the plain path's validation of a body of 20
// messages of the shape its one pass decides (plainValid): a system
// prompt and user and assistant turns of text.
func BenchmarkCheckRequest(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"model":"gpt-4o","stream":true,"messages":[{"role":"system","content":"You are a helpful assistant. Answer briefly and cite sources when you can."}`)
	for i := 1; i < 20; i++ {
		if i%2 == 1 {
			fmt.Fprintf(&sb, `,{"role":"user","content":"Question %d: what is the weather like in Paris this afternoon, and should I bring an umbrella?"}`, i)
		} else {
			fmt.Fprintf(&sb, `,{"role":"assistant","content":"It is 21C and cloudy with a 40%% chance of rain, so an umbrella is a good idea (turn %d)."}`, i)
		}
	}
	sb.WriteString(`],"temperature":0.2}`)
	body := []byte(sb.String())
	benchAccepts(b, body, checkRequest)
}

func BenchmarkAppendBody(b *testing.B) {
	r, err := ParseRequest(benchBody(20))
	if err != nil {
		b.Fatal(err)
	}
	hist, err := ParseRequest(benchBody(60))
	if err != nil {
		b.Fatal(err)
	}
	msgs := make([][]byte, len(hist.Messages))
	for i, m := range hist.Messages {
		msgs[i] = m.Raw
	}
	dst := make([]byte, 0, 64<<10)
	b.ReportAllocs()
	for b.Loop() {
		dst = r.AppendBody(dst[:0], msgs)
	}
	b.SetBytes(int64(len(dst)))
}

func BenchmarkHash(b *testing.B) {
	prototest.BenchHash(b, Hash, []prototest.Sample{
		{Name: "text", Raw: `{"role":"user","content":"Question 1: what is the weather like in Paris this afternoon, and should I bring an umbrella?"}`},
		{Name: "toolcall", Raw: `{"role":"assistant","content":null,"tool_calls":[{"id":"call_2","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]}`},
		{Name: "parts", Raw: `{"role":"user","content":[{"type":"text","text":"What is in this image?"},{"type":"image_url","image_url":{"url":"https://example.com/a.png","detail":"low"}}]}`},
		{Name: "long-text", Raw: `{"role":"assistant","content":"` + strings.Repeat("All work and no play makes Jack a dull boy. ", 100) + `"}`},
	})
}

// benchStream returns an SSE stream of n chunks: a role delta, content
// deltas, a finish chunk and a usage chunk, then [DONE].
func benchStream(n int) []byte {
	const head = `{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_f9f4fb6dbf","choices":`
	var b bytes.Buffer
	fmt.Fprintf(&b, "data: %s[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n", head)
	for i := 0; i < n-3; i++ {
		fmt.Fprintf(&b, "data: %s[{\"index\":0,\"delta\":{\"content\":\" word%d\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n", head, i)
	}
	fmt.Fprintf(&b, "data: %s[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\"}],\"usage\":null}\n\n", head)
	fmt.Fprintf(&b, "data: %s[],\"usage\":{\"prompt_tokens\":24,\"completion_tokens\":200,\"total_tokens\":224,\"prompt_tokens_details\":{\"cached_tokens\":0}}}\n\n", head)
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

func BenchmarkAssembler(b *testing.B) {
	stream := benchStream(200)
	var chunks [][]byte
	er := NewEventReader(bytes.NewReader(stream), 0)
	for {
		ev, err := er.Next()
		if err != nil {
			break
		}
		chunks = append(chunks, bytes.Clone(ev.Data))
	}
	var a Assembler
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		a.Reset()
		for _, c := range chunks {
			if err := a.Add(c); err != nil {
				b.Fatal(err)
			}
		}
		a.Reply()
	}
}

func BenchmarkEventReader(b *testing.B) {
	stream := benchStream(200)
	r := bytes.NewReader(stream)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(stream)
		er := NewEventReader(r, 0)
		for {
			if _, err := er.Next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkAssemblerToolCalls assembles n streamed tool calls sent with
// descending indexes, each in a chunk of its own: the cost must grow
// linearly with n, whatever the order of the indexes.
func BenchmarkAssemblerToolCalls(b *testing.B) {
	for _, n := range []int{2_000, 20_000} {
		chunks := make([][]byte, n)
		for i := range chunks {
			chunks[i] = fmt.Appendf(nil, `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"id":"call_%d","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`, n-1-i, i)
		}
		b.Run(fmt.Sprintf("descending=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var a Assembler
			for b.Loop() {
				a.Reset()
				for _, c := range chunks {
					if err := a.Add(c); err != nil {
						b.Fatal(err)
					}
				}
				if r := a.Reply(); len(r.Message) == 0 {
					b.Fatal("empty reply")
				}
			}
		})
	}
}

// BenchmarkCheckRequestTools is the plain path's validation of
// benchBody's 20 messages: tools, tool calls and their results.
func BenchmarkCheckRequestTools(b *testing.B) {
	body := benchBody(20)
	benchAccepts(b, body, checkRequest)
}

// BenchmarkParseReply measures reading a whole answer, as the recorded
// path does with every upstream answer that is not streamed.
func BenchmarkParseReply(b *testing.B) {
	body := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"Sure: here is a short answer of a few words, as a model would give it.","refusal":null},"finish_reason":"stop"}],"usage":{"prompt_tokens":900,"completion_tokens":18,"total_tokens":918}}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseReply(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecode decodes a user message of 1.3 KB to the canonical
// model, as the summary worker's transcripts do for each message a
// summary covers.
func BenchmarkDecode(b *testing.B) {
	raw := []byte(`{"role":"user","content":"` + strings.Repeat("the quick brown fox jumps over the lazy dog ", 28) + `"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (Codec{}).Decode(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkText is Codec.Text of the same message as BenchmarkDecode, as
// the search index's fold and the summariser's transcript read each
// stored message.
func BenchmarkText(b *testing.B) {
	raw := []byte(`{"role":"user","content":"` + strings.Repeat("the quick brown fox jumps over the lazy dog ", 28) + `"}`)
	dst := make([]byte, 0, len(raw))
	b.ReportAllocs()
	for b.Loop() {
		dst = Codec{}.Text(dst[:0], raw)
	}
}

// BenchmarkEncodeProse encodes a user message of 10 KB of prose in lines,
// as the summariser's request carries its transcript.
func BenchmarkEncodeProse(b *testing.B) {
	text := strings.Repeat("user: the quick brown fox jumps over the lazy dog, and the dog sleeps on.\n", 140)
	msgs := []wire.Message{{Role: RoleUser, Parts: []wire.Part{{Kind: wire.Text, Text: text}}}}
	dst := make([][]byte, 0, 1)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (Codec{}).Encode(dst[:0], msgs); err != nil {
			b.Fatal(err)
		}
	}
}
