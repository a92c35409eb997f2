package proxy_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/tokens"
	"github.com/recallproxy/recall/wire"
)

// fairnessWords are the vocabulary of the searched tenant's messages:
// common words, so that each term of a query has thousands of postings.
var fairnessWords = strings.Fields(`the report shows that our team will need more time to finish
the budget review because several invoices from last quarter are still missing and the
forecast depends on them please check with finance whether the numbers for march april
and may were updated in the shared sheet also remember the meeting with the client on
friday where we present the new plan for deployment of the service in lisbon and berlin
weather permitting travel is booked for thursday morning with a return on sunday evening`)

// BenchmarkChatBesideSearchFlood measures what one tenant's search flood
// does to another tenant's chat latency, over real HTTP on loopback:
// tenant B's closed-loop chat requests alone, then beside 8 clients of
// tenant A each sending 30-term searches back to back over 1,000
// conversations of 20 messages. It reports B's chat p50 and p99 for both
// phases, and A's searches answered and refused. Run it once:
//
//	go test ./proxy -run '^$' -bench ChatBesideSearchFlood -benchtime 1x
//
// Timings are reported, never asserted.
func BenchmarkChatBesideSearchFlood(b *testing.B) {
	const (
		convs, perConv = 1000, 20
		searchers      = 8
		queryTerms     = 30
		phase          = 5 * time.Second
	)
	srv, store := benchServer(b, 16000)
	prefill(b, store, 64, 50) // tenant B: sk-bench
	// Tenant A: sk-flood, another namespace of the pass-through tenant.
	ns := auth.Namespace("default", "sk-flood")
	rng := rand.New(rand.NewPCG(1, 2))
	var counter tokens.Counter
	for c := range convs {
		msgs := make([]history.Message, perConv)
		for j := range msgs {
			role := wire.RoleUser
			if j%2 == 1 {
				role = wire.RoleAssistant
			}
			words := make([]string, 40)
			for w := range words {
				words[w] = fairnessWords[rng.IntN(len(fairnessWords))]
			}
			raw := []byte(`{"role":"` + role + `","content":"` + strings.Join(words, " ") + `"}`)
			msgs[j] = history.Message{Role: role, Raw: raw, Tokens: counter.Message(tokens.O200k, raw), Hash: chat.Hash(raw)}
		}
		k := history.Key{Tenant: ns, Conversation: fmt.Sprintf("a-%d", c)}
		if _, err := store.Commit(context.Background(), k, history.Change{Append: msgs, Now: time.Now().UnixNano()}); err != nil {
			b.Fatal(err)
		}
	}
	if err := store.Fold(); err != nil { // index everything before measuring
		b.Fatal(err)
	}
	distinct := slices.Compact(slices.Sorted(slices.Values(fairnessWords)))
	query := url.QueryEscape(strings.Join(distinct[:queryTerms], " "))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Shutdown(context.Background()) })
	client := &fasthttp.HostClient{Addr: ln.Addr().String(), MaxConns: 64}
	addr := "http://" + ln.Addr().String()

	// chat runs B's closed loop for d and returns its latencies.
	chat := func(d time.Duration) []time.Duration {
		var lat []time.Duration
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		end := time.Now().Add(d)
		for i := 0; time.Now().Before(end); i++ {
			req.Reset()
			req.Header.SetMethod("POST")
			req.SetRequestURI(addr + "/v1/chat/completions")
			req.Header.Set("Authorization", "Bearer sk-bench")
			req.Header.Set("X-Conversation-ID", fmt.Sprintf("conv-%d", i%64))
			req.Header.SetContentType("application/json")
			req.SetBodyString(`{"model":"gpt-4o","messages":[{"role":"system","content":"You are a careful analyst. Answer briefly."},{"role":"user","content":"` + benchUser + `"}]}`)
			start := time.Now()
			if err := client.Do(req, resp); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
			if resp.StatusCode() != 200 {
				b.Fatalf("chat: %d %s", resp.StatusCode(), resp.Body())
			}
		}
		return lat
	}
	report := func(name string, lat []time.Duration) {
		slices.Sort(lat)
		p := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))]) / 1e6 }
		b.ReportMetric(p(0.50), name+"-p50-ms")
		b.ReportMetric(p(0.99), name+"-p99-ms")
		b.Logf("%s: %d chat requests, p50 %.2f ms, p99 %.2f ms, max %.2f ms", name, len(lat), p(0.50), p(0.99), p(1))
	}

	chat(time.Second) // warm up
	report("idle", chat(phase))

	var answered, refused, other atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range searchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			for {
				select {
				case <-stop:
					return
				default:
				}
				req.Reset()
				req.SetRequestURI(addr + "/recall/v1/search?limit=20&q=" + query)
				req.Header.Set("Authorization", "Bearer sk-flood")
				if err := client.Do(req, resp); err != nil {
					other.Add(1)
					continue
				}
				switch resp.StatusCode() {
				case 200:
					answered.Add(1)
				case 429:
					refused.Add(1)
					// A well-behaved client waits as told; a flood
					// retries at once, which is the case measured.
				default:
					other.Add(1)
				}
			}
		}()
	}
	lat := chat(phase)
	close(stop)
	wg.Wait()
	report("flood", lat)
	b.ReportMetric(float64(answered.Load()), "searches-answered")
	b.ReportMetric(float64(refused.Load()), "searches-429")
	b.Logf("flood: %d searches answered, %d refused with 429, %d other", answered.Load(), refused.Load(), other.Load())
}
