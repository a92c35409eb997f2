package proxy_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/store/badgerstore"
	"github.com/recallproxy/recall/tokens"
	"github.com/recallproxy/recall/wire"
)

// instantUpstream answers every request at once with a fixed body (a
// completion, or an event stream), in process, so a benchmark measures
// Recall's own cost.
type instantUpstream struct {
	contentType string
	body        []byte
}

// client is a fasthttp client whose every exchange u answers, for the
// proxy (summaries use u as a net/http RoundTripper).
func (u instantUpstream) client() *fasthttp.Client {
	return &fasthttp.Client{Transport: instantTransport(u), StreamResponseBody: true}
}

type instantTransport instantUpstream

func (u instantTransport) RoundTrip(_ *fasthttp.HostClient, _ *fasthttp.Request, resp *fasthttp.Response) (bool, error) {
	resp.SetStatusCode(200)
	resp.Header.SetContentType(u.contentType)
	resp.SetBodyRaw(u.body)
	return false, nil
}

const benchAnswer = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"Sure: here is a short answer of a few words, as a model would give it.","refusal":null},"finish_reason":"stop"}],"usage":{"prompt_tokens":900,"completion_tokens":18,"total_tokens":918}}`

// BenchmarkChatPath is the whole in-process chat-completions path (auth,
// parse, load, merge, curate, rewrite, forward, parse the answer, commit
// without fsync) against an instant upstream, for conversations holding
// 10, 1,000 and 10,000 turns under a budget that about 10 turns fill: the
// cost must not grow with what is stored beyond what is sent.
func BenchmarkChatPath(b *testing.B) {
	for _, tc := range []struct{ turns, convs int }{{10, 512}, {1000, 8}, {10000, 2}} {
		b.Run(fmt.Sprintf("turns=%d", tc.turns), func(b *testing.B) {
			srv, store := benchServer(b, 1100)
			prefill(b, store, tc.convs, tc.turns)
			runChat(b, srv, tc.convs)
		})
	}
}

func benchServer(b testing.TB, budget int) (*proxy.Server, *badgerstore.Store) {
	return benchServerWith(b, budget, instantUpstream{"application/json", []byte(benchAnswer)})
}

func benchServerWith(b testing.TB, budget int, upstream instantUpstream, adjust ...func(*proxy.Config)) (*proxy.Server, *badgerstore.Store) {
	b.Helper()
	g := config.DefaultGlobal()
	g.Defaults.History.BudgetTokens = budget
	return benchServerOf(b, g, upstream, adjust...)
}

// benchServerOf is a server of g's tenants on a store of its own (see
// newServer), sending to upstream, its counter's encoder built before
// timing.
func benchServerOf(tb testing.TB, g config.Global, upstream instantUpstream, adjust ...func(*proxy.Config)) (*proxy.Server, *badgerstore.Store) {
	tb.Helper()
	counter := &tokens.Counter{}
	counter.Text(tokens.O200k, "build the encoder before timing")
	return newServer(tb, g, func(c *proxy.Config) {
		c.Counter, c.Client = counter, upstream.client()
		for _, f := range adjust {
			f(c)
		}
	})
}

const benchUser = `Could you look at the figures from last week again and tell me whether the trend holds? I would also like a short note on what changed since the previous report, and whether we should adjust the forecast for the next quarter.`

// prefill writes turns whole turns into each of convs conversations
// directly through the store, as the proxy would have (see prefillIn).
func prefill(b testing.TB, store *badgerstore.Store, convs, turns int) {
	b.Helper()
	prefillIn(b, store, wire.ChatCompletions, convs, turns)
}

func benchRequest(conv string) *fasthttp.RequestCtx {
	var req fasthttp.Request
	req.Header.SetMethod("POST")
	req.SetRequestURI("/v1/chat/completions")
	req.Header.Set("Authorization", "Bearer sk-bench")
	req.Header.Set("X-Conversation-ID", conv)
	req.Header.SetContentType("application/json")
	req.SetBodyString(`{"model":"gpt-4o","messages":[{"role":"system","content":"You are a careful analyst. Answer briefly."},{"role":"user","content":"` + benchUser + `"}]}`)
	rc := &fasthttp.RequestCtx{}
	rc.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, nil)
	return rc
}

// storedCount is the number of messages stored for conv under the bench
// and fuzz credential's namespace (0 for an invalid id).
func storedCount(tb testing.TB, store *badgerstore.Store, conv string) int {
	tb.Helper()
	if !history.ValidID(conv) {
		return 0
	}
	n := 0
	for _, key := range []string{"sk-fuzz", "sk-bench"} {
		k := history.Key{Tenant: auth.Namespace("default", key), Conversation: conv}
		if err := store.Messages(context.Background(), k, 0, true, func(history.Message) bool { n++; return true }); err != nil {
			tb.Fatal(err)
		}
	}
	return n
}

// BenchmarkChatPath50 is the request path the load script measures: 50
// stored turns of realistic size, all within the default budget, with
// the window cache recall serve runs by default (cache=serve) and
// without one (cache=off: every load reads Badger).
func BenchmarkChatPath50(b *testing.B) {
	for _, wc := range windowCaches {
		b.Run(wc.name, func(b *testing.B) {
			srv, store := benchServerWith(b, 16000, instantUpstream{"application/json", []byte(benchAnswer)}, wc.adjust...)
			prefill(b, store, benchConvs(b), 50)
			runChat(b, srv, benchConvs(b))
		})
	}
}

// windowCaches are the stores BenchmarkChatPath50,
// BenchmarkChatPathStream50 and the other protocols' path benchmarks
// (runPath) run with: the window cache of recall serve's
// defaults (cache_mb, and 2 MB an entry) in front of Badger, and Badger
// alone.
var windowCaches = []struct {
	name   string
	adjust []func(*proxy.Config)
}{
	{"cache=serve", []func(*proxy.Config){func(cfg *proxy.Config) {
		cfg.Store = history.NewCache(cfg.Store, config.DefaultGlobal().CacheMB<<20, 2<<20)
	}}},
	{"cache=off", nil},
}

// runChat sends b.N requests round-robin over convs conversations, each
// read to its end (for a stream: relayed and committed), and reports the
// process's CPU time a request (cpu-ns/op: the store's background work
// included, and less disturbed than ns/op by other processes on a shared
// machine).
func runChat(b *testing.B, srv *proxy.Server, convs int) {
	reqs := make([]*fasthttp.RequestCtx, convs)
	for i := range reqs {
		reqs[i] = benchRequest(fmt.Sprintf("conv-%d", i))
	}
	serveRoundRobin(b, srv, reqs)
}

// serveRoundRobin times b.N requests, reqs in turn (each through
// serveOK), and reports their allocations and CPU time a request.
func serveRoundRobin(b *testing.B, srv *proxy.Server, reqs []*fasthttp.RequestCtx) {
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	defer func() { b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op") }()
	for i := 0; i < b.N; i++ {
		serveOK(b, srv, reqs[i%len(reqs)])
	}
}

func benchStream() []byte {
	var b bytes.Buffer
	chunk := func(delta string) {
		fmt.Fprintf(&b, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", delta)
	}
	chunk(`{"role":"assistant","content":""}`)
	for _, w := range strings.Fields("Sure: here is a short answer of a few words, as a model would give it.") {
		chunk(`{"content":"` + w + ` "}`)
	}
	b.WriteString("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
	b.WriteString("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[],\"usage\":{\"prompt_tokens\":900,\"completion_tokens\":18,\"total_tokens\":918}}\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// BenchmarkChatPathStream50 is BenchmarkChatPath50 with a streamed answer:
// relay, reassembly and the commit after the last event.
func BenchmarkChatPathStream50(b *testing.B) {
	for _, wc := range windowCaches {
		b.Run(wc.name, func(b *testing.B) {
			srv, store := benchServerWith(b, 16000, instantUpstream{"text/event-stream", benchStream()}, wc.adjust...)
			prefill(b, store, benchConvs(b), 50)
			runChat(b, srv, benchConvs(b))
		})
	}
}

// benchConvs is how many conversations the path benchmarks spread b.N
// requests over: one for every 16 requests, between 64 and the load
// script's 1,000. Each request then plans a conversation of 50 to about
// 90 turns up to 40000x, as the load script's do, where 64 conversations
// had grown to 200 turns each at 10000x and 675 at 40000x, past the
// budget. More than 1,000 of 60 KB outgrow recall serve's default window
// cache (128 MB) and measure Badger's reads instead.
func benchConvs(b *testing.B) int {
	return min(max(64, (b.N+15)/16), 1000)
}
