package proxy_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/store/badgerstore"
	"github.com/recallproxy/recall/tokens"
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

func (u instantUpstream) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{
		StatusCode: 200,
		Header:     http.Header{"Content-Type": {u.contentType}},
		Body:       io.NopCloser(bytes.NewReader(u.body)),
		Request:    r,
	}, nil
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
	set, err := config.LoadTenants(g, func(string) (string, bool) { return "", false })
	if err != nil {
		b.Fatal(err)
	}
	store, err := badgerstore.Open(b.TempDir(), badgerstore.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	var counter tokens.Counter
	counter.Text(tokens.O200k, "build the encoder before timing")
	cfg := proxy.Config{
		Counter: &counter,
		Tenants: proxy.StaticTenants{Set: set},
		Store:   store,
		Client:  upstream.client(),
	}
	for _, f := range adjust {
		f(&cfg)
	}
	srv, err := proxy.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return srv, store
}

const benchUser = `Could you look at the figures from last week again and tell me whether the trend holds? I would also like a short note on what changed since the previous report, and whether we should adjust the forecast for the next quarter.`

// prefill writes turns whole turns into each of convs conversations
// directly through the store, as the proxy would have.
func prefill(b testing.TB, store *badgerstore.Store, convs, turns int) {
	b.Helper()
	var counter tokens.Counter
	user := []byte(`{"role":"user","content":"` + benchUser + `"}`)
	answer := []byte(`{"role":"assistant","content":"` + strings.Repeat("The trend holds. ", 12) + `"}`)
	ut, at := counter.Message(tokens.O200k, user), counter.Message(tokens.O200k, answer)
	ns := auth.Namespace("default", "sk-bench")
	for c := range convs {
		k := history.Key{Tenant: ns, Conversation: fmt.Sprintf("conv-%d", c)}
		var version uint64
		for t := 0; t < turns; t += 50 {
			var ch history.Change
			for range min(50, turns-t) {
				ch.Append = append(ch.Append,
					history.Message{Role: "user", Raw: user, Tokens: ut, Hash: chat.Hash(user) + uint64(t)},
					history.Message{Role: "assistant", Raw: answer, Tokens: at, Hash: chat.Hash(answer) + uint64(t)})
			}
			ch.Version, ch.Now = version, time.Now().UnixNano()
			m, err := store.Commit(context.Background(), k, ch)
			if err != nil {
				b.Fatal(err)
			}
			version = m.Version
		}
	}
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
			prefill(b, store, 64, 50)
			runChat(b, srv, 64)
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
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	defer func() { b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op") }()
	for i := 0; i < b.N; i++ {
		rc := reqs[i%len(reqs)]
		rc.Response.Reset()
		srv.Handle(rc)
		if err := rc.Response.BodyWriteTo(io.Discard); err != nil {
			b.Fatal(err)
		}
		if rc.Response.StatusCode() != 200 {
			b.Fatalf("status %d: %s", rc.Response.StatusCode(), rc.Response.Body())
		}
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
			prefill(b, store, 64, 50)
			runChat(b, srv, 64)
		})
	}
}
