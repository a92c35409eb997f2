package proxy_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/proxy"
)

// An exchange gives its plan's array back once it is done, streamed or
// not (plan.Plan.Release), and the next plan lays its messages out in
// it: once warm, laying out a plan allocates next to nothing, where it
// allocated an array of the window's size on every request (some 450
// messages, 33 KB, over BenchmarkChatPath50's window). Measured in the
// memory profile's bytes allocated under plan's layout, every
// allocation sampled.
func TestChatAllocPlansReuseTheirArrays(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops items at random: counts mean nothing")
	}
	for _, up := range []instantUpstream{{"application/json", []byte(benchAnswer)}, {"text/event-stream", benchStream()}} {
		t.Run(up.contentType, func(t *testing.T) {
			recs := make(chan history.ExchangeRecord, 1)
			srv, store := benchServerWith(t, 16000, up, append(windowCaches[0].adjust, func(c *proxy.Config) { // recall serve's cache
				c.OnExchange = func(_ history.Key, r history.ExchangeRecord) { recs <- r }
			})...)
			const convs, runs = 8, 200
			prefill(t, store, convs, 50)
			reqs := make([]*fasthttp.RequestCtx, convs)
			for i := range reqs {
				reqs[i] = benchRequest(fmt.Sprintf("conv-%d", i))
			}
			messages := 0 // the plans' messages, all requests
			serve := func(i int) {
				serveOK(t, srv, reqs[i%convs])
				select {
				case r := <-recs: // the exchange is done: its plan went back
					messages += r.NewMessages
					for _, sp := range r.Included {
						messages += int(sp.To-sp.From) + 1
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("request %d: no record", i)
				}
			}
			defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
			runtime.MemProfileRate = 1
			for i := range convs { // warm: each conversation's cache entry
				serve(i)
			}
			before := layoutBytes()
			messages = 0
			for i := range runs {
				serve(i)
			}
			laid := layoutBytes() - before
			t.Logf("%d bytes allocated laying out %d requests' plans", laid, runs)
			// A plan's message is 72 bytes, and the instructions are left
			// out of the count; a pool emptied by a collection, or a
			// conversation that outgrew the arrays at hand, costs one.
			if floor := int64(messages) * 72; laid > floor/10 {
				t.Errorf("laying out %d plans allocated %d bytes, a tenth of what they hold (%d) allowed", runs, laid, floor)
			}
		})
	}
}

// layoutBytes is the bytes allocated so far, as the memory profile has
// them after a collection, under plan's layout of a plan's messages.
func layoutBytes() int64 {
	runtime.GC()
	n, _ := runtime.MemProfile(nil, true)
	recs := make([]runtime.MemProfileRecord, n+64)
	n, _ = runtime.MemProfile(recs, true)
	var sum int64
	for _, r := range recs[:n] {
		frames := runtime.CallersFrames(r.Stack())
		for {
			f, more := frames.Next()
			if f.Function == "github.com/recallproxy/recall/plan.(*maker).lay" {
				sum += r.AllocBytes
				break
			}
			if !more {
				break
			}
		}
	}
	return sum
}

// The exchange's record, written at its end, reads the plan it sent
// (inspect.Fill): the plan's array goes back only after, streamed or not.
func TestExchangeRecordReadsItsPlanBeforeTheRelease(t *testing.T) {
	for _, up := range []instantUpstream{{"application/json", []byte(benchAnswer)}, {"text/event-stream", benchStream()}} {
		t.Run(up.contentType, func(t *testing.T) {
			recs := make(chan history.ExchangeRecord, 3) // a stream's comes from its relay
			srv, store := benchServerWith(t, 16000, up, func(c *proxy.Config) {
				c.OnExchange = func(_ history.Key, r history.ExchangeRecord) { recs <- r }
			})
			prefill(t, store, 1, 50)
			rc := benchRequest("conv-0")
			for i := range 3 {
				serveOK(t, srv, rc)
				var r history.ExchangeRecord
				select {
				case r = <-recs:
				case <-time.After(10 * time.Second):
					t.Fatalf("request %d: no record", i)
				}
				if r.Tokens.History == 0 || len(r.Included) == 0 || r.NewMessages != 1 {
					t.Errorf("record %d: history tokens %d, included %v, new messages %d; want the plan's", i, r.Tokens.History, r.Included, r.NewMessages)
				}
			}
		})
	}
}
