package proxy_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/store/badgerstore"
	"github.com/recallproxy/recall/tokens"
	"github.com/recallproxy/recall/wire"
)

// The recorded path of the Messages and Responses APIs, as
// BenchmarkChatPath50 measures chat completions': 50 stored turns (about
// 60 KB of context) in the client's protocol, a request that sends only
// its new message, an instant upstream of the same protocol (native) or
// of chat completions (bridged). The load script's recall-sync-messages
// and recall-sync-responses rows run this path. Each runs with and
// without the window cache, as BenchmarkChatPath50 (cache=serve,
// cache=off).

const benchText = "Sure: here is a short answer of a few words, as a model would give it."

// messagesAnswer is an Anthropic Message answering benchText.
const messagesPathAnswer = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"` + benchText + `"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":900,"output_tokens":18}}`

// messagesStream is messagesPathAnswer as Anthropic streams it, a word an
// event.
func messagesStream() []byte {
	var b bytes.Buffer
	ev := func(name, data string) { fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", name, data) }
	ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":900,"output_tokens":1}}}`)
	ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	ev("ping", `{"type":"ping"}`)
	for _, w := range strings.Fields(benchText) {
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+w+` "}}`)
	}
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":18}}`)
	ev("message_stop", `{"type":"message_stop"}`)
	return b.Bytes()
}

// responsesObject is a completed Response as OpenAI renders it, output
// the answer's items ("" for the in-progress object of response.created).
func responsesObject(status, output, usage string) string {
	return `{"id":"resp_1","object":"response","created_at":1700000000,"status":"` + status + `","background":false,"error":null,"incomplete_details":null,` +
		`"instructions":null,"max_output_tokens":null,"model":"gpt-4o","output":[` + output + `],"parallel_tool_calls":true,"previous_response_id":null,` +
		`"reasoning":{"effort":null,"summary":null},"service_tier":"default","store":false,"temperature":1.0,"text":{"format":{"type":"text"}},` +
		`"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":` + usage + `,"metadata":{}}`
}

const (
	responsesItem  = `{"id":"msg_1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"` + benchText + `"}],"role":"assistant"}`
	responsesUsage = `{"input_tokens":900,"input_tokens_details":{"cached_tokens":0},"output_tokens":18,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":918}`
)

// responsesStream is the Response's event stream, a word a delta.
func responsesStream() []byte {
	var b bytes.Buffer
	seq := 0
	ev := func(typ, fields string) {
		fmt.Fprintf(&b, "event: %s\ndata: {\"type\":%q,\"sequence_number\":%d%s}\n\n", typ, typ, seq, fields)
		seq++
	}
	ref := `,"item_id":"msg_1","output_index":0,"content_index":0`
	ev("response.created", `,"response":`+responsesObject("in_progress", "", "null"))
	ev("response.in_progress", `,"response":`+responsesObject("in_progress", "", "null"))
	ev("response.output_item.added", `,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","content":[],"role":"assistant"}`)
	ev("response.content_part.added", ref+`,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}`)
	for _, w := range strings.Fields(benchText) {
		ev("response.output_text.delta", ref+`,"delta":"`+w+` ","logprobs":[]`)
	}
	ev("response.output_text.done", ref+`,"text":"`+benchText+`","logprobs":[]`)
	ev("response.content_part.done", ref+`,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":"`+benchText+`"}`)
	ev("response.output_item.done", `,"output_index":0,"item":`+responsesItem)
	ev("response.completed", `,"response":`+responsesObject("completed", responsesItem, responsesUsage))
	return b.Bytes()
}

// geminiPath is a generateContent call's path.
const geminiPath = "/v1beta/models/gemini-2.5-flash:generateContent"

// geminiPathAnswer is a GenerateContentResponse answering benchText.
const geminiPathAnswer = `{"candidates":[{"content":{"role":"model","parts":[{"text":"` + benchText + `"}]},"finishReason":"STOP","index":0}],` +
	`"usageMetadata":{"promptTokenCount":900,"candidatesTokenCount":18,"totalTokenCount":918},"modelVersion":"gemini-2.5-flash","responseId":"r_1"}`

// pathBench is one protocol pair's recorded path: the client's protocol
// and request, the tenant's upstream protocol and its instant answer.
type pathBench struct {
	client   wire.Protocol
	path     string
	upstream string // config's upstream.protocol
	answer   instantUpstream
	stream   bool
}

var (
	messagesJSON   = instantUpstream{"application/json", []byte(messagesPathAnswer)}
	messagesSSE    = instantUpstream{"text/event-stream", messagesStream()}
	responsesJSON  = instantUpstream{"application/json", []byte(responsesObject("completed", responsesItem, responsesUsage))}
	responsesSSE   = instantUpstream{"text/event-stream", responsesStream()}
	chatJSON       = instantUpstream{"application/json", []byte(benchAnswer)}
	chatSSE        = instantUpstream{"text/event-stream", benchStream()}
	geminiJSON     = instantUpstream{"application/json", []byte(geminiPathAnswer)}
	messagesNative = pathBench{client: wire.Messages, path: "/v1/messages", upstream: wire.UpstreamAnthropic, answer: messagesJSON}
)

// BenchmarkMessagesPath50 is BenchmarkChatPath50 through the Messages API
// to an Anthropic upstream.
func BenchmarkMessagesPath50(b *testing.B) { runPath(b, messagesNative) }

// BenchmarkMessagesPathStream50 is BenchmarkMessagesPath50 streamed.
func BenchmarkMessagesPathStream50(b *testing.B) {
	runPath(b, pathBench{client: wire.Messages, path: "/v1/messages", upstream: wire.UpstreamAnthropic, answer: messagesSSE, stream: true})
}

// BenchmarkResponsesPath50 is BenchmarkChatPath50 through the Responses
// API to a Responses upstream.
func BenchmarkResponsesPath50(b *testing.B) {
	runPath(b, pathBench{client: wire.Responses, path: "/v1/responses", upstream: wire.UpstreamOpenAI, answer: responsesJSON})
}

// BenchmarkResponsesPathStream50 is BenchmarkResponsesPath50 streamed.
func BenchmarkResponsesPathStream50(b *testing.B) {
	runPath(b, pathBench{client: wire.Responses, path: "/v1/responses", upstream: wire.UpstreamOpenAI, answer: responsesSSE, stream: true})
}

// BenchmarkGeminiPath50 is BenchmarkChatPath50 through Gemini's
// generateContent to a Gemini upstream (the load script's
// recall-sync-gemini row).
func BenchmarkGeminiPath50(b *testing.B) {
	runPath(b, pathBench{client: wire.Gemini, path: geminiPath, upstream: wire.UpstreamGemini, answer: geminiJSON})
}

// BenchmarkGeminiBridgedPath50 is Gemini to a chat-completions upstream
// (recall-sync-gemini-bridged).
func BenchmarkGeminiBridgedPath50(b *testing.B) {
	runPath(b, pathBench{client: wire.Gemini, path: geminiPath, upstream: wire.UpstreamOpenAI, answer: chatJSON})
}

// BenchmarkMessagesBridgedPath50 is the Messages API to a chat-completions
// upstream (the load script's recall-sync-messages-bridged row): the
// stored context translated on every request.
func BenchmarkMessagesBridgedPath50(b *testing.B) {
	runPath(b, pathBench{client: wire.Messages, path: "/v1/messages", upstream: wire.UpstreamOpenAI, answer: chatJSON})
}

// BenchmarkMessagesBridgedPathStream50 is BenchmarkMessagesBridgedPath50
// streamed: the chat stream rendered as Anthropic's events.
func BenchmarkMessagesBridgedPathStream50(b *testing.B) {
	runPath(b, pathBench{client: wire.Messages, path: "/v1/messages", upstream: wire.UpstreamOpenAI, answer: chatSSE, stream: true})
}

// BenchmarkResponsesBridgedPath50 is the Responses API to a
// chat-completions upstream (recall-sync-responses-bridged).
func BenchmarkResponsesBridgedPath50(b *testing.B) {
	runPath(b, pathBench{client: wire.Responses, path: "/v1/responses", upstream: wire.UpstreamChat, answer: chatJSON})
}

// BenchmarkResponsesBridgedPathStream50 is BenchmarkResponsesBridgedPath50
// streamed.
func BenchmarkResponsesBridgedPathStream50(b *testing.B) {
	runPath(b, pathBench{client: wire.Responses, path: "/v1/responses", upstream: wire.UpstreamChat, answer: chatSSE, stream: true})
}

// BenchmarkChatBridgedPath50 is chat completions to an Anthropic
// upstream.
func BenchmarkChatBridgedPath50(b *testing.B) {
	runPath(b, pathBench{client: wire.ChatCompletions, path: "/v1/chat/completions", upstream: wire.UpstreamAnthropic, answer: messagesJSON})
}

// BenchmarkChatBridgedPathStream50 is BenchmarkChatBridgedPath50 streamed.
func BenchmarkChatBridgedPathStream50(b *testing.B) {
	runPath(b, pathBench{client: wire.ChatCompletions, path: "/v1/chat/completions", upstream: wire.UpstreamAnthropic, answer: messagesSSE, stream: true})
}

// runPath runs pb with each of windowCaches, as BenchmarkChatPath50
// does, so that each protocol's row compares with chat's.
func runPath(b *testing.B, pb pathBench) {
	for _, wc := range windowCaches {
		b.Run(wc.name, func(b *testing.B) {
			srv, reqs := pathRequests(b, pb, benchConvs(b), wc.adjust...)
			serveRoundRobin(b, srv, reqs)
		})
	}
}

// serveOK serves rc through srv, reads its answer to the end, and fails
// on any status but 200.
func serveOK(tb testing.TB, srv *proxy.Server, rc *fasthttp.RequestCtx) {
	rc.Response.Reset()
	srv.Handle(rc)
	if err := rc.Response.BodyWriteTo(io.Discard); err != nil {
		tb.Fatal(err)
	}
	if rc.Response.StatusCode() != 200 {
		tb.Fatalf("status %d: %s", rc.Response.StatusCode(), rc.Response.Body())
	}
}

// pathRequests is pb's server (pathServer, changed by adjust) with convs
// conversations of 50 turns in pb's client protocol, and a request on
// each.
func pathRequests(tb testing.TB, pb pathBench, convs int, adjust ...func(*proxy.Config)) (*proxy.Server, []*fasthttp.RequestCtx) {
	tb.Helper()
	srv, store := pathServer(tb, pb, adjust...)
	prefillIn(tb, store, pb.client, convs, 50)
	reqs := make([]*fasthttp.RequestCtx, convs)
	for i := range reqs {
		reqs[i] = pathRequest(pb, fmt.Sprintf("conv-%d", i))
	}
	return srv, reqs
}

// pathServer is benchServerWith for pb's upstream protocol.
func pathServer(tb testing.TB, pb pathBench, adjust ...func(*proxy.Config)) (*proxy.Server, *badgerstore.Store) {
	tb.Helper()
	g := config.DefaultGlobal()
	g.Defaults.History.BudgetTokens = 16000
	g.Defaults.Upstream.Protocol = pb.upstream
	return benchServerOf(tb, g, pb.answer, adjust...)
}

// prefillIn is prefill for conversations stored in proto: the same turns,
// as {"role","content"} messages (valid in every protocol but Gemini's) or
// Gemini's {"role","parts"} contents.
func prefillIn(tb testing.TB, store *badgerstore.Store, proto wire.Protocol, convs, turns int) {
	tb.Helper()
	codec := wire.For(proto)
	var counter tokens.Counter
	user := []byte(`{"role":"user","content":"` + benchUser + `"}`)
	answer := []byte(`{"role":"assistant","content":"` + strings.Repeat("The trend holds. ", 12) + `"}`)
	if proto == wire.Gemini {
		user = []byte(`{"role":"user","parts":[{"text":"` + benchUser + `"}]}`)
		answer = []byte(`{"role":"model","parts":[{"text":"` + strings.Repeat("The trend holds. ", 12) + `"}]}`)
	}
	ut, at := counter.Message(tokens.O200k, user), counter.Message(tokens.O200k, answer)
	ns := auth.Namespace("default", "sk-bench")
	for c := range convs {
		k := history.Key{Tenant: ns, Conversation: fmt.Sprintf("conv-%d", c)}
		var version uint64
		for t := 0; t < turns; t += 50 {
			var ch history.Change
			for range min(50, turns-t) {
				ch.Append = append(ch.Append,
					history.Message{Role: "user", Protocol: proto, Raw: user, Tokens: ut, Hash: codec.Hash(user) + uint64(t)},
					history.Message{Role: "assistant", Protocol: proto, Raw: answer, Tokens: at, Hash: codec.Hash(answer) + uint64(t)})
			}
			ch.Version, ch.Now = version, time.Now().UnixNano()
			m, err := store.Commit(context.Background(), k, ch)
			if err != nil {
				tb.Fatal(err)
			}
			version = m.Version
		}
	}
}

// pathRequest is pb's client request on conv: instructions and one new
// user message, as benchRequest's chat request.
func pathRequest(pb pathBench, conv string) *fasthttp.RequestCtx {
	const instructions = "You are a careful analyst. Answer briefly."
	var req fasthttp.Request
	req.Header.SetMethod("POST")
	req.SetRequestURI(pb.path)
	req.Header.Set("X-Conversation-ID", conv)
	req.Header.SetContentType("application/json")
	stream := ""
	if pb.stream {
		stream = `,"stream":true`
	}
	switch pb.client {
	case wire.Messages:
		req.Header.Set("X-Api-Key", "sk-bench")
		req.Header.Set("Anthropic-Version", "2023-06-01")
		req.SetBodyString(`{"model":"claude-sonnet-4-5","max_tokens":1024,"system":"` + instructions + `","messages":[{"role":"user","content":"` + benchUser + `"}]` + stream + `}`)
	case wire.Gemini:
		req.Header.Set("X-Goog-Api-Key", "sk-bench")
		req.SetBodyString(`{"systemInstruction":{"parts":[{"text":"` + instructions + `"}]},"contents":[{"role":"user","parts":[{"text":"` + benchUser + `"}]}]}`)
	case wire.Responses:
		req.Header.Set("Authorization", "Bearer sk-bench")
		req.SetBodyString(`{"model":"gpt-4o","instructions":"` + instructions + `","input":[{"role":"user","content":"` + benchUser + `"}]` + stream + `}`)
	default:
		req.Header.Set("Authorization", "Bearer sk-bench")
		req.SetBodyString(`{"model":"gpt-4o","messages":[{"role":"system","content":"` + instructions + `"},{"role":"user","content":"` + benchUser + `"}]` + stream + `}`)
	}
	rc := &fasthttp.RequestCtx{}
	rc.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, nil)
	return rc
}
